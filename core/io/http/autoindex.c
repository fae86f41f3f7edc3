/*
 * autoindex.c - nginx's JSON directory listings (see autoindex.h).
 *
 * A small recursive-descent reader of exactly the JSON grammar (RFC 8259),
 * strict where it matters (strings, nesting, nothing after the array) so a
 * page that is not a listing (an HTML index, an error page) is refused
 * rather than half read.  Nesting is bounded, so no input can exhaust the
 * stack.  Not a general JSON library: values other than an entry's "name"
 * and "type" are checked and skipped.
 */
#include "io/http/autoindex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 32

struct rd {
	const char *p, *end;
};

static void ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' ||
				 *r->p == '\n' || *r->p == '\r'))
		r->p++;
}

static int eat(struct rd *r, char c)
{
	ws(r);
	if (r->p < r->end && *r->p == c) {
		r->p++;
		return 1;
	}
	return 0;
}

static int hex4(struct rd *r, unsigned *out)
{
	unsigned v = 0;
	int i;
	char c;

	if (r->end - r->p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		c = *r->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static char *utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xc0 | cp >> 6);
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xe0 | cp >> 12);
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	} else {
		*o++ = (char)(0xf0 | cp >> 18);
		*o++ = (char)(0x80 | (cp >> 12 & 0x3f));
		*o++ = (char)(0x80 | (cp >> 6 & 0x3f));
		*o++ = (char)(0x80 | (cp & 0x3f));
	}
	return o;
}

/* \uXXXX (the backslash and 'u' read), a surrogate pair taken whole. */
static int unicode(struct rd *r, unsigned *cp)
{
	unsigned lo;

	if (hex4(r, cp))
		return -1;
	if (*cp >= 0xdc00 && *cp < 0xe000)
		return -1;	/* a low surrogate alone */
	if (*cp < 0xd800 || *cp >= 0xdc00)
		return 0;
	if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
		return -1;
	r->p += 2;
	if (hex4(r, &lo) || lo < 0xdc00 || lo >= 0xe000)
		return -1;
	*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
	return 0;
}

static size_t utf8_len(unsigned cp)
{
	return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

/* The rest of a string (the opening quote read): its unescaped length in
 * *n, and its bytes at o when o is not NULL.  0 or -ENOTSUP. */
static int scan_string(struct rd *r, char *o, size_t *n)
{
	unsigned cp;
	char c;

	*n = 0;
	while (r->p < r->end) {
		if ((c = *r->p++) == '"')
			return 0;
		if ((unsigned char)c < 0x20)
			return -ENOTSUP;
		if (c == '\\') {
			if (r->p == r->end)
				return -ENOTSUP;
			switch ((c = *r->p++)) {
			case '"': case '\\': case '/': break;
			case 'b': c = '\b'; break;
			case 'f': c = '\f'; break;
			case 'n': c = '\n'; break;
			case 'r': c = '\r'; break;
			case 't': c = '\t'; break;
			case 'u':
				if (unicode(r, &cp))
					return -ENOTSUP;
				if (o)
					o = utf8(o, cp);
				*n += utf8_len(cp);
				continue;
			default:
				return -ENOTSUP;
			}
		}
		if (o)
			*o++ = c;
		(*n)++;
	}
	return -ENOTSUP;	/* no closing quote */
}

/*
 * A string at r->p (after whitespace): unescaped into a malloc'ed buffer
 * when out is not NULL (its length in *len; it may hold NUL bytes), else
 * only checked.  0, -ENOTSUP or -ENOMEM.
 */
static int string(struct rd *r, char **out, size_t *len)
{
	struct rd first;
	size_t n;
	int rc;

	if (!eat(r, '"'))
		return -ENOTSUP;
	first = *r;
	if ((rc = scan_string(r, NULL, &n)) || !out)
		return rc;
	if (!(*out = malloc(n + 1)))
		return -ENOMEM;
	scan_string(&first, *out, &n);
	(*out)[n] = '\0';
	*len = n;
	return 0;
}

static int value(struct rd *r, int depth);

/* '{' read: "key": value pairs until '}' (or '[' read: values until ']') */
static int container(struct rd *r, int depth, char close)
{
	int rc;

	if (depth > DEPTH_MAX)
		return -ENOTSUP;
	if (eat(r, close))
		return 0;
	do {
		if (close == '}' && ((rc = string(r, NULL, NULL)) || !eat(r, ':')))
			return -ENOTSUP;
		if ((rc = value(r, depth + 1)))
			return rc;
	} while (eat(r, ','));
	return eat(r, close) ? 0 : -ENOTSUP;
}

static int number(struct rd *r)
{
	const char *s = r->p;

	if (r->p < r->end && *r->p == '-')
		r->p++;
	while (r->p < r->end && *r->p && strchr("0123456789.eE+-", *r->p))
		r->p++;
	return r->p > s && (r->p[-1] >= '0' && r->p[-1] <= '9') ? 0 : -ENOTSUP;
}

static int literal(struct rd *r, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n))
		return -ENOTSUP;
	r->p += n;
	return 0;
}

static int value(struct rd *r, int depth)
{
	ws(r);
	if (r->p == r->end)
		return -ENOTSUP;
	switch (*r->p) {
	case '"': return string(r, NULL, NULL);
	case '{': r->p++; return container(r, depth, '}');
	case '[': r->p++; return container(r, depth, ']');
	case 't': return literal(r, "true");
	case 'f': return literal(r, "false");
	case 'n': return literal(r, "null");
	default: return number(r);
	}
}

static int good_name(const char *name, size_t len)
{
	return len && strlen(name) == len && !strchr(name, '/') &&
	       strcmp(name, ".") && strcmp(name, "..");
}

/* One {...} entry: calls fn when it is a file or directory. */
static int entry(struct rd *r, source_list_fn fn, void *arg)
{
	char *key = NULL, *name = NULL, *type = NULL, **slot;
	size_t klen, nlen = 0, tlen;
	int rc = -ENOTSUP;

	if (!eat(r, '{'))
		return -ENOTSUP;
	if (eat(r, '}'))
		return 0;
	do {
		if ((rc = string(r, &key, &klen)) || (rc = -ENOTSUP, !eat(r, ':')))
			goto out;
		slot = !strcmp(key, "name") ? &name : !strcmp(key, "type") ? &type : NULL;
		free(key);
		key = NULL;
		ws(r);
		if (slot && r->p < r->end && *r->p == '"') {
			free(*slot);
			*slot = NULL;
			if ((rc = string(r, slot, slot == &name ? &nlen : &tlen)))
				goto out;
		} else if ((rc = value(r, 1))) {
			goto out;
		}
	} while (eat(r, ','));
	rc = -ENOTSUP;
	if (!eat(r, '}'))
		goto out;
	rc = 0;
	if (fn && name && type && good_name(name, nlen) &&
	    (!strcmp(type, "file") || !strcmp(type, "directory")))
		rc = fn(arg, name, !strcmp(type, "directory"));
out:
	free(key);
	free(name);
	free(type);
	return rc;
}

/* The listing's entries to fn; with fn NULL, only checks it. */
static int walk(const char *text, size_t len, source_list_fn fn, void *arg)
{
	struct rd r = { text, text + len };
	int rc;

	if (!eat(&r, '['))
		return -ENOTSUP;
	if (!eat(&r, ']')) {
		do {
			if ((rc = entry(&r, fn, arg)))
				return rc;
		} while (eat(&r, ','));
		if (!eat(&r, ']'))
			return -ENOTSUP;
	}
	ws(&r);
	return r.p == r.end ? 0 : -ENOTSUP;
}

/* Checked whole first, so a listing cut short or damaged gives no names
 * at all rather than some. */
int autoindex_parse(const char *text, size_t len, source_list_fn fn, void *arg)
{
	int rc = walk(text, len, NULL, NULL);

	return rc ? rc : walk(text, len, fn, arg);
}
