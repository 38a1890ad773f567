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

/*
 * A socket's positions: how far each side has got, in bytes, as 64-bit numbers that never wrap.
 * Sent: bytes_acked + (write_seq - snd_una), the acknowledged bytes and those queued after them;
 * received: bytes_received - (rcv_nxt - copied_seq), the arrived bytes less those not read yet.
 */
struct tcp_tally {
	__u32 owner;		/* its process: the one that connected, closed it, or held it in a sweep */
	__u32 gen;		/* connections begun on it: a sweep's look across one is dropped */
	__u32 k_sent;		/* bytes_acked - snd_una and bytes_received - rcv_nxt, modulo 2^32: each */
	__u32 k_received;	/* ... pair moves together, so these hold through a connection */
	__u64 flags;		/* set by atomic or: a sweep and a state change can meet */
	__u64 sent_pos;		/* the positions at the last look */
	__u64 recv_pos;
	__u64 sent_cap;		/* the send side's position where it froze (TALLY_FROZEN) */
	__s64 owe_sent;		/* a look that read the counters mid-change can come out short or */
	__s64 owe_received;	/* ... over: the difference goes into the next, so the looks add up */
	__u64 pend_sent;	/* moved before any owner was known */
	__u64 pend_received;
	__u64 owner_sweep;	/* the last sweep that found its owner holding it */
	__u64 other_sweep;	/* ... and another process */
	__u64 busy;		/* a look is under way */
	__s64 syn_owed;		/* the SYN the connection begun last owes (tcp_rebase()) */
	/*
	 * Where the census takes TCP's copies from these counters (tcp_derived): the bytes taken or
	 * given with no copy since the last look (pinned; page-referenced or spliced out, up to the
	 * mark of a call under way), added to the owner at the look with the bytes they are part of.
	 */
	__u64 nc_sent;		/* (as two's complement: a return can take back a share for a moment) */
	__u64 nc_received;
	__u64 send_mark;	/* 1 << 32 | write_seq up to which a call under way was taken; 0: none */
	__u64 recv_mark;	/* ... copied_seq, alike */
	__s64 pend_nc_sent;	/* not copied, moved before any owner was known */
	__s64 pend_nc_received;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tcp_tally);
} tcp_tallies SEC(".maps");

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

static __always_inline void tcp_credit(__u32 tgid, __u64 sent, __u64 received, __s64 nc_sent,
					__s64 nc_received, bool shared)
{
	struct tcp_flow *f;

	if ((!sent && !received && !nc_sent && !nc_received && !shared) || !(f = tcp_flow_of(tgid)))
		return;
	/* not copied first: a census read between the adds never counts those bytes as copies */
	if (nc_sent)
		__sync_fetch_and_add(&f->sent_not_copied, nc_sent);
	if (nc_received)
		__sync_fetch_and_add(&f->received_not_copied, nc_received);
	__sync_fetch_and_add(&f->sent, sent);
	__sync_fetch_and_add(&f->received, received);
	if (shared)
		f->shared_sweep = tcp_sweep;
}

/*
 * Bytes TCP took from a socket's process, or gave it, with no copy, where the census takes TCP's
 * copies from the sockets' counters (tcp_derived): the census's copies are what the counters moved
 * less these (census.c). They are the socket's own, added to its owner at the same look as the
 * bytes they are part of (tcp_look_now()), so a socket that moves between processes, or a call
 * that blocks, leaves every other socket's copies as they are.
 *
 * A pin is counted as it is made, before write_seq moves past its bytes. A call that takes page
 * references or splices out (sendfile, splice) moves its socket's counter many times before it
 * returns: its entry opens a mark at the counter, and each look, then its return, takes what the
 * counter moved past the mark as not copied, and moves the mark there. An exit whose entry was
 * not seen (a call under way as the census began) finds no mark and takes nothing.
 */
static __always_inline bool tcp_derives(int dir)
{
	return tcp_derived & dir;
}

static __always_inline struct tcp_tally *tcp_tally_of(struct sock *sk)
{
	return bpf_sk_storage_get(&tcp_tallies, sk, 0, 0);
}

/* Bytes pinned on @sk (MSG_ZEROCOPY). */
static __always_inline void tcp_not_copied(struct sock *sk, int dir, __u64 bytes)
{
	struct tcp_tally *t;

	if (!bytes || !tcp_derives(dir) || !(t = tcp_tally_of(sk)))
		return;
	__sync_fetch_and_add(dir == TCP_DERIVED_SEND ? &t->nc_sent : &t->nc_received, bytes);
}

/* A call's mark opened at sequence @seq: one at a time a socket and side, the first kept. */
static __always_inline void tcp_mark_open(__u64 *mark, __u32 seq)
{
#ifndef ZCT_COMPAT
	__sync_val_compare_and_swap(mark, 0, 1ULL << 32 | seq);
#endif
}

/* What the counter moved from @from (a mark) to @to; none where it did not move past it. */
static __always_inline __s64 tcp_mark_moved(__u64 from, __u32 to)
{
	__s32 d = (__s32)(to - (__u32)from);

	return from >> 32 && d > 0 ? d : 0;
}

/*
 * A look's share of a call under way: what the counter moved past the mark, up to @to, and the
 * mark moved there. A look and the call's return can meet: each byte past the mark goes to one.
 */
static __always_inline __s64 tcp_mark_take(__u64 *mark, __u32 to)
{
#ifndef ZCT_COMPAT
	for (int i = 0; i < 4; i++) {
		__u64 old = *(volatile __u64 *)mark;
		__s64 d = tcp_mark_moved(old, to);

		if (!d)
			return 0;
		if (__sync_val_compare_and_swap(mark, old, 1ULL << 32 | to) == old)
			return d;
	}
#endif
	return 0;
}

/* The counter of side @dir of TCP socket @sk (write_seq or copied_seq) in @seq; false if not TCP. */
static __always_inline bool tcp_seq_of(struct sock *sk, int dir, __u32 *seq)
{
	struct tcp_sock *tp = sk ? bpf_skc_to_tcp_sock(sk) : NULL;

	if (!tp)
		return false;
	*seq = dir == TCP_DERIVED_SEND ? tp->write_seq : tp->copied_seq;
	return true;
}

/* A page-referencing send or a splice out begins on @sk: its mark at the counter now. */
static __always_inline void tcp_call_begins(struct sock *sk, int dir)
{
	struct tcp_tally *t;
	__u32 seq;

	if (tcp_derives(dir) && tcp_seq_of(sk, dir, &seq) && (t = tcp_tally_of(sk)))
		tcp_mark_open(dir == TCP_DERIVED_SEND ? &t->send_mark : &t->recv_mark, seq);
}

/*
 * ... and returns: what its counter moved since its mark, not copied. Added before the
 * mark is taken away, so that a look in between never finds the bytes in neither place: one that
 * moved the mark meanwhile took its share itself, and that share comes off again (a look can find
 * it twice for a moment, never later than the bytes). Whether a mark was open.
 */
static __always_inline bool tcp_call_ends(struct sock *sk, int dir)
{
#ifdef ZCT_COMPAT
	return false;	/* no exchange: the compat object's kernels count TCP per call */
#else
	struct tcp_tally *t;
	__u64 *mark, *nc, old, last;
	__u32 seq;

	if (!tcp_derives(dir) || !tcp_seq_of(sk, dir, &seq) || !(t = tcp_tally_of(sk)))
		return false;
	mark = dir == TCP_DERIVED_SEND ? &t->send_mark : &t->recv_mark;
	nc = dir == TCP_DERIVED_SEND ? &t->nc_sent : &t->nc_received;
	old = *(volatile __u64 *)mark;
	if (!(old >> 32))
		return false;
	__sync_fetch_and_add(nc, tcp_mark_moved(old, seq));
	last = __sync_lock_test_and_set(mark, 0);
	if (last != old)
		__sync_fetch_and_add(nc, tcp_mark_moved(last, seq) - tcp_mark_moved(old, seq));
	return true;
#endif
}

/* A look's share: the bytes not copied since the last look, up to the counter it read (@seq). */
static __always_inline __s64 tcp_nc_take(__u64 *nc, __u64 *mark, __u32 seq)
{
#ifdef ZCT_COMPAT
	return 0;
#else
	/* the mark first: a return adds to nc before it takes the mark away */
	__s64 d = tcp_mark_take(mark, seq);

	return d + (__s64)__sync_lock_test_and_set(nc, 0);
#endif
}

#endif
