/*
 * awscred.h - AWS credentials as the AWS tools find them: a profile asked
 * for (-o profile=, as the AWS CLI's --profile) from the shared
 * credentials file (AWS_SHARED_CREDENTIALS_FILE, default
 * ~/.aws/credentials), whatever the environment holds; else the
 * environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN); else the file's profile AWS_PROFILE, else
 * "default".  Nothing else: no config file, no SSO, no instance
 * metadata, no credential process.
 *
 * The secret and the token are secrets: they are never put into a message
 * here, and awscred_free zeroes them.  Messages name the file and the
 * profile only.
 *
 * Private to core/io (bucket.c).
 */
#ifndef SFS_IO_AWSCRED_H
#define SFS_IO_AWSCRED_H

#include <stddef.h>

struct awscred {
	char *access_key;
	char *secret;
	char *token;              /* NULL when none */
	char from[320];           /* where they came from, for messages: "the
				   * environment (AWS_ACCESS_KEY_ID)", "profile
				   * NAME of FILE" (no secret) */
};

/*
 * Fills c (malloc'ed strings).  0; -ENOENT when there are no credentials
 * (no keys in the environment, no file, or no such profile in it: an
 * explicit profile, from the argument or AWS_PROFILE, that is missing is
 * logged, naming the file; one from the argument is then an error, not
 * anonymous access: the caller says so); -EINVAL for a profile with one of the two keys
 * only (logged); -ENOMEM.
 */
int awscred_load(const char *profile, struct awscred *c);

/*
 * The profile's keys from the text of a credentials file (ini: [profile]
 * sections of `key = value` lines, '#' and ';' comments).  0, -ENOENT (no
 * such profile, or it has neither key), -EINVAL (one key only), -ENOMEM.
 */
int awscred_parse(const char *text, size_t len, const char *profile,
		  struct awscred *c);

/* Zeroes and frees a secret string (NULL: nothing). */
void awscred_zfree(char *s);

/* Zeroes and frees what c holds. */
void awscred_free(struct awscred *c);

#endif
