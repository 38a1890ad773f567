/* Where the results go: the --json file and stdout, every write checked to the end. */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stdbool.h>
#include <json-c/json.h>

/*
 * --json FILE is opened before anything starts, so a path that cannot be written is a usage error,
 * not a failed run at the end. A file made here and never written is removed on the way out.
 */
struct json_out {
	const char *path;
	int fd;			/* -1: stdout, or already written */
	bool created;
};

/* Opens @path (NULL: no JSON; "-": stdout). 0 or -errno. */
int json_open(struct json_out *jo, const char *path);
/* Writes @root whole; on failure says why on one line and returns -1. */
int write_json(struct json_out *jo, json_object *root);
/* Closes the file; removes it when zctrace made it and never wrote it. */
void json_close(struct json_out *jo);

/*
 * Flushes stdout and checks that everything written to it went through. On the first failure
 * says so on one line ("PROG: cannot write stdout: ..."), and never again. 0 or -1.
 */
int stdout_flush(const char *prog);
/*
 * From here stdout is flushed and checked at exit, also after argp's --help and usage errors: a
 * failure no one reported yet is said on one line and makes the exit status 1.
 */
void check_stdout_at_exit(void);

#endif
