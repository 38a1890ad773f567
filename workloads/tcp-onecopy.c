/* tcp-onecopy: sendmsg() with an 8-entry iovec over the fields; no copy in user space. */
#include "tcpwl.h"

static int send_one(struct tcp_conn *c)
{
	struct iovec iov[MSG_FIELDS];

	for (int i = 0; i < MSG_FIELDS; i++)
		iov[i] = (struct iovec){ .iov_base = c->msg.field[i], .iov_len = c->msg.len[i] };
	return send_all_iov(c->send_fd, iov, MSG_FIELDS, 0, &c->sent, NULL);
}

int main(int argc, char **argv)
{
	static const struct tcp_workload w = { .name = "tcp-onecopy", .send_one = send_one };

	return tcp_workload_main(argc, argv, &w);
}
