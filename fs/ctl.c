/*
 * ctl.c - the control directory of ctl.h: per-thread counters, and the
 * documents made from them (JSON, Prometheus text) at each lookup, each
 * at an inode of its own.
 * Not for: parsing those documents (tools/stat) or any dataset file.
 */
#include "ctl.h"
#include "clock.h"
#include "io/lru.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

_Thread_local struct ctl_slot *ctl_my_slot;

const uint64_t ctl_hist_us[CTL_HIST - 1] = { 100, 1000, 10000, 100000, 1000000 };
const uint64_t ctl_rsize[CTL_RSIZE - 1] = { 4096, 65536, 131072, 524288, 1048576 };

static const char *const op_names[CTL_NOPS] = {
	"lookup", "forget", "getattr", "readlink", "open", "read", "readdir",
	"readdirplus", "statfs", "xattr", "denied",
};

static const char *const file_names[CTL_NFILES] = {
	NULL, "stats.json", "metrics", "config", "version",
};

#define CTL_INO(i) SFS_INO(SFS_INO_KIND_CTL, (i))
/* Snapshot inodes follow the files' own: serials from 1 up, never reused. */
#define SNAP_INO(serial) CTL_INO(CTL_NFILES + (serial))

/* ---- counting ---- */

/* A thread's first count: its own slot, or the shared one when all are
 * taken (threads that ended keep theirs: their counts stay). */
struct ctl_slot *ctl_slot_claim(struct ctl *c)
{
	unsigned i = atomic_fetch_add(&c->nslots, 1);

	ctl_my_slot = i < CTL_SLOTS ? &c->slots[i] : &c->shared;
	return ctl_my_slot;
}

void ctl_read_done(struct ctl *c, uint64_t off, size_t n, int spliced, int err)
{
	struct ctl_slot *s = ctl_slot(c);

	if (err) {
		ctl_add(s, &s->read_errors, 1);
		return;
	}
	ctl_add(s, &s->bytes, n);
	ctl_add(s, spliced ? &s->spliced : &s->copied, 1);
	if (off == 0)
		ctl_add(s, &s->files, 1);
}

void ctl_read_asked(struct ctl *c, size_t size)
{
	struct ctl_slot *s = ctl_slot(c);
	unsigned b = 0;

	while (b < CTL_RSIZE - 1 && size > ctl_rsize[b])
		b++;
	ctl_add(s, &s->rsize[b], 1);
	ctl_add(s, &s->asked, size);
}

void ctl_waited(struct ctl *c, int64_t ns)
{
	struct ctl_slot *s = ctl_slot(c);
	uint64_t us = ns > 0 ? (uint64_t)ns / 1000 : 0;
	unsigned b = 0;

	while (b < CTL_HIST - 1 && us > ctl_hist_us[b])
		b++;
	ctl_add(s, &s->waits, 1);
	ctl_add(s, &s->wait_ns, ns > 0 ? (uint64_t)ns : 0);
	ctl_add(s, &s->hist[b], 1);
}

/* The slots summed: counters of struct ctl_slot, as plain numbers. */
struct totals {
	uint64_t ops[CTL_NOPS];
	uint64_t bytes, spliced, copied, files, read_errors;
	uint64_t waits, wait_ns, hist[CTL_HIST], rsize[CTL_RSIZE], asked;
};

#define LD(f) atomic_load_explicit(&(f), memory_order_relaxed)

static void add_slot(struct totals *t, const struct ctl_slot *s)
{
	unsigned i;

	for (i = 0; i < CTL_NOPS; i++)
		t->ops[i] += LD(s->ops[i]);
	t->bytes += LD(s->bytes);
	t->spliced += LD(s->spliced);
	t->copied += LD(s->copied);
	t->files += LD(s->files);
	t->read_errors += LD(s->read_errors);
	t->waits += LD(s->waits);
	t->wait_ns += LD(s->wait_ns);
	for (i = 0; i < CTL_HIST; i++)
		t->hist[i] += LD(s->hist[i]);
	for (i = 0; i < CTL_RSIZE; i++)
		t->rsize[i] += LD(s->rsize[i]);
	t->asked += LD(s->asked);
}

static void sum(struct ctl *c, struct totals *t)
{
	unsigned i, n = atomic_load(&c->nslots);

	memset(t, 0, sizeof(*t));
	for (i = 0; i < n && i < CTL_SLOTS; i++)
		add_slot(t, &c->slots[i]);
	add_slot(t, &c->shared);
}

/* ---- documents ---- */

/* s inside quotes: as a JSON string's contents (json 1: quotes,
 * backslashes, control bytes) or a Prometheus label value (json 0:
 * quotes, backslashes and newlines, all that format escapes). */
static void put_escaped(FILE *f, const char *s, int json)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (json && ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
}

/* stats.json's "caches": the mount's one budget (cache_mem=) and each
 * cache's share of it now. */
struct cache_list {
	FILE *f;
	unsigned n;
};

static void json_cache(void *arg, const char *name, uint64_t bytes,
		       uint64_t entries)
{
	struct cache_list *l = arg;

	fprintf(l->f, "%s\"%s\": {\"bytes\": %llu, \"entries\": %llu}",
		l->n++ ? ", " : "", name, (unsigned long long)bytes,
		(unsigned long long)entries);
}

static void write_caches(struct ctl *c, FILE *f)
{
	struct lru_pool *p = c->layout->env ? source_env_cache(c->layout->env) : NULL;
	struct cache_list l = { f, 0 };

	if (!p)
		return;
	fprintf(f, ",\n  \"cache_mem\": %llu,\n  \"caches\": {",
		(unsigned long long)lru_pool_size(p));
	lru_pool_each(p, json_cache, &l);
	fputs("}", f);
}

static void write_json(struct ctl *c, FILE *f, const struct totals *t,
		       const struct source_stats *ss, double up)
{
	unsigned i;

	fprintf(f, "{\n  \"version\": \"%s\",\n  \"uptime_s\": %.3f,\n"
		"  \"index_build_s\": %.3f,\n  \"ops\": {", SAMPLEFS_VERSION, up,
		c->build_s);
	for (i = 0; i < CTL_NOPS; i++)
		fprintf(f, "%s\"%s\": %llu", i ? ", " : "", op_names[i],
			(unsigned long long)t->ops[i]);
	fprintf(f, "},\n  \"files_read\": %llu,\n  \"bytes_served\": %llu,\n"
		"  \"replies_spliced\": %llu,\n  \"replies_copied\": %llu,\n"
		"  \"read_errors\": %llu,\n  \"waits\": %llu,\n  \"wait_ns\": %llu,\n"
		"  \"wait_us_hist\": {",
		(unsigned long long)t->files, (unsigned long long)t->bytes,
		(unsigned long long)t->spliced, (unsigned long long)t->copied,
		(unsigned long long)t->read_errors, (unsigned long long)t->waits,
		(unsigned long long)t->wait_ns);
	for (i = 0; i < CTL_HIST - 1; i++)
		fprintf(f, "\"%llu\": %llu, ", (unsigned long long)ctl_hist_us[i],
			(unsigned long long)t->hist[i]);
	fprintf(f, "\"+Inf\": %llu},\n  \"read_size_hist\": {",
		(unsigned long long)t->hist[CTL_HIST - 1]);
	for (i = 0; i < CTL_RSIZE - 1; i++)
		fprintf(f, "\"%llu\": %llu, ", (unsigned long long)ctl_rsize[i],
			(unsigned long long)t->rsize[i]);
	fprintf(f, "\"+Inf\": %llu},\n  \"sources\": [{\"name\": \"",
		(unsigned long long)t->rsize[CTL_RSIZE - 1]);
	put_escaped(f, c->opts->core.source ? c->opts->core.source : "", 1);
	fprintf(f, "\", \"requests\": %llu, \"retries\": %llu, \"errors\": %llu, "
		"\"mem_hits\": %llu, \"mem_misses\": %llu, \"disk_hits\": %llu, "
		"\"disk_misses\": %llu, \"checksum_failures\": %llu, "
		"\"checksum_refetches\": %llu, \"prefetch_hints\": %llu}]",
		(unsigned long long)ss->requests, (unsigned long long)ss->retries,
		(unsigned long long)ss->errors, (unsigned long long)ss->mem_hits,
		(unsigned long long)ss->mem_misses, (unsigned long long)ss->disk_hits,
		(unsigned long long)ss->disk_misses,
		(unsigned long long)ss->checksum_failures,
		(unsigned long long)ss->checksum_refetches,
		(unsigned long long)ss->prefetch_hints);
	write_caches(c, f);
	fputs("\n}\n", f);
}

static void prom_head(FILE *f, const char *name, const char *type,
		      const char *help)
{
	fprintf(f, "# HELP samplefs_%s %s\n# TYPE samplefs_%s %s\n", name, help,
		name, type);
}

static void prom_one(FILE *f, const char *name, const char *type,
		     const char *help, uint64_t v)
{
	prom_head(f, name, type, help);
	fprintf(f, "samplefs_%s %llu\n", name, (unsigned long long)v);
}

/* One counter of the source (its label escaped). */
static void prom_source(FILE *f, const char *src, const char *name,
			const char *help, uint64_t v)
{
	prom_head(f, name, "counter", help);
	fprintf(f, "samplefs_%s{source=\"", name);
	put_escaped(f, src, 0);
	fprintf(f, "\"} %llu\n", (unsigned long long)v);
}

static void write_metrics(struct ctl *c, FILE *f, const struct totals *t,
			  const struct source_stats *ss, double up)
{
	const char *src = c->opts->core.source ? c->opts->core.source : "";
	uint64_t cum = 0;
	unsigned i;

	prom_head(f, "fuse_requests_total", "counter", "FUSE requests by op");
	for (i = 0; i < CTL_NOPS; i++)
		fprintf(f, "samplefs_fuse_requests_total{op=\"%s\"} %llu\n",
			op_names[i], (unsigned long long)t->ops[i]);
	prom_one(f, "files_read_total", "counter", "reads at offset 0", t->files);
	prom_one(f, "bytes_served_total", "counter", "bytes of read replies", t->bytes);
	prom_head(f, "replies_total", "counter", "read replies, spliced or copied");
	fprintf(f, "samplefs_replies_total{how=\"spliced\"} %llu\n"
		"samplefs_replies_total{how=\"copied\"} %llu\n",
		(unsigned long long)t->spliced, (unsigned long long)t->copied);
	prom_one(f, "read_errors_total", "counter", "reads answered with an error",
		 t->read_errors);
	prom_head(f, "read_wait_seconds", "histogram",
		  "reads that waited for the disk or network, from request to reply");
	for (i = 0; i < CTL_HIST; i++) {
		cum += t->hist[i];
		if (i < CTL_HIST - 1)
			fprintf(f, "samplefs_read_wait_seconds_bucket{le=\"%g\"} %llu\n",
				(double)ctl_hist_us[i] / 1e6, (unsigned long long)cum);
		else
			fprintf(f, "samplefs_read_wait_seconds_bucket{le=\"+Inf\"} %llu\n",
				(unsigned long long)cum);
	}
	fprintf(f, "samplefs_read_wait_seconds_sum %.9f\n"
		"samplefs_read_wait_seconds_count %llu\n",
		(double)t->wait_ns / 1e9, (unsigned long long)t->waits);
	prom_head(f, "read_request_bytes", "histogram",
		  "sizes the kernel asked for in READ requests");
	for (i = 0, cum = 0; i < CTL_RSIZE; i++) {
		cum += t->rsize[i];
		if (i < CTL_RSIZE - 1)
			fprintf(f, "samplefs_read_request_bytes_bucket{le=\"%llu\"} %llu\n",
				(unsigned long long)ctl_rsize[i], (unsigned long long)cum);
		else
			fprintf(f, "samplefs_read_request_bytes_bucket{le=\"+Inf\"} %llu\n",
				(unsigned long long)cum);
	}
	fprintf(f, "samplefs_read_request_bytes_sum %llu\n"
		"samplefs_read_request_bytes_count %llu\n",
		(unsigned long long)t->asked, (unsigned long long)cum);
	prom_source(f, src, "source_requests_total", "HTTP requests sent", ss->requests);
	prom_source(f, src, "source_retries_total", "HTTP requests retried", ss->retries);
	prom_source(f, src, "source_errors_total", "HTTP requests failed after retries",
		    ss->errors);
	prom_source(f, src, "source_mem_hits_total", "blocks found in memory", ss->mem_hits);
	prom_source(f, src, "source_mem_misses_total", "blocks not in memory",
		    ss->mem_misses);
	prom_source(f, src, "source_disk_hits_total", "blocks found in cache_dir",
		    ss->disk_hits);
	prom_source(f, src, "source_disk_misses_total", "blocks not in cache_dir",
		    ss->disk_misses);
	prom_source(f, src, "source_checksum_failures_total",
		    "reads whose bytes failed a member's checksum (-o checksums)",
		    ss->checksum_failures);
	prom_source(f, src, "source_checksum_refetches_total",
		    "reads fetched again past every cache after a failed checksum",
		    ss->checksum_refetches);
	prom_source(f, src, "source_prefetch_hints_total",
		    "ranges of sources asked for ahead of their reader "
		    "(WILLNEED: shards' prefetch, index walks)", ss->prefetch_hints);
	prom_head(f, "index_build_seconds", "gauge", "time to open the layout");
	fprintf(f, "samplefs_index_build_seconds %.3f\n", c->build_s);
	prom_head(f, "uptime_seconds", "gauge", "since the mount");
	fprintf(f, "samplefs_uptime_seconds %.3f\n", up);
}

/* Makes file i's document into d (c->lock held).  0 or -ENOMEM. */
static int make_doc(struct ctl *c, int i, struct ctl_doc *d)
{
	struct source_stats ss = { 0 };
	struct totals t;
	FILE *f;
	double up = (double)(sfs_now_ns() - c->start_ns) / 1e9;

	free(d->buf);
	d->buf = NULL;
	d->len = 0;
	if (!(f = open_memstream(&d->buf, &d->len)))
		return -ENOMEM;
	sum(c, &t);
	if (c->layout->env)
		source_env_stats(c->layout->env, &ss);
	if (i == CTL_STATS)
		write_json(c, f, &t, &ss, up);
	else if (i == CTL_METRICS)
		write_metrics(c, f, &t, &ss, up);
	else if (i == CTL_CONFIG)
		sfs_opts_print(c->opts, c->layout, f);
	else
		fprintf(f, "%s\n", SAMPLEFS_VERSION);
	if (fclose(f)) {
		free(d->buf);
		d->buf = NULL;
		d->len = 0;
		return -ENOMEM;
	}
	return 0;
}

int ctl_init(struct ctl *c, const struct layout *layout,
	     const struct fs_opts *opts, double build_s)
{
	struct sfs_attr a;
	int i, rc;

	c->layout = layout;
	c->opts = opts;
	c->build_s = build_s;
	c->start_ns = sfs_now_ns();
	c->shared.shared = 1;
	pthread_mutex_init(&c->lock, NULL);
	c->name = CTL_NAME;
	if (layout->ops->lookup(layout->priv, SFS_ROOT_INO, CTL_NAME, &a) == 0) {
		c->name = CTL_NAME_CLASH;
		if (layout->ops->lookup(layout->priv, SFS_ROOT_INO, CTL_NAME_CLASH, &a) == 0)
			c->name = NULL;
		sfs_warn("%s: the dataset has a member named %s at its root: it keeps "
			 "its name; the control directory is %s", opts->core.source,
			 CTL_NAME, c->name ? c->name : "not served (" CTL_NAME_CLASH
			 " is taken too)");
	}
	for (i = CTL_CONFIG; i < CTL_NFILES; i++)
		if ((rc = make_doc(c, i, &c->docs[i])))
			return rc;
	return 0;
}

void ctl_destroy(struct ctl *c)
{
	int i;

	if (!c->layout)
		return;
	for (i = 0; i < CTL_NFILES; i++)
		free(c->docs[i].buf);
	for (i = 0; i < CTL_SNAPS; i++)
		free(c->snaps[i].doc.buf);
	pthread_mutex_destroy(&c->lock);
}

/* ---- the directory ---- */

int ctl_is_dir_name(const struct ctl *c, uint64_t parent, const char *name)
{
	return parent == SFS_ROOT_INO && c->name && !strcmp(name, c->name);
}

static int is_snap_file(unsigned i)
{
	return i == CTL_STATS || i == CTL_METRICS;
}

/* The attributes of file i (CTL_DIR for the directory) whose document is
 * d (NULL: none), at inode ino. */
static void attr_of(unsigned i, const struct ctl_doc *d, uint64_t ino,
		    struct sfs_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->ino = ino;
	out->mtime = time(NULL);
	if (i == CTL_DIR) {
		out->mode = S_IFDIR | 0555;
		out->nlink = 2;
		return;
	}
	out->mode = S_IFREG | 0444;
	out->nlink = 1;
	out->size = d ? d->len : 0;
}

/* File number of a name in the directory, or 0. */
static unsigned file_of(const char *name)
{
	unsigned i;

	for (i = 1; i < CTL_NFILES; i++)
		if (!strcmp(name, file_names[i]))
			return i;
	return 0;
}

/* The snapshot at ino, or NULL when it is not kept (c->lock held). */
static struct ctl_snap *snap_of(struct ctl *c, uint64_t ino)
{
	uint64_t idx = SFS_INO_IDX(ino), serial;
	struct ctl_snap *s;

	if (idx < CTL_NFILES)
		return NULL;
	serial = idx - CTL_NFILES;
	s = &c->snaps[serial % CTL_SNAPS];
	return s->serial == serial ? s : NULL;
}

/* A new snapshot of file i, replacing the oldest kept (c->lock held). */
static struct ctl_snap *snap_new(struct ctl *c, unsigned i, int *rc)
{
	uint64_t serial = ++c->next_serial;
	struct ctl_snap *s = &c->snaps[serial % CTL_SNAPS];

	s->serial = 0;
	if ((*rc = make_doc(c, (int)i, &s->doc)))
		return NULL;
	s->serial = serial;
	s->file = i;
	s->nlookup = 0;
	s->read = 0;
	s->made_ns = sfs_now_ns();
	c->latest[i] = serial;
	return s;
}

/*
 * The snapshot a lookup of file i hands out (c->lock held): the latest
 * while nobody has read it yet and it is younger than CTL_REUSE_NS (cp
 * stats a file, opens it and checks that the inode is the same; a new
 * inode would be "replaced while being copied"), else a new one.
 */
static struct ctl_snap *snap_for_lookup(struct ctl *c, unsigned i, int *rc)
{
	struct ctl_snap *s = c->latest[i] ? snap_of(c, SNAP_INO(c->latest[i])) : NULL;

	if (!s || s->read || sfs_now_ns() - s->made_ns > CTL_REUSE_NS)
		s = snap_new(c, i, rc);
	if (s)
		s->nlookup++;
	return s;
}

int ctl_lookup(struct ctl *c, uint64_t parent, const char *name,
	       struct sfs_attr *out)
{
	struct ctl_snap *s;
	unsigned i;
	int rc = 0;

	if (parent == SFS_ROOT_INO) {
		attr_of(CTL_DIR, NULL, CTL_INO(CTL_DIR), out);
		return 0;
	}
	if (parent != CTL_INO(CTL_DIR) || !(i = file_of(name)))
		return -ENOENT;
	pthread_mutex_lock(&c->lock);
	if (!is_snap_file(i))
		attr_of(i, &c->docs[i], CTL_INO(i), out);
	else if ((s = snap_for_lookup(c, i, &rc)))
		attr_of(i, &s->doc, SNAP_INO(s->serial), out);
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int ctl_getattr(struct ctl *c, uint64_t ino, struct sfs_attr *out)
{
	uint64_t i = SFS_INO_IDX(ino);
	struct ctl_snap *s;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (i < CTL_NFILES)	/* a snapshot file's own: listed, never linked */
		attr_of((unsigned)i, is_snap_file((unsigned)i) ? NULL : &c->docs[i],
			ino, out);
	else if ((s = snap_of(c, ino)))
		attr_of(s->file, &s->doc, ino, out);
	else
		rc = -ESTALE;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void ctl_forget(struct ctl *c, uint64_t ino, uint64_t nlookup)
{
	struct ctl_snap *s;

	pthread_mutex_lock(&c->lock);
	if ((s = snap_of(c, ino)) &&
	    (s->nlookup -= nlookup < s->nlookup ? nlookup : s->nlookup) == 0) {
		s->serial = 0;
		free(s->doc.buf);
		s->doc.buf = NULL;
		s->doc.len = 0;
	}
	pthread_mutex_unlock(&c->lock);
}

int ctl_listed_link(uint64_t ino)
{
	return SFS_INO_IDX(ino) < CTL_NFILES &&
	       !is_snap_file((unsigned)SFS_INO_IDX(ino));
}

int ctl_readdir(struct ctl *c, uint64_t ino, uint64_t off, sfs_fill_fn fill,
		void *arg)
{
	struct sfs_attr a;
	uint64_t i;

	if (ino != CTL_INO(CTL_DIR))
		return -ENOTDIR;
	for (i = off + 1; i < CTL_NFILES; i++) {
		pthread_mutex_lock(&c->lock);
		attr_of((unsigned)i, is_snap_file((unsigned)i) ? NULL : &c->docs[i],
			CTL_INO(i), &a);
		pthread_mutex_unlock(&c->lock);
		if (fill(arg, file_names[i], &a, i))
			break;
	}
	return 0;
}

ssize_t ctl_read(struct ctl *c, uint64_t ino, char *buf, size_t size,
		 uint64_t off)
{
	uint64_t i = SFS_INO_IDX(ino);
	const struct ctl_doc *d = NULL;
	struct ctl_snap *s;
	ssize_t n = -ESTALE;

	if (i == CTL_DIR)
		return -EISDIR;
	pthread_mutex_lock(&c->lock);
	if (i < CTL_NFILES && !is_snap_file((unsigned)i))
		d = &c->docs[i];
	else if ((s = snap_of(c, ino))) {
		d = &s->doc;
		s->read = 1;	/* the next lookup makes a new one */
	}
	if (d) {
		n = 0;
		if (off < d->len) {
			n = (ssize_t)(d->len - off < size ? d->len - (size_t)off : size);
			memcpy(buf, d->buf + off, (size_t)n);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}
