/*
 * zipmethod.h - the compression methods of zip members that zipread
 * decodes whole, chosen from a table by the member's method number:
 * bzip2 (12, libbz2), LZMA (14, liblzma's raw LZMA1 decoder after the
 * zip's 4-byte header and properties), zstd (93, libzstd) and xz (95,
 * liblzma).  Not deflate (8): zipread inflates it with the codec layer's
 * inflater (io/zsource.h zsource_inflate_whole), the one its large
 * members' spans use.  Each row is a decoder state stepped
 * over buffers; zipread.c drives it, bounds its output by the declared
 * size and checks the CRC-32.
 *
 * Not for: reading the zip, sizes, CRCs or memory bounds (zipread.c),
 * random access into large members (io/zsource.h), deflate.
 */
#ifndef SFS_ZIPMETHOD_H
#define SFS_ZIPMETHOD_H

#include <stddef.h>
#include <stdint.h>

enum zstep {
	ZSTEP_MORE,     /* made what progress it could: call again */
	ZSTEP_END,      /* the stream ended */
	ZSTEP_BAD,      /* corrupt data (*why says how) */
};

struct zmethod {
	uint16_t id;            /* the zip method number */
	const char *name;
	/* 1: the stream may have no end marker (LZMA without EOS, flag bit
	 * 1 clear): it ends when the declared size is out and the input is
	 * all used */
	int sizeless;
	/*
	 * A decoder for a member's data, whose first n bytes are head
	 * (LZMA reads its properties there: *skip bytes of them are the
	 * method's header, not the stream) and which declares usize bytes
	 * (LZMA's dictionary is not made larger).  0, -ENOMEM, or -EBADMSG
	 * (a bad header: *why).
	 */
	int (*open)(void **st, const uint8_t *head, size_t n, uint64_t usize,
		    size_t *skip, const char **why);
	/* Decodes from *in (*inlen bytes) into *out (*outlen bytes of room),
	 * advancing both; `last`: no input follows this. */
	enum zstep (*step)(void *st, const uint8_t **in, size_t *inlen,
			   uint8_t **out, size_t *outlen, int last,
			   const char **why);
	void (*close)(void *st);
};

/* The row for zip method `id`, or NULL when it is not one of these. */
const struct zmethod *zmethod_find(uint16_t id);

#endif
