/*
 * The harness of the local stream workloads (pipe-copy, unix-stream): --threads channels, a
 * writer and a reader thread each, the readers in this process or a child (--peer thread|process).
 */
#ifndef STREAMWL_H
#define STREAMWL_H

struct stream_workload {
	const char *name;
	const char *path;		/* the report's "path": what the bytes crossed */
	/* a channel, both ends non-blocking and close-on-exec: fd[0] read, fd[1] write; 0 or -errno */
	int (*open)(int fd[2]);
};

int stream_workload_main(int argc, char **argv, const struct stream_workload *w);

#endif
