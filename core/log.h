/*
 * log.h - one place where core/ reports to the user.
 *
 * Messages go to stderr, prefixed "samplefs: ".  They name the file, the
 * offset and what was expected.  Not a logging framework: no levels
 * beyond warn/error/info, no global state.
 */
#ifndef SFS_LOG_H
#define SFS_LOG_H

#if defined(__GNUC__)
#define SFS_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SFS_PRINTF(a, b)
#endif

void sfs_err(const char *fmt, ...) SFS_PRINTF(1, 2);
void sfs_warn(const char *fmt, ...) SFS_PRINTF(1, 2);
void sfs_info(const char *fmt, ...) SFS_PRINTF(1, 2);

#endif
