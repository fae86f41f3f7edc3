/*
 * vtar.h - virtual WebDataset tar shards, generated on demand.
 *
 * A shard is a list of samples; sample i becomes two members, written the
 * way webdataset's TarWriter writes them (keys in sorted order):
 *   <stem>.cls   the label in decimal ASCII, no newline (str(label))
 *   <stem>.jpg   the sample's bytes, as they are
 * or, where the entry names them, another extension than .jpg and a second
 * data member after it (Quick, Draw!'s <gidx>.npy and <gidx>.strokes.npy).
 * Headers are POSIX ustar: mode 0444, uid/gid 0, empty uname/gname, the
 * shard's fixed mtime, typeflag '0'.  Member names longer than 100 bytes
 * get a pax 'x' header with a path record (the ustar prefix field only
 * helps at a '/', and stems have none).  Data is padded to 512 bytes; the
 * archive ends with two zero blocks, padded to a 10240-byte record as
 * Python's tarfile and GNU tar do.
 *
 * Sizes and offsets are computed from (stem length, data size, label)
 * alone, so a shard's size is known without reading any data, and any byte
 * range can be produced: headers are synthesised, data comes from the
 * caller's pread.  Nothing is allocated per read.
 *
 * Not for: reading tars (tar.h), choosing shard contents (the layout).
 */
#ifndef SFS_VTAR_H
#define SFS_VTAR_H

#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "io/source.h"

#define VTAR_BLOCK 512
#define VTAR_RECORD 10240
#define VTAR_STEM_MAX 1024	/* longer stems are the caller's to refuse */

struct vtar_entry {
	const char *stem;	/* key, without extension; no '\0' inside */
	size_t stem_len;
	uint64_t size;		/* bytes of <stem><ext> */
	uint32_t label;
	/* the data member's extension, dot included (at most VTAR_EXT_MAX
	 * bytes); NULL: ".jpg" */
	const char *ext;
	/* a second data member <stem><ext2> of size2 bytes, after the
	 * first (its extension sorting after ext); NULL: none */
	const char *ext2;
	uint64_t size2;
};
#define VTAR_EXT_MAX 16

/*
 * The caller's view of one shard.  Callbacks return 0 / a byte count or a
 * negative errno, which vtar_read passes on.  `offset(i)` must equal the
 * sum of vtar_sample_size over entries 0..i-1 (i may be n); callers
 * typically keep sparse prefix sums and add the rest.
 */
struct vtar_shard {
	uint64_t n;
	int64_t mtime;
	void *arg;
	int (*entry)(void *arg, uint64_t i, struct vtar_entry *e);
	int (*offset)(void *arg, uint64_t i, uint64_t *off);
	/* bytes of sample i's data member `part` (0: <ext>, 1: <ext2>) */
	ssize_t (*pread)(void *arg, uint64_t i, unsigned part, void *buf, size_t len,
			 uint64_t off);
	/* optional: the sample holding offset off (< the body) and its
	 * offset, where the caller knows a quicker way than vtar_read's
	 * binary search over offset() (NULL: that search) */
	int (*find)(void *arg, uint64_t off, uint64_t *i, uint64_t *start);
	/* optional: where sample i's data member `part` lies in a source with
	 * a descriptor, unchanged since mounting (the caller checked), so that
	 * vtar_read_spans may give it as a span to splice: 0 and *src, *off
	 * (the source offset of the member's byte 0); -ENOTSUP (read it
	 * through pread); -EIO (the source changed) */
	int (*in_place)(void *arg, uint64_t i, unsigned part, struct source **src,
			uint64_t *off);
	/* optional: called once a read's members are read (pread) or given
	 * as spans (in_place), before vtar_read_spans returns them: 0, or
	 * -EIO when a source they came from changed (nothing of the read may
	 * be served).  Lets the caller check its sources once a read, not
	 * once a member; without it, pread and in_place must check. */
	int (*check)(void *arg);
};

/* Bytes that sample (stem_len, size, label) occupies in a shard. */
uint64_t vtar_sample_size(size_t stem_len, uint64_t size, uint32_t label);
/* The same for any entry (its extensions, a second member). */
uint64_t vtar_entry_size(const struct vtar_entry *e);
/* Archive size for `body` bytes of samples: end blocks and record padding. */
uint64_t vtar_archive_size(uint64_t body);
/* Exact size of the shard, or -errno from the offset callback. */
int vtar_size(const struct vtar_shard *s, uint64_t *size);

/* Up to len bytes at off: count (short only at the end) or -errno. */
ssize_t vtar_read(const struct vtar_shard *s, char *buf, size_t len, uint64_t off);

/*
 * vtar_read's bytes as spans (source.h) for a reply that splices: members
 * in place of `min` bytes or more come as ranges of their sources, not
 * read, when they are half the reply or more (else a copy costs less);
 * every other byte (headers, padding, the other members: those in place
 * read at once, as vtar_read reads them) is written to buf at its offset
 * in the reply.  At most `max` spans; past that, members are read into buf
 * too.  Sets *n; returns what vtar_read returns, or -EINVAL when max is 0.
 */
#define VTAR_SPAN_MIN 4096	/* a span worth a splice */
struct vtar_spans {
	struct source_span *sp;
	unsigned max, n;
	size_t min;		/* bytes of a member given as a span, at least */
};
ssize_t vtar_read_spans(const struct vtar_shard *s, char *buf, size_t len, uint64_t off,
			struct vtar_spans *o);

#endif
