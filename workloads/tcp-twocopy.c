/* tcp-twocopy: serialise the 8 fields into one buffer with memcpy (reported by USDT), then send(). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tcpwl.h"

static int setup(struct tcp_conn *c)
{
	c->priv = malloc(c->msg.size);
	return c->priv ? 0 : -ENOMEM;
}

static int send_one(struct tcp_conn *c)
{
	char *buf = c->priv, *p = buf;
	struct iovec iov;

	for (int i = 0; i < MSG_FIELDS; i++) {
		memcpy(p, c->msg.field[i], c->msg.len[i]);
		p += c->msg.len[i];
	}
	WL_USER_COPY(c->msg.size, MSG_FIELDS);
	iov = (struct iovec){ .iov_base = buf, .iov_len = c->msg.size };
	return send_all_iov(c->send_fd, &iov, 1, 0, &c->sent, NULL);
}

static void teardown(struct tcp_conn *c)
{
	free(c->priv);
}

int main(int argc, char **argv)
{
	static const struct tcp_workload w = {
		.name = "tcp-twocopy", .setup = setup, .send_one = send_one, .teardown = teardown,
	};

	return tcp_workload_main(argc, argv, &w);
}
