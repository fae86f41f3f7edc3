/*
 * dlnames.c - the downloader's parsers of untrusted text (dlnames.h): a
 * file of URLs, MD5s in ETags and x-goog-hash, relative paths.  Base64
 * with OpenSSL's EVP_DecodeBlock (libcrypto, as download.c's MD5).
 *
 * Not for: transfers (download.c), listings (bucketlist.c, autoindex.c).
 */
#include "io/dlnames.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/http/bucket.h"
#include "io/source.h"
#include "log.h"

#define URL_MAX 8192	/* a longer line is no URL a store serves */

int dlnames_md5_of_etag(const char *etag, unsigned char md5[16])
{
	size_t n = strlen(etag), i;

	if (n == 34 && etag[0] == '"' && etag[33] == '"') {
		etag++;
		n = 32;
	}
	if (n != 32)
		return 0;
	for (i = 0; i < 32; i++)
		if (!isxdigit((unsigned char)etag[i]))
			return 0;
	for (i = 0; i < 16; i++)
		if (sscanf(etag + 2 * i, "%2hhx", &md5[i]) != 1)
			return 0;
	return 1;
}

int dlnames_md5_of_goog_hash(const char *v, size_t len, unsigned char md5[16])
{
	const char *end = v + len, *p = v, *e;
	unsigned char out[18], back[25];

	while (p < end) {
		while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
			p++;
		for (e = p; e < end && *e != ','; e++)
			;
		/* "md5=" and 24 base64 characters ("...==" for 16 bytes) */
		if (e - p >= 28 && !strncasecmp(p, "md5=", 4)) {
			const char *b = p + 4, *be = e;

			while (be > b && memchr(" \t\r\n", be[-1], 4))
				be--;
			/* EVP_DecodeBlock passes '=' inside, and other forms of
			 * the last digit: only the one encoding of 16 bytes */
			if (be - b == 24 &&
			    EVP_DecodeBlock(out, (const unsigned char *)b, 24) == 18 &&
			    EVP_EncodeBlock(back, out, 16) == 24 && !memcmp(back, b, 24)) {
				memcpy(md5, out, 16);
				return 1;
			}
		}
		p = e;
	}
	return 0;
}

int dlnames_rel_ok(const char *rel)
{
	const char *p = rel, *e;

	if (!*rel || *rel == '/')
		return 0;
	for (; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return 0;
	for (p = rel; ; p = e + 1) {
		e = strchr(p, '/');
		if (!e)
			e = p + strlen(p);
		if (e == p || (e - p == 1 && p[0] == '.') ||
		    (e - p == 2 && p[0] == '.' && p[1] == '.'))
			return 0;
		if (!*e)
			return 1;
	}
}


static int blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* The decoded last path segment of url, malloc'ed; NULL on ENOMEM. */
static char *url_name(const char *url)
{
	const char *start = strstr(url, "://"), *end, *s;
	char *seg, *name;

	start = start ? start + 3 : url;
	end = start + strcspn(start, "?#");
	for (s = start; s < end; s++)
		if (*s == '/')
			start = s + 1;
	if (!(seg = strndup(start, (size_t)(end - start))))
		return NULL;
	name = bucket_decode(seg);
	free(seg);
	return name;
}

/* One line (NUL-terminated, trimmed): 0 and *name (malloc'ed), -ENOMEM,
 * or -EINVAL and why. */
static int url_line(const char *line, char **name, const char **why)
{
	*name = NULL;
	*why = NULL;
	if (strlen(line) > URL_MAX)
		*why = "longer than 8192 bytes";
	else if (!source_is_url(line))
		*why = "not a URL (http://, https://, s3://, gs://)";
	else if (!(*name = url_name(line)))
		return -ENOMEM;
	else if (!dlnames_rel_ok(*name) || strchr(*name, '/'))
		*why = "its last path segment is no file name";
	return *why ? -EINVAL : 0;
}

/* Checks every line (give 0), then hands them out (give 1). */
static int urls_pass(const char *path, const char *text, size_t len,
		     dlnames_url_fn fn, void *arg, int give)
{
	const char *p = text, *end = text + len, *nl, *a, *b, *why;
	unsigned lineno = 0;
	char *line, *name;
	int rc = 0;

	for (; p < end && !rc; p = nl + 1) {
		lineno++;
		if (!(nl = memchr(p, '\n', (size_t)(end - p))))
			nl = end;
		for (a = p; a < nl && blank(*a); a++)
			;
		for (b = nl; b > a && blank(b[-1]); b--)
			;
		if (a == b || *a == '#')
			continue;
		if (memchr(a, '\0', (size_t)(b - a))) {
			sfs_err("%s: line %u: a NUL byte", path, lineno);
			return -EINVAL;
		}
		if (!(line = strndup(a, (size_t)(b - a))))
			return -ENOMEM;
		rc = url_line(line, &name, &why);
		if (rc == -EINVAL)
			sfs_err("%s: line %u: %s", path, lineno, why);
		else if (!rc && give)
			rc = fn(arg, line, name);
		free(name);
		free(line);
	}
	return rc;
}

int dlnames_urls_parse(const char *path, const char *text, size_t len,
		       dlnames_url_fn fn, void *arg)
{
	int rc = urls_pass(path, text, len, fn, arg, 0);

	return rc ? rc : urls_pass(path, text, len, fn, arg, 1);
}
