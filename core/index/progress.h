/*
 * progress.h - a one-line progress display for index builds (files, MB,
 * rate, ETA), drawn on stderr only when it is a terminal and not quiet.
 * Not thread-safe: one builder thread owns it.
 */
#ifndef SFS_PROGRESS_H
#define SFS_PROGRESS_H

#include <stdint.h>

struct progress {
	const char *what;
	uint64_t total_files, total_bytes;
	uint64_t files, bytes;
	double start, last_draw;
	int enabled;
};

void progress_start(struct progress *p, const char *what, uint64_t total_files,
		    uint64_t total_bytes, int quiet);
/* files_done: files taken so far, counting the one being taken now */
void progress_update(struct progress *p, uint64_t files_done, uint64_t bytes_done);
void progress_finish(struct progress *p);

#endif
