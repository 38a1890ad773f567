// SPDX-License-Identifier: GPL-2.0
/*
 * The census's TCP bytes from each socket's own counters, with no program on a send or a
 * receive: the bytes a process gave TCP to send (write_seq: copied, pinned or page-referenced)
 * and the bytes TCP gave it (copied_seq: read, spliced or mapped; a MSG_PEEK moves neither).
 * Each socket keeps, in its storage, the counters as last looked at; a look adds what they moved
 * since to the socket's owner (tcp_flows). Looks come at each census read (a task_file iterator
 * over every process's descriptors, in every network namespace), at each state change
 * (inet_sock_set_state) and at the socket's end (tcp_destroy_sock), so a socket that opens and
 * closes between two reads is counted whole.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone).
 */
#include "common.bpf.h"
#include "settings.bpf.h"

#define TALLY_FROZEN 1		/* this side's FIN is queued, or never will be: nothing more is sent */
#define TALLY_FIN_READ 2	/* the peer's FIN was read: copied_seq passed its sequence number */
#define TALLY_BASE 4		/* the counters were looked at once: the base of every delta */
#define TALLY_SHARED 8		/* held by another process beside its owner at the last sweep */

struct tcp_tally {
	__u32 owner;		/* its process: the one that connected, closed it, or held it in a sweep */
	__u32 flags;
	__u64 acked;		/* bytes_acked (64 bits: past every wrap of the 32-bit sequence) */
	__u64 received;		/* bytes_received */
	__u32 unacked;		/* write_seq - snd_una: taken, not yet acknowledged */
	__u32 unread;		/* rcv_nxt - copied_seq: arrived, not yet given */
	__u64 pend_sent;	/* moved before any owner was known */
	__u64 pend_received;
	__s64 owe_sent;		/* a look that read the counters mid-change can come out below the last: */
	__s64 owe_received;	/* ... owed, and taken off the next, so that the looks add up exactly */
	__u64 busy;		/* a look is under way (a sweep and a state change can meet) */
	__u64 owner_sweep;	/* the last sweep that found its owner holding it */
	__u64 other_sweep;	/* ... and another process */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tcp_tally);
} tcp_tallies SEC(".maps");

/* Each process's TCP bytes since the census started (the census sizes it, and reads it each read). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcp_flow);
} tcp_flows SEC(".maps");

/* user space: the sweep now running (each census read begins one) */
__u64 tcp_sweep = 0;
/* bytes of sockets that ended with no owner ever known, and flows that did not fit tcp_flows */
__u64 tcp_unowned_sent = 0, tcp_unowned_received = 0, tcp_flows_dropped = 0;

static __always_inline void tcp_credit(__u32 tgid, __u64 sent, __u64 received, bool shared)
{
	struct tcp_flow *f, zero = {};

	if (!sent && !received && !shared)
		return;
	f = bpf_map_lookup_elem(&tcp_flows, &tgid);
	if (!f) {
		bpf_map_update_elem(&tcp_flows, &tgid, &zero, BPF_NOEXIST);
		f = bpf_map_lookup_elem(&tcp_flows, &tgid);
		if (!f) {
			__sync_fetch_and_add(&tcp_flows_dropped, 1);
			return;
		}
	}
	__sync_fetch_and_add(&f->sent, sent);
	__sync_fetch_and_add(&f->received, received);
	if (shared)
		f->shared_sweep = tcp_sweep;
}

/*
 * What the socket's counters moved since the last look, to its owner (held until one is known).
 * Sent: bytes_acked grew by what the peer acknowledged, and the unacknowledged span by what is
 * new in it; no 32-bit wrap can hide 4 GiB between two looks. Received alike, by bytes_received
 * and the unread span. The SYN is behind the first look (made at ESTABLISHED), this side's FIN
 * after the freeze, and the peer's FIN, where it was read, is taken off once.
 */
static __always_inline void tcp_look_now(struct sock *sk, struct tcp_tally *t)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	__u64 acked, received;
	__u32 unacked, unread;
	__s64 sent, got;
	bool fin_in;

	if (!tp)
		return;
	acked = tp->bytes_acked;
	received = tp->bytes_received;
	unacked = tp->write_seq - tp->snd_una;
	unread = tp->rcv_nxt - tp->copied_seq;
	/* SOCK_DONE: the peer's FIN arrived; nothing unread: it was read too */
	fin_in = (sk->__sk_common.skc_flags & (1UL << SOCK_DONE)) && !unread;
	if (!(t->flags & TALLY_BASE)) {
		t->flags |= TALLY_BASE | (fin_in ? TALLY_FIN_READ : 0);
		sent = got = 0;
	} else {
		sent = (__s64)(acked - t->acked) + (__s64)unacked - (__s64)t->unacked;
		got = (__s64)(received - t->received) - ((__s64)unread - (__s64)t->unread);
		if (fin_in && !(t->flags & TALLY_FIN_READ)) {
			got--;
			t->flags |= TALLY_FIN_READ;
		}
	}
	t->acked = acked;
	t->received = received;
	t->unacked = unacked;
	t->unread = unread;
	/* the counters were read one by one: what one look comes short by, the next makes up */
	sent += t->owe_sent;
	got += t->owe_received;
	t->owe_sent = sent < 0 && !(t->flags & TALLY_FROZEN) ? sent : 0;
	t->owe_received = got < 0 ? got : 0;
	if (t->flags & TALLY_FROZEN || sent < 0)
		sent = 0;
	if (got < 0)
		got = 0;
	if (!t->owner) {
		t->pend_sent += sent;
		t->pend_received += got;
		return;
	}
	tcp_credit(t->owner, sent + t->pend_sent, got + t->pend_received, false);
	t->pend_sent = t->pend_received = 0;
}

/*
 * One look at a time: a sweep (no socket lock) can meet a state change or the socket's end on
 * another CPU, and two looks from one snapshot would count the same bytes twice. The one that
 * finds another under way leaves it to that one, which reads the counters as they are now.
 */
static __always_inline void tcp_look(struct sock *sk, struct tcp_tally *t)
{
#ifdef ZCT_COMPAT
	/* no compare-and-swap: the compat object's kernels count TCP per call (tracer.c sets this aside) */
	tcp_look_now(sk, t);
#else
	if (__sync_val_compare_and_swap(&t->busy, 0, 1))
		return;
	tcp_look_now(sk, t);
	asm volatile("" ::: "memory");
	t->busy = 0;
#endif
}

static __always_inline bool tcp_counted(struct sock *sk)
{
	return tcp_counters && sk->sk_protocol == IPPROTO_TCP;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_state_btf, struct sock *sk, int oldstate, int newstate)
{
	struct tcp_tally *t;

	if (!tcp_counted(sk))
		return 0;
	/* connect() and the base at ESTABLISHED (the SYN behind it) make the storage; nothing else does */
	t = bpf_sk_storage_get(&tcp_tallies, sk, 0,
			       newstate == TCP_SYN_SENT || newstate == TCP_ESTABLISHED ? BPF_SK_STORAGE_GET_F_CREATE : 0);
	if (!t)
		return 0;
	/*
	 * A change made by a task that holds the socket's lock (connect, shutdown, close, or the
	 * backlog it runs as it lets go) is made in a call on this socket: the task's process is
	 * the owner, where none is known yet. Changes in softirq hold no owner's lock.
	 */
	if (!t->owner && sk->sk_lock.owned) {
		t->owner = bpf_get_current_pid_tgid() >> 32;
		t->owner_sweep = tcp_sweep;	/* as if the sweep under way had found it */
	}
	if (newstate == TCP_SYN_SENT)
		return 0;	/* the sequence numbers are not chosen yet */
	tcp_look(sk, t);
	/* this side's FIN is queued right after this change, or never will be */
	if (newstate == TCP_FIN_WAIT1 || newstate == TCP_LAST_ACK || newstate == TCP_CLOSE)
		t->flags |= TALLY_FROZEN;
	return 0;
}

/* The socket's end, after its last call: the last look, and what no owner took. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(tcp_destroy_btf, struct sock *sk)
{
	struct tcp_tally *t;

	if (!tcp_counted(sk) || !(t = bpf_sk_storage_get(&tcp_tallies, sk, 0, 0)))
		return 0;
	tcp_look(sk, t);
	if (t->pend_sent || t->pend_received) {
		__sync_fetch_and_add(&tcp_unowned_sent, t->pend_sent);
		__sync_fetch_and_add(&tcp_unowned_received, t->pend_received);
	}
	bpf_sk_storage_delete(&tcp_tallies, sk);
	return 0;
}

/*
 * A census read's sweep over every process's descriptors: each TCP socket looked at, and its owner
 * found. A socket whose owner held it in no sweep since the last, while another process holds it
 * now, has moved: its bytes so far go to the old owner, and from here to the new. One held by its
 * owner and another at once is counted once, to the owner, and flagged.
 */
SEC("iter/task_file")
int tcp_sweep_iter(struct bpf_iter__task_file *ctx)
{
	struct task_struct *task = ctx->task;
	struct file *file = ctx->file;
	struct tcp_tally *t;
	struct socket *sock;
	struct sock *sk;
	__u32 tgid;
	int state;

	if (!task || !file || !tcp_counters || !(sock = bpf_sock_from_file(file)) || !(sk = sock->sk) ||
	    sk->sk_protocol != IPPROTO_TCP)
		return 0;
	state = sk->__sk_common.skc_state;
	if (state == TCP_LISTEN || state == TCP_CLOSE || state == TCP_SYN_SENT || state == TCP_NEW_SYN_RECV)
		return 0;
	if (!(t = bpf_sk_storage_get(&tcp_tallies, sk, 0, BPF_SK_STORAGE_GET_F_CREATE)))
		return 0;
	tgid = task->tgid;
	/* first met here: no FIN of this side can come after a base taken past ESTABLISHED */
	if (!(t->flags & TALLY_BASE) && state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT)
		t->flags |= TALLY_FROZEN;
	if (!t->owner)
		t->owner = tgid;
	if (tgid != t->owner && t->owner_sweep + 1 < tcp_sweep) {
		tcp_look(sk, t);
		t->owner = tgid;
	}
	if (tgid == t->owner)
		t->owner_sweep = tcp_sweep;
	else
		t->other_sweep = tcp_sweep;
	tcp_look(sk, t);
	if (t->owner_sweep == tcp_sweep && t->other_sweep == tcp_sweep)
		tcp_credit(t->owner, 0, 0, true);
	return 0;
}
