/* tcp-sendfile: sendfile() of a message-sized file (kept in the page cache) to the socket. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/sendfile.h>
#include "tcpwl.h"

struct file_src {
	int fd;
};

/* An unlinked temporary file holding one message: nothing is left behind on any exit. */
static int setup(struct tcp_conn *c)
{
	char path[] = "/tmp/zctrace-sendfile-XXXXXX";
	struct file_src *src = malloc(sizeof(*src));
	int fd;

	if (!src)
		return -ENOMEM;
	fd = mkstemp(path);
	if (fd < 0) {
		free(src);
		return -errno;
	}
	unlink(path);
	for (int i = 0; i < MSG_FIELDS; i++) {
		if (write(fd, c->msg.field[i], c->msg.len[i]) != (ssize_t)c->msg.len[i]) {
			close(fd);
			free(src);
			return -EIO;
		}
	}
	src->fd = fd;
	c->priv = src;
	return 0;
}

static int send_one(struct tcp_conn *c)
{
	struct file_src *src = c->priv;
	off_t off = 0;

	while ((uint64_t)off < c->msg.size) {
		ssize_t n = sendfile(c->send_fd, src->fd, &off, c->msg.size - off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		c->sent += n;
	}
	return 0;
}

static void teardown(struct tcp_conn *c)
{
	struct file_src *src = c->priv;

	if (src) {
		close(src->fd);
		free(src);
	}
}

int main(int argc, char **argv)
{
	static const struct tcp_workload w = {
		.name = "tcp-sendfile", .setup = setup, .send_one = send_one, .teardown = teardown,
	};

	return tcp_workload_main(argc, argv, &w);
}
