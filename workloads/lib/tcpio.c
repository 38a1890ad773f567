/* The listener and the counted whole-buffer I/O of the network workloads. */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include "tcpio.h"
#include "wl.h"

int tcp_listen(struct sockaddr_in *addr, int backlog, int timeout_s)
{
	socklen_t alen = sizeof(*addr);
	int fd, one = 1, err;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* a fixed port is bound again at once, past an earlier run's connections in TIME_WAIT */
	if (addr->sin_port && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one))) {
		err = -errno;
		goto fail;
	}
	/* the timeouts bound accept(), and accepted sockets inherit them from the listener */
	if ((err = wl_socket_timeouts(fd, timeout_s)))
		goto fail;
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) || listen(fd, backlog) ||
	    getsockname(fd, (struct sockaddr *)addr, &alen)) {
		err = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

/* A failed socket call as -errno; EAGAIN is the socket's timeout running out. */
static int call_error(void)
{
	return errno == EAGAIN ? -ETIMEDOUT : -errno;
}

int tcp_send_all(int fd, const void *buf, size_t n, struct tcp_io *io)
{
	const char *p = buf;

	while (n) {
		ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

		io->send_calls++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)	/* 0: nothing taken, and no error to wait out */
			return r ? call_error() : -EIO;
		io->sent += r;
		p += r;
		n -= r;
	}
	return 0;
}

int tcp_recv_all(int fd, void *buf, size_t n, struct tcp_io *io)
{
	char *p = buf;
	size_t got = 0;

	while (got < n) {
		ssize_t r = recv(fd, p + got, n - got, 0);

		io->recv_calls++;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return call_error();
		if (!r)
			return got ? -EPIPE : -ENODATA;
		io->received += r;
		got += r;
	}
	return 0;
}
