// SPDX-License-Identifier: GPL-2.0
/*
 * Each process's TCP bytes in the census (tcp_flows): what its sockets' counters moved
 * (tcpcount.bpf.c), and, where the census takes its TCP copies from those counters
 * (tcp_derived), what TCP took from it or gave it without a copy (send.bpf.c, recv.bpf.c).
 */
#ifndef TCPFLOWS_BPF_H
#define TCPFLOWS_BPF_H

#include "common.bpf.h"
#include "settings.bpf.h"

/*
 * Each process's TCP bytes since the census started (the census sizes it, reads it each read, and
 * removes a process that is gone). Not an LRU: a process's entry is never lost to another's;
 * one that finds no room is counted in tcp_flows_dropped.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcp_flow);
} tcp_flows SEC(".maps");

/* user space: the sweep now running (each census read begins one) */
__u64 tcp_sweep = 0;
/* bytes of sockets that ended with no owner ever known, and flows that did not fit tcp_flows */
__u64 tcp_unowned_sent = 0, tcp_unowned_received = 0, tcp_flows_dropped = 0;

/* @tgid's flow, made where it has none; NULL (counted in tcp_flows_dropped) where none fits. */
static __always_inline struct tcp_flow *tcp_flow_of(__u32 tgid)
{
	struct tcp_flow *f = bpf_map_lookup_elem(&tcp_flows, &tgid), zero = {};

	if (f)
		return f;
	bpf_map_update_elem(&tcp_flows, &tgid, &zero, BPF_NOEXIST);
	f = bpf_map_lookup_elem(&tcp_flows, &tgid);
	if (!f)
		__sync_fetch_and_add(&tcp_flows_dropped, 1);
	return f;
}

static __always_inline void tcp_credit(__u32 tgid, __u64 sent, __u64 received, bool shared)
{
	struct tcp_flow *f;

	if ((!sent && !received && !shared) || !(f = tcp_flow_of(tgid)))
		return;
	__sync_fetch_and_add(&f->sent, sent);
	__sync_fetch_and_add(&f->received, received);
	if (shared)
		f->shared_sweep = tcp_sweep;
}

/*
 * Bytes TCP took from the current process, or gave it, without a copy (pinned, page-referenced,
 * spliced out): where the census takes its TCP copies from the sockets' counters, they are what
 * those counters moved less these (census.c). A splice call moves the counters before it returns:
 * its entry adds what it was asked to move, its return what it moved less that, in one add each,
 * so a census read inside it never counts those bytes as copies.
 */
static __always_inline void tcp_not_copied(__s64 sent, __s64 received)
{
	struct tcp_flow *f;

	if (!(tcp_derived & TCP_DERIVED_SEND))
		sent = 0;
	if (!(tcp_derived & TCP_DERIVED_RECV))
		received = 0;
	if ((!sent && !received) || !(f = tcp_flow_of(current_tgid())))
		return;
	if (sent)
		__sync_fetch_and_add(&f->sent_not_copied, sent);
	if (received)
		__sync_fetch_and_add(&f->received_not_copied, received);
}

#endif
