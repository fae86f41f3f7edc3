/*
 * httphdr.c - HTTP response header values, parsed from their text (see
 * httphdr.h for each contract).  Hand-written where the grammar is a few
 * tokens (RFC 9110's Content-Range and entity-tag): sscanf's %llu would
 * take a sign ("-5" as 2^64-5), blanks and overflow (saturating), which a
 * header must not get away with.  HTTP-dates go to libcurl's
 * curl_getdate, which knows the three formats.
 *
 * Not for: finding the headers in a response (httpreq.c), or comparing
 * an ETag with a stamp's.
 */
#include "io/http/httphdr.h"

#include <curl/curl.h>
#include <string.h>
#include <strings.h>

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

static const char *skip_blanks(const char *p)
{
	while (blank(*p))
		p++;
	return p;
}

/* Decimal digits at *p, at least one, value at most INT64_MAX; *p moves
 * past them.  0 when there are none or too many. */
static int number(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return 0;
	for (; *s >= '0' && *s <= '9'; s++) {
		if (v > ((uint64_t)INT64_MAX - (uint64_t)(*s - '0')) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*p = s;
	*out = v;
	return 1;
}

int httphdr_content_range(const char *v, uint64_t *from, uint64_t *to,
			  int64_t *total)
{
	const char *p = skip_blanks(v);
	uint64_t a = 1, b = 0, t = 0;
	int has_range = 0, has_total = 0;

	if (strncmp(p, "bytes ", 6))
		return 0;
	p = skip_blanks(p + 6);
	if (*p == '*') {
		p++;
	} else {
		if (!number(&p, &a) || *p++ != '-' || !number(&p, &b) || a > b)
			return 0;
		has_range = 1;
	}
	if (*p++ != '/')
		return 0;
	if (*p == '*')
		p++;
	else if (number(&p, &t))
		has_total = 1;
	else
		return 0;
	if (*skip_blanks(p) || (!has_range && !has_total) ||
	    (has_range && has_total && b >= t))
		return 0;
	*from = a;
	*to = b;
	*total = has_total ? (int64_t)t : -1;
	return 1;
}

/* etagc (RFC 9110 8.8.3): '!' or '#'..'~' or obs-text, i.e. any visible
 * byte but '"' (and no blanks or controls). */
static int etagc(unsigned char c)
{
	return c == 0x21 || (c >= 0x23 && c != 0x7f);
}

enum httphdr_etag_kind httphdr_etag(const char *v, char *out, size_t outlen)
{
	const char *s = skip_blanks(v), *q;
	size_t n = strlen(s), keep;
	int weak;

	while (n && blank(s[n - 1]))
		n--;
	keep = n < outlen - 1 ? n : outlen - 1;
	memcpy(out, s, keep);
	out[keep] = '\0';
	weak = n >= 2 && s[0] == 'W' && s[1] == '/';
	q = weak ? s + 2 : s;
	n -= (size_t)(q - s);
	if (n < 2 || q[0] != '"' || q[n - 1] != '"')
		return HTTPHDR_ETAG_NONE;
	for (keep = 1; keep < n - 1; keep++)
		if (!etagc((unsigned char)q[keep]))
			return HTTPHDR_ETAG_NONE;
	return weak ? HTTPHDR_ETAG_WEAK : HTTPHDR_ETAG_STRONG;
}

int64_t httphdr_retry_after(const char *v, time_t now)
{
	const char *p = skip_blanks(v);
	uint64_t secs;
	time_t when;

	if (*p >= '0' && *p <= '9') {
		/* delta-seconds: too many digits is still "a long time" */
		if (!number(&p, &secs)) {
			while (*p >= '0' && *p <= '9')
				p++;
			secs = HTTPHDR_RETRY_AFTER_MAX;
		}
		if (*skip_blanks(p))
			return -1;
		return secs > HTTPHDR_RETRY_AFTER_MAX ? HTTPHDR_RETRY_AFTER_MAX :
		       (int64_t)secs;
	}
	if (!*p || (when = curl_getdate(p, NULL)) == -1)
		return -1;
	if (when <= now)
		return 0;
	return (uint64_t)(when - now) > HTTPHDR_RETRY_AFTER_MAX ?
	       HTTPHDR_RETRY_AFTER_MAX : (int64_t)(when - now);
}

/* The value of base64 character c, or -1. */
static int b64(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* "XXXXXX==" (4 bytes, base64) at p, then blanks and `end` or a NUL. */
static int b64_u32(const char *p, char end, uint32_t *out)
{
	uint64_t v = 0;
	int i, d;

	for (i = 0; i < 6; i++) {
		if ((d = b64(p[i])) < 0)
			return 0;
		v = v << 6 | (uint64_t)d;
	}
	/* 36 bits: the last 4 are padding, zero */
	if (p[6] != '=' || p[7] != '=' || (v & 0xf))
		return 0;
	p = skip_blanks(p + 8);
	if (*p && *p != end)
		return 0;
	*out = (uint32_t)(v >> 4);
	return 1;
}

int httphdr_crc32c(const char *v, int goog, uint32_t *crc)
{
	const char *p = skip_blanks(v);

	if (!goog)
		return b64_u32(p, '\0', crc);
	while (*p) {
		p = skip_blanks(p);
		if (!strncasecmp(p, "crc32c=", 7))
			return b64_u32(p + 7, ',', crc);
		while (*p && *p != ',')
			p++;
		if (*p == ',')
			p++;
	}
	return 0;
}

