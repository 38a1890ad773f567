/*
 * tcp-zerocopy: SO_ZEROCOPY + sendmsg(MSG_ZEROCOPY) over the 8 fields, reaping completion
 * notices from MSG_ERRQUEUE as the kernel's msg_zerocopy selftest does.
 */
#include <errno.h>
#include <sys/socket.h>
#include "tcpwl.h"

#define DRAIN_TIMEOUT_MS 10000

static int setup(struct tcp_conn *c)
{
	int one = 1;

	if (setsockopt(c->send_fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		return -errno;
	return 0;
}

static int send_one(struct tcp_conn *c)
{
	struct iovec iov[MSG_FIELDS];
	int err;

	for (int i = 0; i < MSG_FIELDS; i++)
		iov[i] = (struct iovec){ .iov_base = c->msg.field[i], .iov_len = c->msg.len[i] };
	for (;;) {
		err = send_all_iov(c->send_fd, iov, MSG_FIELDS, MSG_ZEROCOPY, &c->sent, &c->zc.sends);
		if (err != -ENOBUFS)
			break;
		/* pinned-page budget (optmem, RLIMIT_MEMLOCK) is full: reap, then go on */
		if ((err = zc_wait_all(c->send_fd, &c->zc, DRAIN_TIMEOUT_MS)))
			return err;
	}
	if (err)
		return err;
	/* --notice-batch: the notices of the sends between wait, and the kernel coalesces them */
	if (c->zc.sends - c->zc.sends_read < (uint64_t)c->opts->notice_batch)
		return 0;
	c->zc.sends_read = c->zc.sends;
	return zc_drain(c->send_fd, &c->zc) < 0 ? -EPROTO : 0;
}

static int finish(struct tcp_conn *c)
{
	return zc_wait_all(c->send_fd, &c->zc, DRAIN_TIMEOUT_MS);
}

static void report(json_object *r, struct tcp_conn *conns, int n)
{
	struct zc_stats t = {};

	for (int i = 0; i < n; i++)
		zc_sum(&t, &conns[i].zc);
	json_object_object_add(r, WL_KEY_ZEROCOPY, zc_json(&t));
}

int main(int argc, char **argv)
{
	static const struct tcp_workload w = {
		.name = "tcp-zerocopy", .options = WL_OPT_TCP | WL_OPT_NOTICES, .setup = setup, .send_one = send_one, .finish = finish,
		.report = report,
	};

	return tcp_workload_main(argc, argv, &w);
}
