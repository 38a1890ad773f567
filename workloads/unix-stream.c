/*
 * unix-stream: write() of --size messages into a Unix stream socket (socketpair()), read() on the
 * other end by a thread of this process or of a child process (--peer thread|process); --threads
 * socket pairs at once, a writer and a reader thread each. Every byte crosses the user boundary
 * twice: user->skb on the write, skb->user on the read.
 */
#include <errno.h>
#include <sys/socket.h>
#include "streamwl.h"

static int open_pair(int fd[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, fd) ? -errno : 0;
}

int main(int argc, char **argv)
{
	static const struct stream_workload w = { .name = "unix-stream", .path = "unix", .open = open_pair };

	return stream_workload_main(argc, argv, &w);
}
