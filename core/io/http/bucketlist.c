/*
 * bucketlist.c - one page of an S3 or GCS listing, or their <Error>, with
 * libexpat (see bucketlist.h).  The parse keeps the element path as
 * (depth, local name) and the text of the element open now; entries are
 * gathered and handed out only after the whole page parsed, so a damaged
 * page gives no entries at all.  A document type declaration stops the
 * parse: a listing has none, and entities defined in one are how XML
 * grows a small text into a huge one.
 *
 * Not for: requests (bucket.c) or what the entries mean to a layout.
 */
#include "io/http/bucketlist.h"

#include <errno.h>
#include <expat.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TEXT_MAX  4096   /* one element's text: keys are at most 1024 bytes */
#define NSSEP     '\x01' /* between a namespace and the local name */

enum root { R_NONE, R_LIST, R_ERROR, R_OTHER };

struct entry {
	char *key;
	int is_prefix;
	struct source_stamp stamp;
	uint64_t generation;
};

struct state {
	XML_Parser p;
	struct bucketlist_page *page;
	enum root root;
	int depth;
	char parent[32];           /* the depth-2 element we are in */
	char text[TEXT_MAX];
	size_t tlen;
	int too_long;
	int bad;                   /* -EBADMSG or -ENOMEM: stop */
	struct entry cur;          /* the <Contents> or <CommonPrefixes> open */
	int has_size;
	struct entry *v;
	size_t n, cap;
};

static const char *local_name(const char *name)
{
	const char *s = strrchr(name, NSSEP);

	if (s)
		return s + 1;
	if ((s = strchr(name, ':')))	/* a prefix without namespace processing */
		return s + 1;
	return name;
}

static void fail(struct state *st, int rc)
{
	if (!st->bad)
		st->bad = rc;
	XML_StopParser(st->p, XML_FALSE);
}

static void XMLCALL on_start(void *arg, const XML_Char *name, const XML_Char **atts)
{
	struct state *st = arg;
	const char *l = local_name(name);

	(void)atts;
	st->depth++;
	st->tlen = 0;
	st->too_long = 0;
	if (st->depth == 1) {
		st->root = !strcmp(l, "ListBucketResult") ? R_LIST :
			   !strcmp(l, "Error") ? R_ERROR : R_OTHER;
		if (st->root == R_OTHER)
			fail(st, -EBADMSG);
	} else if (st->depth == 2) {
		snprintf(st->parent, sizeof(st->parent), "%s", l);
		if (st->root == R_LIST && (!strcmp(l, "Contents") ||
					   !strcmp(l, "CommonPrefixes"))) {
			memset(&st->cur, 0, sizeof(st->cur));
			st->cur.is_prefix = l[0] == 'C' && l[1] == 'o' && l[2] == 'm';
			st->has_size = 0;
		}
	}
}

static void XMLCALL on_text(void *arg, const XML_Char *s, int len)
{
	struct state *st = arg;

	if (st->tlen + (size_t)len >= sizeof(st->text)) {
		st->too_long = 1;
		return;
	}
	memcpy(st->text + st->tlen, s, (size_t)len);
	st->tlen += (size_t)len;
}

/* A decimal number, all of it; -1 when it is not one. */
static int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* src into dst[cap], cut to fit (as stamps keep ETags) */
static void keep(char *dst, size_t cap, const char *src)
{
	size_t n = strnlen(src, cap - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
}

static char *dup_text(struct state *st)
{
	char *s = strdup(st->text);

	if (!s)
		fail(st, -ENOMEM);
	return s;
}

/* A field of the entry open (depth 3). */
static void entry_field(struct state *st, const char *l)
{
	struct entry *e = &st->cur;

	if (!strcmp(l, e->is_prefix ? "Prefix" : "Key")) {
		free(e->key);
		e->key = dup_text(st);
	} else if (e->is_prefix) {
		return;
	} else if (!strcmp(l, "Size")) {
		if (parse_u64(st->text, &e->stamp.size))
			fail(st, -EBADMSG);
		st->has_size = 1;
	} else if (!strcmp(l, "ETag")) {
		keep(e->stamp.etag, sizeof(e->stamp.etag), st->text);
	} else if (!strcmp(l, "LastModified")) {
		e->stamp.mtime_ns = bucketlist_time(st->text);
	} else if (!strcmp(l, "Generation")) {
		if (parse_u64(st->text, &e->generation))
			fail(st, -EBADMSG);
	}
}

/* The entry open ends: kept, if it is whole. */
static void entry_end(struct state *st)
{
	struct entry *e = &st->cur, *v;

	if (!e->key || (!e->is_prefix && !st->has_size)) {
		free(e->key);
		e->key = NULL;
		fail(st, -EBADMSG);
		return;
	}
	if (st->n == st->cap) {
		st->cap = st->cap ? 2 * st->cap : 64;
		if (!(v = realloc(st->v, st->cap * sizeof(*v)))) {
			free(e->key);
			e->key = NULL;
			fail(st, -ENOMEM);
			return;
		}
		st->v = v;
	}
	st->v[st->n++] = *e;
	e->key = NULL;
	if (!e->is_prefix) {
		free(st->page->last_key);
		if (!(st->page->last_key = strdup(st->v[st->n - 1].key)))
			fail(st, -ENOMEM);
	}
}

/* A child of the root ends (depth 2). */
static void top_field(struct state *st, const char *l)
{
	struct bucketlist_page *pg = st->page;

	if (st->root == R_ERROR) {
		if (!strcmp(l, "Code"))
			keep(pg->code, sizeof(pg->code), st->text);
		else if (!strcmp(l, "Message"))
			keep(pg->message, sizeof(pg->message), st->text);
		return;
	}
	if (!strcmp(l, "Contents") || !strcmp(l, "CommonPrefixes")) {
		entry_end(st);
	} else if (!strcmp(l, "IsTruncated")) {
		pg->truncated = !strcmp(st->text, "true");
	} else if (!strcmp(l, "NextContinuationToken") || !strcmp(l, "NextMarker")) {
		free(pg->next);
		pg->next = st->tlen ? dup_text(st) : NULL;
	}
}

static void XMLCALL on_end(void *arg, const XML_Char *name)
{
	struct state *st = arg;
	const char *l = local_name(name);

	st->text[st->tlen] = '\0';
	if (st->too_long && st->depth >= 2)
		fail(st, -EBADMSG);
	else if (st->depth == 2)
		top_field(st, l);
	else if (st->depth == 3 && st->root == R_LIST &&
		 (!strcmp(st->parent, "Contents") ||
		  !strcmp(st->parent, "CommonPrefixes")))
		entry_field(st, l);
	st->depth--;
	st->tlen = 0;
	st->too_long = 0;
}

static void XMLCALL on_doctype(void *arg, const XML_Char *name, const XML_Char *sysid,
			       const XML_Char *pubid, int has_internal)
{
	(void)name;
	(void)sysid;
	(void)pubid;
	(void)has_internal;
	fail(arg, -EBADMSG);
}

/* The parse of both entry points; `whole`: text must be all of a document. */
static int parse(const char *text, size_t len, bucketlist_fn fn, void *arg,
		 struct bucketlist_page *page, int whole)
{
	struct state st = {0};
	struct bucketlist_entry e;
	size_t i;
	int rc = 0;

	memset(page, 0, sizeof(*page));
	if (len > INT32_MAX)
		return -EBADMSG;
	if (!(st.p = XML_ParserCreateNS(NULL, NSSEP)))
		return -ENOMEM;
	st.page = page;
	XML_SetUserData(st.p, &st);
	XML_SetElementHandler(st.p, on_start, on_end);
	XML_SetCharacterDataHandler(st.p, on_text);
	XML_SetStartDoctypeDeclHandler(st.p, on_doctype);
	if (XML_Parse(st.p, text, (int)len, whole ? XML_TRUE : XML_FALSE) !=
	    XML_STATUS_OK && !st.bad)
		st.bad = -EBADMSG;
	if (!st.bad && st.root != R_LIST && st.root != R_ERROR)
		st.bad = -EBADMSG;
	if ((rc = st.bad))
		goto out;
	page->is_error = st.root == R_ERROR;
	for (i = 0; fn && i < st.n && !rc; i++) {
		e.key = st.v[i].key;
		e.is_prefix = st.v[i].is_prefix;
		e.stamp = st.v[i].stamp;
		e.generation = st.v[i].generation;
		rc = fn(arg, &e);
	}
out:
	for (i = 0; i < st.n; i++)
		free(st.v[i].key);
	free(st.v);
	free(st.cur.key);
	XML_ParserFree(st.p);
	return rc;
}

int bucketlist_parse(const char *text, size_t len, bucketlist_fn fn, void *arg,
		     struct bucketlist_page *page)
{
	return parse(text, len, fn, arg, page, 1);
}

int bucketlist_error(const char *text, size_t len, struct bucketlist_page *page)
{
	int rc = parse(text, len, NULL, NULL, page, 0);

	if (!rc && !page->is_error)
		rc = -EBADMSG;
	return rc;
}

void bucketlist_page_free(struct bucketlist_page *page)
{
	free(page->next);
	free(page->last_key);
	page->next = page->last_key = NULL;
}

int64_t bucketlist_time(const char *s)
{
	struct tm tm = {0};
	unsigned y, mo, d, h, mi, sec;
	char z = 0;
	int n = 0;
	long frac = 0, scale = 1000000000;
	time_t t;

	if (sscanf(s, "%4u-%2u-%2uT%2u:%2u:%2u%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6)
		return 0;
	s += n;
	if (*s == '.')
		for (s++; *s >= '0' && *s <= '9'; s++)
			if (scale > 1) {
				scale /= 10;
				frac += (*s - '0') * scale;
			}
	z = *s;
	if (z != 'Z' || s[1] || y < 1970 || y > 2261 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 60)
		return 0;
	tm.tm_year = (int)y - 1900;
	tm.tm_mon = (int)mo - 1;
	tm.tm_mday = (int)d;
	tm.tm_hour = (int)h;
	tm.tm_min = (int)mi;
	tm.tm_sec = (int)sec;
	/* int64 nanoseconds end in 2262 */
	if ((t = timegm(&tm)) < 0 || t > INT64_MAX / 1000000000 - 1)
		return 0;
	return (int64_t)t * 1000000000 + frac;
}
