/*
 * pipe-vmsplice: vmsplice() of the message's 8 fields into a pipe, then splice() from the pipe into
 * the TCP socket. Without SPLICE_F_GIFT the pipe holds references to the user pages (nothing is
 * copied into it), and splice() hands those references on to the skb: no CPU copy on the send
 * side at all. The fields stay unchanged while the references live (they never change here).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include "tcpwl.h"

#define PIPE_SIZE (1 << 20)	/* fewer calls per message; the default 64K where the limit is lower */

struct vpipe {
	int fd[2];
};

static int setup(struct tcp_conn *c)
{
	struct vpipe *p = malloc(sizeof(*p));

	if (!p)
		return -ENOMEM;
	c->priv = p;
	if (pipe2(p->fd, O_CLOEXEC)) {
		p->fd[0] = p->fd[1] = -1;
		return -errno;
	}
	fcntl(p->fd[1], F_SETPIPE_SZ, PIPE_SIZE);	/* best effort: /proc/sys/fs/pipe-max-size */
	return 0;
}

/* Moves the @n bytes the pipe holds into the socket. 0 or -errno. */
static int drain(struct tcp_conn *c, struct vpipe *p, size_t n)
{
	while (n) {
		ssize_t m = splice(p->fd[0], NULL, c->send_fd, NULL, n, 0);

		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			return m < 0 ? -errno : -EIO;
		n -= m;
		c->sent += m;
	}
	return 0;
}

/*
 * One message: vmsplice() takes as much of the fields as the pipe has room for (it blocks only on
 * a full pipe, and the pipe is empty each time), drain() passes it on; until the message is sent.
 */
static int send_one(struct tcp_conn *c)
{
	struct vpipe *p = c->priv;
	struct iovec iov[MSG_FIELDS], *v = iov;
	int left = MSG_FIELDS, err;

	for (int i = 0; i < MSG_FIELDS; i++)
		iov[i] = (struct iovec){ .iov_base = c->msg.field[i], .iov_len = c->msg.len[i] };
	while (left && !v->iov_len)
		v++, left--;
	while (left) {
		ssize_t n = vmsplice(p->fd[1], v, left, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		if ((err = drain(c, p, n)))
			return err;
		/* past what went in: whole fields, then part of the next */
		while (left && (size_t)n >= v->iov_len)
			n -= v->iov_len, v++, left--;
		if (left) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= n;
		}
		while (left && !v->iov_len)
			v++, left--;
	}
	return 0;
}

static void teardown(struct tcp_conn *c)
{
	struct vpipe *p = c->priv;

	if (!p)
		return;
	for (int i = 0; i < 2; i++)
		if (p->fd[i] >= 0)
			close(p->fd[i]);
	free(p);
}

int main(int argc, char **argv)
{
	static const struct tcp_workload w = {
		.name = "pipe-vmsplice", .setup = setup, .send_one = send_one, .teardown = teardown,
	};

	return tcp_workload_main(argc, argv, &w);
}
