/*
 * udp-zerocopy: SO_ZEROCOPY + sendmsg(MSG_ZEROCOPY) of --size datagrams over UDP, completion
 * notices reaped from MSG_ERRQUEUE as tcp-zerocopy does; with --gso each send leaves as datagrams
 * of SEGMENT bytes. The pages are pinned at the send; on loopback and veth the kernel copies them
 * when the datagram is delivered, and the notices say COPIED.
 */
#include <errno.h>
#include <sys/socket.h>
#include "udpwl.h"

#define DRAIN_TIMEOUT_MS 10000

static int setup(struct udp_pair *p)
{
	int one = 1;

	return setsockopt(p->send_fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)) ? -errno : 0;
}

static int send_one(struct udp_pair *p)
{
	int err;

	/* ENOBUFS: the pinned-page budget (optmem, RLIMIT_MEMLOCK) is full: reap, then again */
	while ((err = udp_send(p, MSG_ZEROCOPY)) == -ENOBUFS && p->zc.completed < p->zc.sends)
		if ((err = zc_wait_all(p->send_fd, &p->zc, DRAIN_TIMEOUT_MS)))
			return err;
	if (err)
		return err;
	p->zc.sends++;
	return zc_drain(p->send_fd, &p->zc) < 0 ? -EPROTO : 0;
}

static int finish(struct udp_pair *p)
{
	return zc_wait_all(p->send_fd, &p->zc, DRAIN_TIMEOUT_MS);
}

static void report(json_object *r, struct udp_pair *pairs, int n)
{
	struct zc_stats t = {};

	for (int i = 0; i < n; i++)
		zc_sum(&t, &pairs[i].zc);
	json_object_object_add(r, WL_KEY_ZEROCOPY, zc_json(&t));
}

int main(int argc, char **argv)
{
	static const struct udp_workload w = {
		.name = "udp-zerocopy", .setup = setup, .send_one = send_one, .finish = finish,
		.report = report, .whole_packets = true,
	};

	return udp_workload_main(argc, argv, &w);
}
