/*
 * tcp-zerocopy: SO_ZEROCOPY + sendmsg(MSG_ZEROCOPY) over the 8 fields, reaping completion
 * notices from MSG_ERRQUEUE as the kernel's msg_zerocopy selftest does.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/errqueue.h>
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

/* Reads one completion notice; returns 1 if read, 0 if none is queued, -errno on error. */
static int recv_completion(struct tcp_conn *c)
{
	char control[CMSG_SPACE(sizeof(struct sock_extended_err)) + 64];
	struct msghdr mh = { .msg_control = control, .msg_controllen = sizeof(control) };
	struct sock_extended_err *serr;
	struct cmsghdr *cm;
	uint32_t lo, hi;

	if (recvmsg(c->send_fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
		return errno == EAGAIN ? 0 : -errno;
	if (mh.msg_flags & MSG_CTRUNC)
		return -EMSGSIZE;
	cm = CMSG_FIRSTHDR(&mh);
	if (!cm || !((cm->cmsg_level == SOL_IP && cm->cmsg_type == IP_RECVERR) ||
		     (cm->cmsg_level == SOL_IPV6 && cm->cmsg_type == IPV6_RECVERR)))
		return -EPROTO;
	serr = (struct sock_extended_err *)CMSG_DATA(cm);
	if (serr->ee_origin != SO_EE_ORIGIN_ZEROCOPY || serr->ee_errno != 0)
		return -EPROTO;
	lo = serr->ee_info;
	hi = serr->ee_data;
	if (lo != c->zc.next_id)
		c->zc.gaps++;
	c->zc.next_id = hi + 1;
	c->zc.notices++;
	c->zc.completed += hi - lo + 1;
	if (serr->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) {
		c->zc.notices_copied++;
		c->zc.completed_copied += hi - lo + 1;
	}
	return 1;
}

static int drain_completions(struct tcp_conn *c)
{
	int n;

	while ((n = recv_completion(c)) > 0)
		;
	return n;
}

/* Waits until every zerocopy send has been completed, or the timeout passes. */
static int wait_completions(struct tcp_conn *c, int timeout_ms)
{
	uint64_t deadline = wl_now_ns() + (uint64_t)timeout_ms * 1000000;

	while (c->zc.completed < c->zc.sends) {
		struct pollfd pfd = { .fd = c->send_fd, .events = 0 };
		int left = (deadline - wl_now_ns()) / 1000000;
		int err;

		if (wl_now_ns() >= deadline)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, left > 0 ? left : 1) < 0 && errno != EINTR)
			return -errno;
		if ((err = drain_completions(c)) < 0)
			return err;
	}
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
		if ((err = wait_completions(c, DRAIN_TIMEOUT_MS)))
			return err;
	}
	if (err)
		return err;
	return drain_completions(c) < 0 ? -EPROTO : 0;
}

static int finish(struct tcp_conn *c)
{
	return wait_completions(c, DRAIN_TIMEOUT_MS);
}

static void report(json_object *r, struct tcp_conn *conns, int n)
{
	struct zc_stats t = {};
	json_object *o = json_object_new_object();

	for (int i = 0; i < n; i++) {
		t.sends += conns[i].zc.sends;
		t.notices += conns[i].zc.notices;
		t.notices_copied += conns[i].zc.notices_copied;
		t.completed += conns[i].zc.completed;
		t.completed_copied += conns[i].zc.completed_copied;
		t.gaps += conns[i].zc.gaps;
	}
	json_object_object_add(o, "sends", json_object_new_uint64(t.sends));
	json_object_object_add(o, "notices", json_object_new_uint64(t.notices));
	json_object_object_add(o, "notices_copied", json_object_new_uint64(t.notices_copied));
	json_object_object_add(o, "completed", json_object_new_uint64(t.completed));
	json_object_object_add(o, "completed_copied", json_object_new_uint64(t.completed_copied));
	json_object_object_add(o, "gaps", json_object_new_uint64(t.gaps));
	json_object_object_add(r, WL_KEY_ZEROCOPY, o);
}

int main(int argc, char **argv)
{
	static const struct tcp_workload w = {
		.name = "tcp-zerocopy", .setup = setup, .send_one = send_one, .finish = finish,
		.report = report,
	};

	return tcp_workload_main(argc, argv, &w);
}
