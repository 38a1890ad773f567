/* MSG_ZEROCOPY completion notices from MSG_ERRQUEUE (zcnotice.h). */
#include <errno.h>
#include <poll.h>
#include <netinet/in.h>
#include <linux/errqueue.h>
#include <sys/socket.h>
#include "wl.h"
#include "zcnotice.h"

/* Reads one completion notice; returns 1 if read, 0 if none is queued, -errno on error. */
static int recv_notice(int fd, struct zc_stats *zc)
{
	char control[CMSG_SPACE(sizeof(struct sock_extended_err)) + 64];
	struct msghdr mh = { .msg_control = control, .msg_controllen = sizeof(control) };
	struct sock_extended_err *serr;
	struct cmsghdr *cm;
	uint32_t lo, hi;

	if (recvmsg(fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
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
	if (lo != zc->next_id)
		zc->gaps++;
	zc->next_id = hi + 1;
	zc->notices++;
	zc->completed += hi - lo + 1;
	if (hi - lo + 1 > zc->widest)
		zc->widest = hi - lo + 1;
	if (serr->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) {
		zc->notices_copied++;
		zc->completed_copied += hi - lo + 1;
	}
	return 1;
}

int zc_drain(int fd, struct zc_stats *zc)
{
	int n;

	while ((n = recv_notice(fd, zc)) > 0)
		;
	return n;
}

int zc_wait_all(int fd, struct zc_stats *zc, int timeout_ms)
{
	uint64_t deadline = wl_now_ns() + (uint64_t)timeout_ms * 1000000;

	while (zc->completed < zc->sends) {
		/* no events asked: POLLERR alone, which a queued notice raises */
		struct pollfd pfd = { .fd = fd, .events = 0 };
		int left = (deadline - wl_now_ns()) / 1000000;
		int err;

		if (wl_now_ns() >= deadline)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, left > 0 ? left : 1) < 0 && errno != EINTR)
			return -errno;
		if ((err = zc_drain(fd, zc)) < 0)
			return err;
	}
	return 0;
}

void zc_sum(struct zc_stats *t, const struct zc_stats *s)
{
	t->sends += s->sends;
	t->notices += s->notices;
	t->notices_copied += s->notices_copied;
	t->completed += s->completed;
	t->completed_copied += s->completed_copied;
	t->gaps += s->gaps;
	if (s->widest > t->widest)
		t->widest = s->widest;
}

json_object *zc_json(const struct zc_stats *zc)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "sends", json_object_new_uint64(zc->sends));
	json_object_object_add(o, "notices", json_object_new_uint64(zc->notices));
	json_object_object_add(o, "notices_copied", json_object_new_uint64(zc->notices_copied));
	json_object_object_add(o, "completed", json_object_new_uint64(zc->completed));
	json_object_object_add(o, "completed_copied", json_object_new_uint64(zc->completed_copied));
	json_object_object_add(o, "gaps", json_object_new_uint64(zc->gaps));
	json_object_object_add(o, "widest", json_object_new_uint64(zc->widest));
	return o;
}
