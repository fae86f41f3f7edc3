/*
 * awscred.c - AWS credentials from the environment or the shared
 * credentials file (see awscred.h).  The file is parsed as the AWS CLI
 * reads it for these three keys: a section header is `[name]` (spaces
 * around the name ignored), a key line `name = value` (the value trimmed),
 * lines starting with '#' or ';' are comments, and a later section of the
 * same name adds to the earlier one.
 *
 * Not for: signing (libcurl does that, httpreq.c), or any other setting.
 */
#include "io/http/awscred.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

#define FILE_MAX (1u << 20)   /* a credentials file, at most */

void awscred_zfree(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void awscred_free(struct awscred *c)
{
	awscred_zfree(c->access_key);
	awscred_zfree(c->secret);
	awscred_zfree(c->token);
	c->access_key = c->secret = c->token = NULL;
}

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r';
}

/* [a, b) without the blanks around it */
static void trim(const char **a, const char **b)
{
	while (*a < *b && is_space(**a))
		(*a)++;
	while (*b > *a && is_space((*b)[-1]))
		(*b)--;
}

static int equals(const char *a, const char *b, const char *s)
{
	size_t n = strlen(s);

	return (size_t)(b - a) == n && !memcmp(a, s, n);
}

/* Sets *slot to [a, b) (a later line wins).  0 or -ENOMEM. */
static int set(char **slot, const char *a, const char *b)
{
	char *v = strndup(a, (size_t)(b - a));

	if (!v)
		return -ENOMEM;
	awscred_zfree(*slot);
	*slot = v;
	return 0;
}

/* One "key = value" line of the profile's section. */
static int key_line(const char *a, const char *e, struct awscred *c)
{
	const char *eq = memchr(a, '=', (size_t)(e - a)), *kb, *va;

	if (!eq)
		return 0;
	kb = eq;
	va = eq + 1;
	trim(&a, &kb);
	trim(&va, &e);
	if (equals(a, kb, "aws_access_key_id"))
		return set(&c->access_key, va, e);
	if (equals(a, kb, "aws_secret_access_key"))
		return set(&c->secret, va, e);
	if (equals(a, kb, "aws_session_token"))
		return set(&c->token, va, e);
	return 0;
}

int awscred_parse(const char *text, size_t len, const char *profile,
		  struct awscred *c)
{
	const char *p = text, *end = text + len, *e, *a, *b;
	int in = 0, rc = 0;

	memset(c, 0, sizeof(*c));
	for (; p < end && !rc; p = e + 1) {
		if (!(e = memchr(p, '\n', (size_t)(end - p))))
			e = end;
		a = p;
		b = e;
		trim(&a, &b);
		if (a == b || *a == '#' || *a == ';')
			continue;
		if (*a == '[') {
			if (!(b = memchr(a, ']', (size_t)(b - a))))
				continue;	/* not a header: ignored, as a bad line */
			a++;
			trim(&a, &b);
			in = equals(a, b, profile);
			continue;
		}
		if (in && memchr(a, '\0', (size_t)(b - a)) == NULL)
			rc = key_line(a, b, c);
	}
	if (!rc && !c->access_key && !c->secret)
		rc = -ENOENT;
	else if (!rc && (!c->access_key || !c->secret))
		rc = -EINVAL;
	if (rc)
		awscred_free(c);
	return rc;
}

/* The whole file, NUL-terminated; NULL with errno set. */
static char *read_small(const char *path, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	ssize_t got;
	size_t have = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0) {
		err = errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > FILE_MAX) {
		err = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		goto out;
	}
	if (!(buf = malloc((size_t)st.st_size + 1))) {
		err = ENOMEM;
		goto out;
	}
	while (have < (size_t)st.st_size &&
	       (got = read(fd, buf + have, (size_t)st.st_size - have)) > 0)
		have += (size_t)got;
	buf[have] = '\0';
	*len = have;
out:
	close(fd);
	if (err) {
		free(buf);
		errno = err;
		return NULL;
	}
	return buf;
}

static int from_env(struct awscred *c)
{
	const char *k = getenv("AWS_ACCESS_KEY_ID"), *s = getenv("AWS_SECRET_ACCESS_KEY"),
		   *t = getenv("AWS_SESSION_TOKEN");

	memset(c, 0, sizeof(*c));
	if (!k || !*k || !s || !*s)
		return -ENOENT;
	if (!(c->access_key = strdup(k)) || !(c->secret = strdup(s)) ||
	    (t && *t && !(c->token = strdup(t)))) {
		awscred_free(c);
		return -ENOMEM;
	}
	snprintf(c->from, sizeof(c->from), "the environment (AWS_ACCESS_KEY_ID%s)",
		 c->token ? ", AWS_SESSION_TOKEN" : "");
	return 0;
}

int awscred_load(const char *profile, struct awscred *c)
{
	const char *file = getenv("AWS_SHARED_CREDENTIALS_FILE"), *home;
	char *path = NULL, *text = NULL;
	size_t len = 0;
	int rc, asked;

	/* an explicit profile wins over the environment's keys, as the AWS
	 * CLI's --profile does: stale keys there must not be used silently */
	if ((!profile || !*profile) && (rc = from_env(c)) != -ENOENT)
		return rc;
	if (!profile || !*profile)
		profile = getenv("AWS_PROFILE");
	asked = profile && *profile;
	if (!asked)
		profile = "default";
	if (file && *file)
		path = strdup(file);
	else if ((home = getenv("HOME")) && *home &&
		 asprintf(&path, "%s/.aws/credentials", home) < 0)
		path = NULL;
	if (!path)
		return -ENOENT;
	if (!(text = read_small(path, &len))) {
		rc = -ENOENT;
		if (errno != ENOENT || asked)
			sfs_err("%s: cannot read AWS credentials (%s)", path,
				strerror(errno));
		goto out;
	}
	rc = awscred_parse(text, len, profile, c);
	if (rc == 0)
		snprintf(c->from, sizeof(c->from), "profile %s of %s", profile, path);
	if (rc == -ENOENT && asked)
		sfs_err("%s: no credentials for profile %s", path, profile);
	else if (rc == -EINVAL)
		sfs_err("%s: profile %s has only one of aws_access_key_id and "
			"aws_secret_access_key", path, profile);
out:
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	free(path);
	return rc;
}
