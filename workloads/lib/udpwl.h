/*
 * The UDP harness of the udp-* workloads: --threads socket pairs, a sender and a receiver thread
 * each, the receivers in this process, a child process, or a child in the receiver's network
 * namespace. UDP drops what a receiver has no room for, so each sender stays at most a window of
 * datagrams ahead of its receiver, which says how far it got through memory both processes map.
 */
#ifndef UDPWL_H
#define UDPWL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "wl.h"
#include "zcnotice.h"

struct udp_flow;

/* One socket pair's sending side. */
struct udp_pair {
	int index;
	int send_fd;
	const struct wl_opts *opts;
	char *msg;			/* --size bytes */
	uint64_t sent, messages;	/* bytes and send calls */
	uint64_t datagrams;		/* datagrams those sends made (--gso: several a send) */
	struct lat_hist lat;
	struct zc_stats zc;
	struct udp_flow *flow;		/* shared with the receiver */
	int err;			/* first errno seen, 0 if none */
	const char *err_what;		/* a string literal */
};

struct udp_workload {
	const char *name;
	int (*setup)(struct udp_pair *p);	/* before the measured phase; 0 or -errno */
	int (*send_one)(struct udp_pair *p);	/* one --size send; 0 or -errno */
	int (*finish)(struct udp_pair *p);	/* after the last send */
	void (*report)(json_object *result, struct udp_pair *pairs, int n);
	bool whole_packets;	/* every datagram must fit one packet: none IP-fragmented */
};

int udp_workload_main(int argc, char **argv, const struct udp_workload *w);

/* Sends the pair's message with @flags, whole: 0 or -errno (-ETIMEDOUT: the send timed out). */
int udp_send(struct udp_pair *p, int flags);
/* Datagrams one send of @o->size bytes makes. */
uint64_t udp_datagrams_per_send(const struct wl_opts *o);

#endif
