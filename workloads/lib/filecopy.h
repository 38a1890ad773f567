/* The harness of the file-* workloads: duplicate a file one way, timed, traced and verified. */
#ifndef FILECOPY_H
#define FILECOPY_H

#include <stdint.h>
#include "filewl.h"

#define COPY_MAX_CALLS 2

struct copy_job {
	int in, out;
	uint64_t file_size;
	uint64_t size;			/* bytes per call; 0 = as much as one call moves */
	uint64_t copied;
	uint64_t calls[COPY_MAX_CALLS];	/* syscalls made, by the names in struct file_copy */
	const struct wl_opts *opts;	/* the options, the groups of struct file_copy's options too */
	void *priv;
};

struct file_copy {
	const char *name;
	const char *method;		/* "read/write", "sendfile", ... */
	uint64_t default_size;
	const char *call_names[COPY_MAX_CALLS];	/* kernel syscall names, e.g. "read", "write" */
	unsigned per_chunk[COPY_MAX_CALLS];	/* calls of each per chunk of --size bytes */
	unsigned options;		/* option groups it takes besides WL_OPT_FILE (WL_OPT_*) */
	int (*setup)(struct copy_job *j);	/* before the measured phase */
	int (*copy)(struct copy_job *j);	/* the measured phase: returns 0 or -errno */
	void (*teardown)(struct copy_job *j);
	void (*report)(const struct copy_job *j, json_object *r);	/* its own figures, or NULL */
};

int file_copy_main(int argc, char **argv, const struct file_copy *w);

/*
 * The copy loop of the one-call ways: @call moves up to @want bytes at offset @off of both files
 * and returns what it moved or -1 with errno. Chunks are --size bytes (all that is left with
 * --size 0, at most what one call may move); calls are counted in calls[0].
 */
int copy_by_calls(struct copy_job *j, ssize_t (*call)(struct copy_job *j, uint64_t off, size_t want));

#endif
