/*
 * pipe-copy: write() of --size messages into a pipe, read() on the other end by a thread of this
 * process or of a child process (--peer thread|process); --threads pipes at once, a writer and a
 * reader thread each. Every byte crosses the user boundary twice: user->pipe buffer, pipe
 * buffer->user.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include "streamwl.h"

static int open_pipe(int fd[2])
{
	return pipe2(fd, O_CLOEXEC | O_NONBLOCK) ? -errno : 0;
}

int main(int argc, char **argv)
{
	static const struct stream_workload w = { .name = "pipe-copy", .path = "pipe", .open = open_pipe };

	return stream_workload_main(argc, argv, &w);
}
