/*
 * opts.c - parses SOURCE and the samplefs -o options (see opts.h).
 *
 * Each option is one row of `table`: its name, how its value is parsed,
 * where it goes in struct sfs_opts, where it applies and its help; libfuse's
 * templates, --help and the checks of where an option applies are made
 * from the rows (the man page, the completion and docs/options.md are
 * checked against --help by tests/integration/test_docs.sh).  Values are checked strictly (no
 * trailing junk, no overflow) so a typo fails the mount instead of meaning
 * something else.  Unknown options are left for libfuse, which rejects
 * those it does not know either.
 */
#include "opts.h"
#include "io/codecs/zsource.h"
#include "layouts/layouts.h"
#include "log.h"
#include "readahead.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum kind { T_STR, T_U32, T_U64, T_SIZE, T_FLAG, T_IMAGE, T_SPLIT, T_SEED, T_RDPLUS,
	    T_POS, T_POSSIZE,	/* T_POS, T_POSSIZE: as T_U32, T_SIZE, not 0 */
	    T_FILE,		/* a readable file, kept as its realpath */
	    T_FILE_URL,		/* a URL as given, or a path made absolute */
	    T_ADDR,		/* path|virtual: 1|2 */
	    T_SPAN };		/* T_POSSIZE from ZSOURCE_SPAN_MIN to _MAX */

/* Where an option means something: any source, URL sources only (buckets
 * included), buckets only (s3://, gs://), or compressed data only (the
 * SOURCE, or members of a tar: known once the layout is open).
 * Which layouts take an option is the layout table's to say
 * (layout_kinds): one that some layout names is refused for the others,
 * as a silently ignored option is a surprise later. */
/* S_DISK: URLs, and archives decompressed once into the disk cache
 * (io/codecs/arxsource.h), which count as decompressed sources */
enum scope { S_ANY, S_URL, S_BUCKET, S_Z, S_DISK };

struct opt_row {
	const char *name;	/* without '=' */
	enum kind kind;
	size_t off;		/* into struct fs_opts */
	enum scope scope;
	const char *metavar;	/* for --help */
	const char *help;
};

#define O(f) offsetof(struct fs_opts, core.f)
#define D(f) offsetof(struct fs_opts, f)
static const struct opt_row table[] = {
	{"layout", T_STR, O(layout), S_ANY, "NAME", "one of the layouts below (default: detect from SOURCE)"},
	{"index_dir", T_STR, O(index_dir), S_ANY, "DIR", "where indexes live (default ~/.cache/samplefs; npy has none)"},
	{"cache_mem", T_POSSIZE, O(remote.cache_bytes), S_ANY, "SIZE", "memory for every cache of the mount: fetched blocks, inflated spans, stroke blocks, small zip members (default 64M)"},
	{"quiet", T_FLAG, O(quiet), S_ANY, NULL, "no progress bar"},
	{"classes", T_STR, O(classes_file), S_ANY, "FILE", "file listing the classes to serve, in label order"},
	{"per_class", T_U64, O(per_class), S_ANY, "N", "samples per class (quickdraw), rows per array (npy); 0 = all"},
	{"image", T_IMAGE, O(image_uint8), S_ANY, "TYPE", "uint8|float32 (default float32)"},
	{"stroke_len", T_U32, O(stroke_len), S_ANY, "N", "points per stroke file (default 130)"},
	{"seed", T_U32, O(seed), S_ANY, "N", "split seed (default 42)"},
	{"split", T_SPLIT, O(split), S_ANY, "A/B/C", "train/valid/test percent (default 80/10/10)"},
	{"recursive", T_U32, O(recursive), S_ANY, "N", "nested tar levels to expand (default 1)"},
	{"checksums", T_FLAG, O(checksums), S_ANY, NULL, "index every member's CRC32C (reading all its bytes) and check reads against it"},
	{"shard_size", T_U64, O(shard_size), S_ANY, "N", "samples per shard (default 10000)"},
	{"shard_seed", T_SEED, O(shard_seed), S_ANY, "N", "shuffle samples into shards with this seed; seeds /epochs (default 0)"},
	{"shuffle_seed", T_U32, O(shuffle_seed), S_ANY, "N", "order of shuffled/<split>.txt (default 0)"},
	{"poll", T_U32, D(poll_us), S_ANY, "USEC", "poll /dev/fuse this long before sleeping (default 50, 0 = libfuse's loop)"},
	{"workers", T_U32, D(workers), S_ANY, "N", "with poll: threads for reads that wait for the disk or network (default 4, 16 for URLs)"},
	{"sessions", T_U32, D(sessions), S_ANY, "N", "with poll: threads reading /dev/fuse, each with its own clone of it (default 1 per 8 CPUs, 1 to 16)"},
	{"readdirplus", T_RDPLUS, D(readdirplus), S_ANY, "auto|always|adaptive", "listings with attributes (default: always for quickdraw and npy, else adaptive)"},
	{"fsname", T_STR, D(fsname), S_ANY, "NAME", "first field of /proc/mounts and df (default: SOURCE)"},
	{"log", T_STR, D(log_file), S_ANY, "FILE", "append messages to FILE too, with a timestamp (default: stderr, syslog once in the background)"},
	{"stack", T_FLAG, D(stack), S_ANY, NULL, "mount even where something is mounted already"},
	{"timeout", T_POS, O(remote.timeout_s), S_URL, "SECONDS", "connect timeout, and a transfer below 1 KiB/s this long fails (default 30)"},
	{"retries", T_POS, O(remote.retries), S_URL, "N", "retries (1 or more) of a failed request, with backoff, before EIO (default 5)"},
	{"cacert", T_FILE, O(remote.cacert), S_URL, "FILE", "https: CA certificates to verify servers with (default: the system's)"},
	{"insecure", T_FLAG, O(remote.insecure), S_URL, NULL, "https: do not verify servers' certificates"},
	{"cache_dir", T_STR, O(remote.cache_dir), S_DISK, "DIR", "keep fetched blocks in DIR too, across mounts; and archives decompressed once (7z, rar...)"},
	{"cache_dir_size", T_POSSIZE, O(remote.cache_dir_bytes), S_DISK, "SIZE", "bound of cache_dir, and of an archive decompressed once (default 1G)"},
	{"read_timeout", T_POS, O(remote.read_timeout_s), S_URL, "SECONDS", "one read, its retries and waits included, gives EIO after this long (default 2 x timeout)"},
	{"index", T_FILE_URL, O(index), S_ANY, "PATH|URL", "a prebuilt index (samplefs-inspect --save-index), fetched into index_dir when it has none"},
	{"index_only", T_FLAG, O(index_only), S_ANY, NULL, "never build an index: fail the mount when none fits (missing, stale)"},
	/* no option takes a secret: /proc/PID/cmdline is anyone's to read */
	{"endpoint", T_STR, O(remote.endpoint), S_BUCKET, "URL", "the store (default: AWS_ENDPOINT_URL, else AWS S3; gs://: https://storage.googleapis.com)"},
	{"region", T_STR, O(remote.region), S_BUCKET, "NAME", "S3 region signed for (default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1)"},
	{"addressing", T_ADDR, O(remote.addressing), S_BUCKET, "path|virtual", "S3: bucket in the path or the host name (default: path with endpoint=, else virtual)"},
	{"profile", T_STR, O(remote.profile), S_BUCKET, "NAME", "profile in ~/.aws/credentials, used over AWS_ACCESS_KEY_ID (default: those keys, else AWS_PROFILE, else default)"},
	{"anonymous", T_FLAG, O(remote.anonymous), S_BUCKET, NULL, "unsigned requests, even with credentials at hand"},
	{"max_keys", T_POS, O(remote.max_keys), S_BUCKET, "N", "keys per listing request (default and most 1000)"},
	{"images", T_FILE_URL, O(images_dir), S_ANY, "DIR", "the class .npy files' directory, prefix or URL (default SOURCE/numpy_bitmap)"},
	{"strokes", T_FILE_URL, O(strokes_dir), S_ANY, "DIR", "the class .npz files' directory, prefix or URL (default SOURCE/sketchrnn)"},
	{"build_timeout", T_POS, O(remote.build_timeout_s), S_URL, "SECONDS", "an index build retries a failing range with backoff this long before it fails (default 600)"},
	/* compressed sources, local or remote (core/io/codecs/zsource.h) */
	{"span", T_SPAN, O(remote.span_bytes), S_Z, "SIZE", "uncompressed bytes between access points, 64k to 64M (default 1M)"},
	{"readahead", T_U32, D(readahead_kib), S_ANY, "KIB", "read ahead this many KiB of a file read in order (default 1024 as root, else the kernel's 128; 0 = the kernel's)"},
	{"shard_prefetch", T_SIZE, O(shard_prefetch), S_ANY, "SIZE", "bytes of a streamed shard's members fetched ahead of its reader (default 32M, 0 = off)"},
};
#undef O
#undef D
#define NROWS (sizeof(table) / sizeof(table[0]))
_Static_assert(NROWS <= 64, "struct fs_opts.given has one bit per row");

/* mount(8) and fstab options that reach us through mount.fuse3 and that
 * libfuse does not take itself (it does rw/ro, [no]dev, [no]suid,
 * [no]exec, [no]atime, sync/async, dirsync): meaningless for a read-only
 * FUSE mount, so an fstab line written as for any file system mounts */
static const char *const ignored[] = {
	"defaults", "nofail", "noauto", "auto", "user", "nouser", "users",
	"owner", "group", "_netdev", "diratime", "nodiratime", "relatime",
	"norelatime", "strictatime", "nostrictatime", "lazytime", "nolazytime",
	"iversion", "noiversion", "mand", "nomand", "silent", "loud",
};

/* libfuse's templates, made from the table so that each option's name is
 * written once: "name=" for a value, "name" for a flag; key = row. */
#define TEMPLATE_MAX 32
struct templates {
	struct fuse_opt opt[NROWS + 1];
	char text[NROWS][TEMPLATE_MAX];
};

static void make_templates(struct templates *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));	/* the last: FUSE_OPT_END */
	for (i = 0; i < NROWS; i++) {
		snprintf(t->text[i], TEMPLATE_MAX, "%s%s", table[i].name,
			 table[i].kind == T_FLAG ? "" : "=");
		t->opt[i] = (struct fuse_opt)FUSE_OPT_KEY(t->text[i], (int)i);
	}
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "80/10/10": three percentages adding up to 100.  -EDOM, said here,
 * when they do not. */
static int parse_split(const char *val, uint32_t *split)
{
	const char *s = val;
	char part[8];
	uint64_t v[3];
	size_t len;
	int i;

	for (i = 0; i < 3; i++) {
		len = strcspn(s, "/");
		if (len >= sizeof(part) || (i < 2) != (s[len] == '/'))
			return -EINVAL;
		memcpy(part, s, len);
		part[len] = '\0';
		if (parse_u64(part, 100, &v[i]))
			return -EINVAL;
		s += len + (i < 2);
	}
	if (v[0] + v[1] + v[2] != 100) {
		sfs_err("-o split=%s: train/valid/test percentages add up to %llu, not 100",
			val, (unsigned long long)(v[0] + v[1] + v[2]));
		return -EDOM;
	}
	for (i = 0; i < 3; i++)
		split[i] = (uint32_t)v[i];
	return 0;
}

/* A file that must be there when the mount needs it, made absolute (the
 * daemon runs in /) and opened once now through core/io, as a source would
 * be: -EDOM, said here, when it cannot be read. */
static int set_file(const struct opt_row *r, const char *val, char **field)
{
	struct source *src;
	char *abs;
	int rc;

	if (!*val || source_is_url(val))
		return -EINVAL;
	if (!(abs = source_resolve(val))) {
		sfs_err("-o %s=%s: %s", r->name, val, strerror(errno));
		return -EDOM;
	}
	if ((rc = source_open(NULL, abs, &src)) < 0) {
		sfs_err("-o %s=%s: %s", r->name, val, strerror(-rc));
		free(abs);
		return -EDOM;
	}
	source_close(src);
	free(*field);
	*field = abs;
	return 0;
}

/* A URL as given, or a path made absolute (the daemon runs in /) but not
 * opened: one that is missing when the mount needs it is said then. */
static int set_file_url(const char *val, char **field)
{
	char cwd[PATH_MAX], *s;
	int n;

	if (!*val)
		return -EINVAL;
	if (source_is_url(val) || val[0] == '/')
		n = (s = strdup(val)) ? 0 : -1;
	else if (!getcwd(cwd, sizeof(cwd)))
		return -errno;
	else
		n = asprintf(&s, "%s/%s", cwd, val);
	if (n < 0)
		return -ENOMEM;
	free(*field);
	*field = s;
	return 0;
}

static int set_value(const struct opt_row *r, const char *val, struct fs_opts *o)
{
	char *field = (char *)o + r->off;
	uint64_t v;
	char *s;

	switch (r->kind) {
	case T_STR:
		if (!*val || !(s = strdup(val)))
			return -EINVAL;
		free(*(char **)field);
		*(char **)field = s;
		return 0;
	case T_U32:
	case T_SEED:
	case T_POS:
		if (parse_u64(val, UINT32_MAX, &v) || (r->kind == T_POS && !v))
			return -EINVAL;
		*(uint32_t *)field = (uint32_t)v;
		if (r->kind == T_SEED)
			o->core.has_shard_seed = 1;
		return 0;
	case T_U64:
		if (parse_u64(val, UINT64_MAX, &v))
			return -EINVAL;
		*(uint64_t *)field = v;
		return 0;
	case T_SIZE:
		return sfs_parse_size(val, (uint64_t *)field);
	case T_POSSIZE:
	case T_SPAN:
		if (sfs_parse_size(val, &v) || !v)
			return -EINVAL;
		if (r->kind == T_SPAN && (v < ZSOURCE_SPAN_MIN || v > ZSOURCE_SPAN_MAX)) {
			sfs_err("-o %s=%s: %llu bytes; must be from 64k (%llu) to 64M "
				"(%llu) bytes", r->name, val, (unsigned long long)v,
				(unsigned long long)ZSOURCE_SPAN_MIN,
				(unsigned long long)ZSOURCE_SPAN_MAX);
			return -EDOM;
		}
		*(uint64_t *)field = v;
		return 0;
	case T_FLAG:
		*(int *)field = 1;
		return 0;
	case T_IMAGE:
		if (strcmp(val, "uint8") && strcmp(val, "float32"))
			return -EINVAL;
		*(int *)field = !strcmp(val, "uint8");
		return 0;
	case T_SPLIT:
		return parse_split(val, (uint32_t *)field);
	case T_FILE:
		return set_file(r, val, (char **)field);
	case T_FILE_URL:
		return set_file_url(val, (char **)field);
	case T_RDPLUS:
		if (!strcmp(val, "auto"))
			*(int *)field = RDPLUS_AUTO;
		else if (!strcmp(val, "always"))
			*(int *)field = RDPLUS_ALWAYS;
		else if (!strcmp(val, "adaptive"))
			*(int *)field = RDPLUS_ADAPTIVE;
		else
			return -EINVAL;
		return 0;
	case T_ADDR:
		if (strcmp(val, "path") && strcmp(val, "virtual"))
			return -EINVAL;
		*(int *)field = !strcmp(val, "path") ? 1 : 2;
		return 0;
	}
	return -EINVAL;
}

static int is_ignored(const char *arg)
{
	size_t i;

	if (!strncmp(arg, "x-", 2) || !strncmp(arg, "comment=", 8))
		return 1;
	for (i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		if (!strcmp(arg, ignored[i]))
			return 1;
	return 0;
}

/*
 * The old names of cache_mem= (each cache had a budget of its own until
 * one pool held them all): still taken, with a warning, for one release.
 * Sizes given under old names add up (they were separate budgets), unless
 * cache_mem= itself is given.  1 if arg was one, -1 on a bad value.
 */
static int old_cache_name(struct fs_opts *o, const char *arg)
{
	static const char *const old[] = { "cache=", "span_cache=" };
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(old) / sizeof(*old); i++) {
		if (strncmp(arg, old[i], strlen(old[i])))
			continue;
		if (sfs_parse_size(arg + strlen(old[i]), &v) < 0 || !v) {
			sfs_err("bad value in -o %s: expected %sSIZE, e.g. 64M", arg,
				old[i]);
			return -1;
		}
		sfs_warn("-o %s: every cache of a mount now shares one budget, "
			 "cache_mem=; taken as part of it (the old name goes in "
			 "the next release)", arg);
		o->old_cache_bytes += v;
		return 1;
	}
	return 0;
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	struct fs_opts *o = data;
	const struct opt_row *r;
	const char *eq;
	int rc;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT) {
		if (o->core.source) {	/* the mountpoint: libfuse's too */
			free(o->mountpoint);
			o->mountpoint = strdup(arg);
			return o->mountpoint ? 1 : -1;
		}
		o->core.source = strdup(arg);
		return o->core.source ? 0 : -1;
	}
	/* libfuse takes max_read but fails the mount's first request unless
	 * init() repeats it; samplefs answers reads of any size anyway */
	if (key == FUSE_OPT_KEY_OPT && !strncmp(arg, "max_read=", 9)) {
		sfs_err("-o %s: not supported (the kernel's read size is used)", arg);
		return -1;
	}
	if (key == FUSE_OPT_KEY_OPT && (rc = old_cache_name(o, arg)) != 0)
		return rc < 0 ? -1 : 0;
	if (key == FUSE_OPT_KEY_OPT)
		return is_ignored(arg) ? 0 : 1;
	r = &table[key];
	eq = strchr(arg, '=');
	rc = set_value(r, eq ? eq + 1 : "", o);
	if (rc == -EDOM)
		return -1;	/* the value was well formed; what is wrong is said */
	if (rc) {
		sfs_err("bad value in -o %s: expected %s=%s; %s", arg, r->name,
			r->metavar ? r->metavar : "", r->help);
		return -1;
	}
	o->given |= 1ull << key;
	return 0;
}

static void defaults(struct fs_opts *o)
{
	memset(o, 0, sizeof(*o));
	sfs_opts_default(&o->core);
	o->poll_us = 50;
	o->workers = WORKERS_LOCAL;
}

/* Whether option `name` was given. */
static int given(const struct fs_opts *o, const char *name)
{
	size_t i;

	for (i = 0; i < NROWS; i++)
		if (!strcmp(table[i].name, name))
			return (int)(o->given >> i & 1);
	return 0;
}

/* One session thread per SESSIONS_PER_CPUS CPUs this process may run on,
 * 1 to SESSIONS_MAX (fs/opts.h). */
static uint32_t default_sessions(void)
{
	cpu_set_t set;
	int n = 1;

	if (sched_getaffinity(0, sizeof(set), &set) == 0)
		n = CPU_COUNT(&set);
	n /= SESSIONS_PER_CPUS;
	return n < 1 ? 1 : n > SESSIONS_MAX ? SESSIONS_MAX : (uint32_t)n;
}

int readahead_given(const struct fs_opts *o)
{
	return given(o, "readahead");
}

int sfs_opts_parse(struct fuse_args *args, struct fs_opts *o)
{
	struct templates t;

	defaults(o);
	make_templates(&t);
	if (fuse_opt_parse(args, o, t.opt, opt_proc))
		return -1;
	if (o->old_cache_bytes && !given(o, "cache_mem"))
		o->core.remote.cache_bytes = o->old_cache_bytes;
	/* a network read waits a round trip: more of them in flight */
	if (o->core.source && source_is_url(o->core.source) && !given(o, "workers"))
		o->workers = WORKERS_URL;
	/* only root may raise a mount's read-ahead (fs/readahead.h) */
	if (!given(o, "readahead"))
		o->readahead_kib = geteuid() == 0 ? READAHEAD_ROOT_KIB : 0;
	if (!given(o, "sessions"))
		o->sessions = default_sessions();
	if (o->sessions == 0 || o->sessions > SESSIONS_MAX) {
		/* each one holds a clone of /dev/fuse and a thread */
		sfs_err("-o sessions=%u: must be from 1 to %u", o->sessions, SESSIONS_MAX);
		return -1;
	}
	return 0;
}

int sfs_opts_absolute_source(struct sfs_opts *o)
{
	char *abs;
	int rc;

	if (source_is_url(o->source))
		return 0;
	if (strstr(o->source, "://")) {
		sfs_err("%s: not a URL samplefs reads (http://, https://, s3:// "
			"and gs:// are)",
			o->source);
		return -EPROTONOSUPPORT;
	}
	if (!(abs = source_resolve(o->source))) {
		rc = -errno;
		sfs_err("%s: %s", o->source, strerror(errno));
		return rc;
	}
	free((char *)o->source);
	o->source = abs;
	return 0;
}

void sfs_opts_free(struct fs_opts *o)
{
	size_t i;

	free((char *)o->core.source);
	free(o->mountpoint);
	o->mountpoint = NULL;
	for (i = 0; i < NROWS; i++)
		if (table[i].kind == T_STR || table[i].kind == T_FILE ||
		    table[i].kind == T_FILE_URL) {
			free(*(char **)((char *)o + table[i].off));
			*(char **)((char *)o + table[i].off) = NULL;
		}
	defaults(o);
}

/* Whether row r is an option only some layouts take (layout_kinds). */
static int layout_only(const struct opt_row *r)
{
	const struct layout_kind *k;

	for (k = layout_kinds; k->name; k++)
		if (layout_kind_takes(k, r->name))
			return 1;
	return 0;
}

int sfs_opts_check_data(const struct fs_opts *o, uint64_t decompressed)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < NROWS; i++) {
		if ((o->given >> i & 1) && table[i].scope == S_DISK && !decompressed &&
		    !source_is_url(o->core.source)) {
			sfs_err("-o %s applies to URL sources and to archives decompressed "
				"once (7-Zip, RAR, tars compressed with lz4, lzip, lzma, lzop "
				"or compress), and %s is neither", table[i].name,
				o->core.source);
			rc = -EINVAL;
		}
		if ((o->given >> i & 1) && table[i].scope == S_Z && !decompressed) {
			sfs_err("-o %s applies to compressed data only (gzip, xz, zstd, "
				"bzip2: the source, or members of a tar), and %s has none",
				table[i].name, o->core.source);
			rc = -EINVAL;
		}
	}
	return rc;
}

int sfs_opts_check_layout(struct fs_opts *o, const char *layout)
{
	const struct layout_kind *k = layout_kind(layout);
	int url = source_is_url(o->core.source), rc = 0;
	int bucket = source_is_bucket(o->core.source);
	const struct opt_row *r;
	size_t i;

	for (i = 0; i < NROWS; i++) {
		if (!(o->given >> i & 1))
			continue;
		r = &table[i];
		if (r->scope == S_URL && !url) {
			sfs_err("-o %s applies to URL sources only (http://, "
				"https://, s3://, gs://), not %s", r->name,
				o->core.source);
			rc = -EINVAL;
		} else if (r->scope == S_BUCKET && !bucket) {
			sfs_err("-o %s applies to bucket sources only (s3://, "
				"gs://), not %s", r->name, o->core.source);
			rc = -EINVAL;
		} else if (layout_only(r) && !(k && layout_kind_takes(k, r->name))) {
			sfs_err("-o %s does not apply to layout=%s (see --help for "
				"the options of each layout)", r->name, layout);
			rc = -EINVAL;
		}
	}
	if (rc == 0 && !o->core.layout && !(o->core.layout = strdup(layout)))
		rc = -ENOMEM;
	return rc;
}

static void help_row(const struct opt_row *r)
{
	char name[64];	/* the longest, readdirplus=auto|always|adaptive, whole */

	snprintf(name, sizeof(name), "%s%s%s", r->name, r->metavar ? "=" : "",
		 r->metavar ? r->metavar : "");
	printf("    -o %-20s %s\n", name, r->help);
}

void sfs_opts_help(void)
{
	const struct layout_kind *k;
	size_t i;

	printf("samplefs options, every layout:\n");
	for (i = 0; i < NROWS; i++)
		if (table[i].scope == S_ANY && !layout_only(&table[i]))
			help_row(&table[i]);
	printf("URL sources (http://, https://, s3://, gs://):\n");
	for (i = 0; i < NROWS; i++)
		if (table[i].scope == S_URL || table[i].scope == S_DISK)
			help_row(&table[i]);
	printf("Compressed data (gzip, xz, zstd, bzip2: the source, or members of a tar):\n");
	for (i = 0; i < NROWS; i++)
		if (table[i].scope == S_Z)
			help_row(&table[i]);
	printf("Bucket sources (s3://BUCKET/PREFIX/, gs://BUCKET/PREFIX/; "
	       "credentials from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/"
	       "AWS_SESSION_TOKEN or ~/.aws/credentials, GOOGLE_OAUTH_ACCESS_TOKEN):\n");
	for (i = 0; i < NROWS; i++)
		if (table[i].scope == S_BUCKET)
			help_row(&table[i]);
	for (k = layout_kinds; k->name; k++) {
		printf("%s (layout=%s):\n", k->title, k->name);
		for (i = 0; i < NROWS; i++)
			if (layout_kind_takes(k, table[i].name))
				help_row(&table[i]);
	}
	printf("An option given for a layout or a source it does not apply to "
	       "refuses the mount.\n\n");
}

/* A size as -o takes it: with k, M or G when a whole multiple. */
static void print_size(FILE *f, uint64_t v)
{
	static const char units[] = "kMG";
	int u = -1;

	while (u < 2 && v && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	fprintf(f, "%llu", (unsigned long long)v);
	if (u >= 0)
		fputc(units[u], f);
}

/* The value of row r in o, as -o would take it; NULL for an unset string. */
static void print_row(const struct opt_row *r, const struct fs_opts *o, FILE *f)
{
	const char *field = (const char *)o + r->off;
	static const char *const rdplus[] = { "by-layout", "auto", "always", "adaptive" };
	int i;

	switch (r->kind) {
	case T_STR: case T_FILE: case T_FILE_URL:
		fprintf(f, "%s", *(char *const *)field ? *(char *const *)field : "");
		break;
	case T_U32: case T_SEED: case T_POS:
		fprintf(f, "%u", *(const uint32_t *)field);
		break;
	case T_U64:
		fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)field);
		break;
	case T_SIZE: case T_POSSIZE: case T_SPAN:
		print_size(f, *(const uint64_t *)field);
		break;
	case T_FLAG:
		fprintf(f, "%d", *(const int *)field);
		break;
	case T_IMAGE:
		fprintf(f, "%s", *(const int *)field ? "uint8" : "float32");
		break;
	case T_SPLIT:
		fprintf(f, "%u/%u/%u", ((const uint32_t *)field)[0],
			((const uint32_t *)field)[1], ((const uint32_t *)field)[2]);
		break;
	case T_RDPLUS:
		i = *(const int *)field;
		fprintf(f, "%s", i >= 0 && i < 4 ? rdplus[i] : "?");
		break;
	case T_ADDR:
		i = *(const int *)field;
		fprintf(f, "%s", i == 1 ? "path" : i == 2 ? "virtual" : "default");
		break;
	}
}

/* Whether an option's value must not be shown (none takes a secret today:
 * this keeps one added later out of the control directory's config). */
static int secret_name(const char *name)
{
	return strstr(name, "secret") || strstr(name, "token") ||
	       strstr(name, "password");
}

/* Whether row r means something for this mount: its source's kind, its
 * layout (o->core.layout, set by sfs_opts_check_layout), its data. */
static int row_applies(const struct fs_opts *o, const struct opt_row *r,
		       uint64_t decompressed)
{
	const struct layout_kind *k = o->core.layout ? layout_kind(o->core.layout) : NULL;
	const char *src = o->core.source ? o->core.source : "";

	switch (r->scope) {
	case S_URL:
		return source_is_url(src);
	case S_BUCKET:
		return source_is_bucket(src);
	case S_Z:
		return decompressed > 0;
	case S_DISK:
		return source_is_url(src) || decompressed > 0;
	case S_ANY:
		break;
	}
	return !layout_only(r) || (k && layout_kind_takes(k, r->name));
}

void sfs_opts_print(const struct fs_opts *o, const struct layout *layout, FILE *f)
{
	const struct source_env *env = layout ? layout->env : NULL;
	uint64_t decompressed = env ? source_env_decompressed(env) : 0;
	struct fs_opts now = *o;	/* the values in force */
	size_t i;

	if (env)
		now.core.remote = *source_env_config(env);
	if (!now.core.remote.span_bytes)
		now.core.remote.span_bytes = ZSOURCE_SPAN_DEFAULT;
	if (!now.core.remote.cache_bytes)
		now.core.remote.cache_bytes = SOURCE_CACHE_DEFAULT;
	if (!now.fsname)
		now.fsname = (char *)o->core.source;
	if (now.readdirplus == RDPLUS_BY_LAYOUT && layout && layout->ops)
		now.readdirplus = layout->ops->listed_then_read ? RDPLUS_ALWAYS
								: RDPLUS_ADAPTIVE;
	fprintf(f, "source=%s\n", o->core.source ? o->core.source : "");
	for (i = 0; i < NROWS; i++) {
		if (!row_applies(o, &table[i], decompressed) ||
		    (table[i].kind == T_SEED && !o->core.has_shard_seed))
			continue;
		fprintf(f, "%s=", table[i].name);
		if (secret_name(table[i].name))
			fputs("***", f);
		else
			print_row(&table[i], &now, f);
		fputc('\n', f);
	}
}
