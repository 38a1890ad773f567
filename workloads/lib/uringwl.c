/*
 * io_uring senders on the TCP harness (uringwl.h). Each message's fields go out as linked
 * requests with MSG_WAITALL, so io_uring itself resends what a short send left and the stream
 * keeps its order. SEND_ZC requests complete twice: the request (its bytes, IORING_CQE_F_MORE)
 * and later its notification (IORING_CQE_F_NOTIF), once the kernel has let go of the pages.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <liburing.h>
#include "uringwl.h"

/* liburing 2.3's header predates these (6.2; Debian's 6.1 has them too) */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#define SQ_ENTRIES 64
/*
 * Room for every completion that can be due at once: a message's requests and the notifications
 * let wait (MAX_NOTIFS_DUE). A full ring would park completions on the overflow list, which the
 * io_uring_complete tracepoint never sees.
 */
#define CQ_ENTRIES 1024
#define MAX_NOTIFS_DUE 256
#define SQPOLL_IDLE_MS 100
#define IO_TIMEOUT_MS 30000	/* no request may take longer */
#define DRAIN_TIMEOUT_MS 10000	/* the last notifications, after the last message */

struct uring_conn {
	struct io_uring ring;
	bool zerocopy;
	bool usage_reports;	/* the kernel flags the notifications of copied data */
	const char *no_usage_why;	/* ... or why not */
	unsigned sqe_flags;	/* IOSQE_ASYNC with --async */
	unsigned zc_flags;	/* IORING_SEND_ZC_REPORT_USAGE where the kernel has it */
	int64_t notifs_due;	/* request completions that said a notification follows */
};

static int ring_open(struct tcp_conn *c, bool zerocopy)
{
	struct io_uring_params p = { .flags = IORING_SETUP_CQSIZE, .cq_entries = CQ_ENTRIES };
	struct uring_conn *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return -ENOMEM;
	if (c->opts->uring_sqpoll) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = SQPOLL_IDLE_MS;
	}
	if ((err = io_uring_queue_init_params(SQ_ENTRIES, &u->ring, &p))) {
		free(u);
		return err;
	}
	u->zerocopy = zerocopy;
	u->sqe_flags = c->opts->uring_async ? IOSQE_ASYNC : 0;
	c->priv = u;
	return 0;
}

/* One completion: a request's (its bytes; 0 or its error) or a zerocopy notification (0). */
static int on_cqe(struct tcp_conn *c, const struct io_uring_cqe *cqe, int *requests)
{
	struct uring_conn *u = c->priv;

	if (cqe->flags & IORING_CQE_F_NOTIF) {
		/* one notification per SEND_ZC request */
		c->zc.notices++;
		c->zc.completed++;
		if (u->usage_reports && (cqe->res & IORING_NOTIF_USAGE_ZC_COPIED)) {
			c->zc.notices_copied++;
			c->zc.completed_copied++;
		}
		u->notifs_due--;
		return 0;
	}
	(*requests)++;
	if (cqe->flags & IORING_CQE_F_MORE)
		u->notifs_due++;
	if (cqe->res < 0)
		return cqe->res;
	c->sent += cqe->res;
	if (u->zerocopy && cqe->res > 0)
		c->zc.sends++;
	/* user_data holds the bytes asked; with MSG_WAITALL less is a failure */
	return (uint64_t)cqe->res == cqe->user_data ? 0 : -EIO;
}

/*
 * Reaps completions until @requests request completions have come and at most @max_due
 * notifications are still due, for at most @timeout_ms. 0, or the first request's error.
 */
static int reap(struct tcp_conn *c, int requests, int64_t max_due, int timeout_ms)
{
	struct uring_conn *u = c->priv;
	uint64_t deadline = wl_now_ns() + (uint64_t)timeout_ms * 1000000;
	int seen = 0, err = 0;

	while (seen < requests || u->notifs_due > max_due) {
		uint64_t now = wl_now_ns(), left = deadline > now ? deadline - now : 0;
		struct __kernel_timespec ts = { .tv_sec = left / 1000000000, .tv_nsec = left % 1000000000 };
		struct io_uring_cqe *cqe;
		int ret;

		if (!left)
			return -ETIMEDOUT;
		ret = io_uring_wait_cqe_timeout(&u->ring, &cqe, &ts);
		if (ret == -ETIME || ret == -EINTR)
			continue;
		if (ret < 0)
			return ret;
		ret = on_cqe(c, cqe, &seen);
		io_uring_cqe_seen(&u->ring, cqe);
		if (ret && !err)
			err = ret;
	}
	return err;
}

/*
 * Whether the kernel flags notifications whose data was copied: a zero-byte SEND_ZC asking for it
 * fails with EINVAL where IORING_SEND_ZC_REPORT_USAGE is unknown. Before the measured phase.
 */
static int probe_usage_reports(struct tcp_conn *c)
{
	struct uring_conn *u = c->priv;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	int err;

	if (!sqe)
		return -EBUSY;
	io_uring_prep_send_zc(sqe, c->send_fd, c->msg.field[0], 0, 0, IORING_SEND_ZC_REPORT_USAGE);
	sqe->user_data = 0;
	if ((err = io_uring_submit(&u->ring)) != 1)
		return err < 0 ? err : -EAGAIN;
	err = reap(c, 1, 0, IO_TIMEOUT_MS);
	c->zc = (struct zc_stats){};	/* not part of the run */
	if (err == -EINVAL) {
		u->no_usage_why = "not supported by this kernel (no IORING_SEND_ZC_REPORT_USAGE)";
		return 0;
	}
	if (err)
		return err;
	u->usage_reports = true;
	u->zc_flags = IORING_SEND_ZC_REPORT_USAGE;
	return 0;
}

int uring_setup(struct tcp_conn *c)
{
	return ring_open(c, false);
}

int uring_setup_zc(struct tcp_conn *c)
{
	int err = ring_open(c, true);

	if (err)
		return err;
	if (c->opts->uring_no_usage) {
		((struct uring_conn *)c->priv)->no_usage_why = "not asked (--no-usage-report)";
		return 0;
	}
	return probe_usage_reports(c);
}

int uring_send_one(struct tcp_conn *c)
{
	struct uring_conn *u = c->priv;
	struct io_uring_sqe *sqe, *last = NULL;
	int n = 0, err;

	for (int i = 0; i < MSG_FIELDS; i++) {
		/* a message under 8 bytes leaves fields empty: no request for those */
		if (!c->msg.len[i])
			continue;
		if (!(sqe = io_uring_get_sqe(&u->ring)))
			return -EBUSY;
		if (u->zerocopy)
			io_uring_prep_send_zc(sqe, c->send_fd, c->msg.field[i], c->msg.len[i], MSG_WAITALL,
					      u->zc_flags);
		else
			io_uring_prep_send(sqe, c->send_fd, c->msg.field[i], c->msg.len[i], MSG_WAITALL);
		sqe->flags |= u->sqe_flags | IOSQE_IO_LINK;
		sqe->user_data = c->msg.len[i];
		last = sqe;
		n++;
	}
	if (last)
		last->flags &= ~IOSQE_IO_LINK;
	if ((err = io_uring_submit(&u->ring)) != n)
		return err < 0 ? err : -EAGAIN;
	return reap(c, n, MAX_NOTIFS_DUE, IO_TIMEOUT_MS);
}

/*
 * The kernel threads of this process whose names start with @prefix: SQPOLL threads
 * ("iou-sqp-PID", gone with their ring) or io-wq workers ("iou-wrk-TID", gone with the thread TID
 * they work for). Found in /proc/self/task, they are threads of this process's thread group: its
 * tgid is theirs, what they send its own. Read after the measured phase: /proc reads are reads.
 */
static int io_threads(const char *prefix)
{
	DIR *d = opendir("/proc/self/task");
	size_t n = strlen(prefix);
	struct dirent *e;
	char path[64], comm[32];
	int found = 0;

	for (int i = 0; d && i < 100000 && (e = readdir(d)); i++) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, prefix, n))
			found++;
		fclose(f);
	}
	if (d)
		closedir(d);
	return found;
}

int uring_finish(struct tcp_conn *c)
{
	struct uring_conn *u = c->priv;
	int err = reap(c, 0, 0, DRAIN_TIMEOUT_MS);

	if (err)
		return err;
	/* a completion parked on the overflow list escaped the tracer: the run is not exact */
	if ((IO_URING_READ_ONCE(*u->ring.sq.kflags) & IORING_SQ_CQ_OVERFLOW) || *u->ring.cq.koverflow)
		return -EOVERFLOW;
	return 0;
}

void uring_teardown(struct tcp_conn *c)
{
	struct uring_conn *u = c->priv;

	if (!u)
		return;
	io_uring_queue_exit(&u->ring);
	free(u);
	c->priv = NULL;
}

/* Copied-data counts are null where the notifications do not say, with the reason. */
static void zerocopy_report(json_object *r, struct tcp_conn *conns, int n, const struct uring_conn *u)
{
	bool usage_reports = u->usage_reports;
	struct zc_stats t = {};
	json_object *o = json_object_new_object();

	for (int i = 0; i < n; i++) {
		t.sends += conns[i].zc.sends;
		t.notices += conns[i].zc.notices;
		t.notices_copied += conns[i].zc.notices_copied;
		t.completed += conns[i].zc.completed;
		t.completed_copied += conns[i].zc.completed_copied;
	}
	json_object_object_add(o, "sends", json_object_new_uint64(t.sends));
	json_object_object_add(o, "notices", json_object_new_uint64(t.notices));
	json_object_object_add(o, "notices_copied", usage_reports ? json_object_new_uint64(t.notices_copied) : NULL);
	json_object_object_add(o, "completed", json_object_new_uint64(t.completed));
	json_object_object_add(o, "completed_copied",
			       usage_reports ? json_object_new_uint64(t.completed_copied) : NULL);
	json_object_object_add(o, "usage_reports", json_object_new_boolean(usage_reports));
	if (!usage_reports)
		json_object_object_add(o, "usage_reports_why", json_object_new_string(u->no_usage_why));
	json_object_object_add(r, WL_KEY_ZEROCOPY, o);
}

void uring_report(json_object *r, struct tcp_conn *conns, int n)
{
	struct uring_conn *u = n > 0 ? conns[0].priv : NULL;
	bool async = n > 0 && conns[0].opts->uring_async, sqpoll = n > 0 && conns[0].opts->uring_sqpoll;
	json_object *o = json_object_new_object();

	json_object_object_add(o, "async", json_object_new_boolean(async));
	json_object_object_add(o, "sqpoll", json_object_new_boolean(sqpoll));
	/*
	 * SQPOLL threads live as long as their ring, so they are still here; io-wq workers ended with
	 * the senders they worked for, and are for an observer during the run to see.
	 */
	json_object_object_add(o, "sqpoll_threads", sqpoll ? json_object_new_int(io_threads("iou-sqp-")) : NULL);
	json_object_object_add(r, "io_uring", o);
	if (u && u->zerocopy)
		zerocopy_report(r, conns, n, u);
}
