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
#include "tcpflows.bpf.h"

#define TALLY_FROZEN 1		/* this side's FIN is queued, or never will be: sent stops at sent_cap */
#define TALLY_FIN_READ 2	/* the peer's FIN was read: copied_seq passed its sequence number */
#define TALLY_BASE 4		/* the positions below are the base of every delta */
#define TALLY_SEQ 8		/* k_sent and k_received are known (read by a look past the handshake) */
#define TALLY_SEQ_LOCKED 16	/* ... and were read whole, under the socket's lock */

/* kinds of look: under the socket's lock or not (a sweep), past the handshake or not */
#define LOOK_LOCKED 1
#define LOOK_SEQ 2

/* orders the loads around it as written: the kernel stores these counters with no lock a sweep takes */
#define tcp_barrier() asm volatile("" ::: "memory")

/* Sets @bits in the socket's flags; a sweep's look and a state change's can meet. */
static __always_inline void tally_set(struct tcp_tally *t, __u64 bits)
{
#ifdef ZCT_COMPAT
	t->flags |= bits;
#else
	__sync_fetch_and_or(&t->flags, bits);
#endif
}

/* The send side's position now, read whole: under the socket's lock. */
static __always_inline __u64 tcp_sent_pos(struct tcp_sock *tp)
{
	__u64 acked = tp->bytes_acked;

	return acked + (__u32)(tp->write_seq - tp->snd_una);
}

/*
 * What the socket's positions moved since the last look, to its owner (held until one is known).
 * The SYN is behind the base; this side's FIN lies past sent_cap; the peer's FIN, where it was
 * read (SOCK_DONE, read first, and nothing unread), is taken off once.
 *
 * A look under the lock reads the counters whole. A sweep's does not: the kernel stores
 * bytes_acked, then snd_una (tcp_snd_una_update()), and bytes_received, then rcv_nxt, so a read
 * between the two would be off by that acknowledgement or segment. Each pair's difference k is
 * the same through a connection, though, so once k is known a sweep reads one 64-bit counter and,
 * after it, one sequence number: bytes_acked <= sent < bytes_acked + 2^31 and
 * sent = k_sent + write_seq modulo 2^32; the receive side alike, from copied_seq, then
 * bytes_received. The sweep that sets the base of a socket from before the census reads k itself,
 * from the same reads, maybe off by one acknowledgement: every later position is then off by the
 * same, so their deltas are exact, and the first look under the lock sets k right and moves the
 * base by the difference.
 */
static __always_inline void tcp_look_now(struct sock *sk, struct tcp_tally *t, int how, __u32 gen)
{
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	__u64 sent_now, recv_now, acked, received;
	__s64 nc_sent, nc_got;
	__u32 una = 0, wseq, rcv_nxt, copied, d;
	bool done, known = t->flags & TALLY_SEQ, by_k = known && !(how & LOOK_LOCKED);
	__s64 sent, got;

	if (!tp)
		return;
	tcp_barrier();
	if (by_k) {
		acked = tp->bytes_acked;
		tcp_barrier();
		wseq = tp->write_seq;
		copied = tp->copied_seq;
		tcp_barrier();
		rcv_nxt = tp->rcv_nxt;
		received = tp->bytes_received;
		/* out of range only where k is not this connection's: no move, this look */
		d = t->k_sent + wseq - (__u32)acked;
		sent_now = d < 1U << 31 ? acked + d : t->sent_pos;
		d = (__u32)received - (t->k_received + copied);
		recv_now = d < 1U << 31 && d <= received ? received - d : t->recv_pos;
	} else {
		/* snd_una before write_seq, copied_seq before rcv_nxt: neither difference below 0 */
		una = tp->snd_una;
		tcp_barrier();
		wseq = tp->write_seq;
		acked = tp->bytes_acked;
		copied = tp->copied_seq;
		tcp_barrier();
		rcv_nxt = tp->rcv_nxt;
		received = tp->bytes_received;
		sent_now = acked + (__u32)(wseq - una);
		recv_now = received - (__u32)(rcv_nxt - copied);
	}
	tcp_barrier();
	/* after the counters: a FIN that arrives in between is then seen unread, not read */
	done = sk->__sk_common.skc_flags & (1UL << SOCK_DONE);
	if (t->flags & TALLY_FROZEN && sent_now > t->sent_cap)
		sent_now = t->sent_cap;
	/* a connection begun while a sweep read (connect() again): the reading is not its own */
	if (!(how & LOOK_LOCKED) && *(volatile __u32 *)&t->gen != gen)
		return;
	if (!by_k && how & LOOK_SEQ) {
		__u32 ks = (__u32)acked - una, kr = (__u32)received - rcv_nxt;
		bool relook = known && how & LOOK_LOCKED && !(t->flags & TALLY_SEQ_LOCKED);

		if (relook) {
			/* a sweep read k: its positions are off by its error, and the base moves with them */
			t->sent_pos -= (__s64)(__s32)(t->k_sent - ks);
			t->recv_pos -= (__s64)(__s32)(t->k_received - kr);
		}
		/*
		 * A sweep reads k only where it sets the base from the same reads (its error then in
		 * both, and taken out together), and not at a base it caps (sent_cap holds no error).
		 */
		if (relook || (!known && (how & LOOK_LOCKED || !(t->flags & (TALLY_BASE | TALLY_FROZEN))))) {
			t->k_sent = ks;
			t->k_received = kr;
			tally_set(t, TALLY_SEQ | (how & LOOK_LOCKED ? TALLY_SEQ_LOCKED : 0));
		}
	}
	/* the bytes not copied up to the counters read (only where the census derives its copies) */
	nc_sent = tcp_nc_take(&t->nc_sent, &t->send_mark, wseq);
	nc_got = tcp_nc_take(&t->nc_received, &t->recv_mark, copied);
	if (!(t->flags & TALLY_BASE)) {
		/* ... behind the base, as the bytes they are part of */
		t->sent_pos = sent_now;
		t->recv_pos = recv_now;
		tally_set(t, TALLY_BASE | (done && rcv_nxt == copied ? TALLY_FIN_READ : 0));
		return;
	}
	sent = (__s64)(sent_now - t->sent_pos) + t->owe_sent;
	got = (__s64)(recv_now - t->recv_pos) + t->owe_received;
	if (done && rcv_nxt == copied && !(t->flags & TALLY_FIN_READ)) {
		got--;
		tally_set(t, TALLY_FIN_READ);
	}
	t->sent_pos = sent_now;
	t->recv_pos = recv_now;
	t->owe_sent = sent < 0 ? sent : 0;
	t->owe_received = got < 0 ? got : 0;
	if (sent < 0)
		sent = 0;
	if (got < 0)
		got = 0;
	if (!t->owner) {
		t->pend_sent += sent;
		t->pend_received += got;
		t->pend_nc_sent += nc_sent;
		t->pend_nc_received += nc_got;
		return;
	}
	tcp_credit(t->owner, sent + t->pend_sent, got + t->pend_received, nc_sent + t->pend_nc_sent,
		   nc_got + t->pend_nc_received, false);
	t->pend_sent = t->pend_received = t->pend_nc_sent = t->pend_nc_received = 0;
}

/* A new connection's base: zero positions, its SYN owed (also by a sweep its connect() met). */
static __always_inline void tcp_rebase_apply(struct tcp_tally *t)
{
	t->sent_pos = t->recv_pos = t->sent_cap = 0;
	/* a call's mark is in the old connection's sequence numbers: what it moved after is copied */
	t->send_mark = t->recv_mark = 0;
	t->owe_sent = t->syn_owed;
	t->owe_received = 0;
	t->flags = TALLY_BASE;
}

/*
 * One look at a time: a sweep (no socket lock) can meet a state change on another CPU, or be
 * interrupted by one on its own, and two looks from one base would count the same bytes twice.
 * The one that finds another under way leaves it to that one; a freeze it would have made is
 * already in sent_cap, which that look holds to.
 */
static __always_inline void tcp_look(struct sock *sk, struct tcp_tally *t, int how)
{
#ifdef ZCT_COMPAT
	/* no compare-and-swap: the compat object's kernels count TCP per call (tracer.c sets this aside) */
	tcp_look_now(sk, t, how, t->gen);
#else
	__u32 gen;

	if (__sync_val_compare_and_swap(&t->busy, 0, 1))
		return;
	gen = *(volatile __u32 *)&t->gen;
	tcp_look_now(sk, t, how, gen);
	/* a connection begun while this sweep wrote: the base its connect() set, set again */
	if (!(how & LOOK_LOCKED) && *(volatile __u32 *)&t->gen != gen)
		tcp_rebase_apply(t);
	__sync_lock_test_and_set(&t->busy, 0);
#endif
}

/*
 * A new connection on this socket (connect(), again too, or a passive child made): its positions
 * start at zero, the SYN at @syn (owed), under the socket's lock. A sweep that read the counters
 * across it drops its reading, or, had it written already, sets this base again.
 */
static __always_inline void tcp_rebase(struct tcp_tally *t, __s64 syn)
{
	t->syn_owed = syn;
	t->gen++;	/* under the socket's lock: only sweeps race it, and they only read it */
	tcp_barrier();
	tcp_rebase_apply(t);
}

/* Whether a socket in @state is past its handshake: its sequence numbers are its connection's. */
static __always_inline bool tcp_past_handshake(int state)
{
	return state == TCP_ESTABLISHED || state == TCP_FIN_WAIT1 || state == TCP_FIN_WAIT2 ||
	       state == TCP_CLOSE_WAIT || state == TCP_LAST_ACK || state == TCP_CLOSING;
}

static __always_inline bool tcp_counted(struct sock *sk)
{
	return tcp_counters && sk->sk_protocol == IPPROTO_TCP;
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(tcp_state_btf, struct sock *sk, int oldstate, int newstate)
{
	bool opening = newstate == TCP_SYN_SENT || (newstate == TCP_SYN_RECV && oldstate != TCP_SYN_SENT);
	struct tcp_tally *t;
	struct tcp_sock *tp;

	if (!tcp_counted(sk))
		return 0;
	/* a connection opening, or met at ESTABLISHED with no storage yet, makes the storage */
	t = bpf_sk_storage_get(&tcp_tallies, sk, 0, opening || newstate == TCP_ESTABLISHED ?
			       BPF_SK_STORAGE_GET_F_CREATE : 0);
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
	/*
	 * connect() (the first, or again after a failed one or connect(AF_UNSPEC), which zero the
	 * counters) and a passive child as it is made: zero positions, before the sequence numbers
	 * exist. The active side's SYN will be acknowledged as a byte, so it is owed; data sent
	 * with the SYN (TCP Fast Open) counts.
	 */
	if (newstate == TCP_SYN_SENT) {
		tcp_rebase(t, -1);
		return 0;
	}
	if (newstate == TCP_SYN_RECV && oldstate != TCP_SYN_SENT) {
		if (!(t->flags & TALLY_BASE))
			tcp_rebase(t, 0);
		return 0;
	}
	/* this side's FIN is queued right after this change, or never will be: sent stops here */
	if ((newstate == TCP_FIN_WAIT1 || newstate == TCP_LAST_ACK || newstate == TCP_CLOSE) &&
	    !(t->flags & TALLY_FROZEN) && (tp = bpf_skc_to_tcp_sock(sk))) {
		/*
		 * Closed from SYN_SENT before its SYN was queued (a Fast Open connect never written
		 * to, a connect() that failed after SYN_SENT): the sequence numbers are left over from
		 * before, and nothing was sent. tcp_connect() sets snd_nxt to write_seq as it queues it.
		 */
		if (oldstate == TCP_SYN_SENT && tp->snd_nxt != tp->write_seq) {
			t->sent_cap = 0;
			t->owe_sent = 0;
			tally_set(t, TALLY_FROZEN);
			return 0;
		}
		t->sent_cap = tcp_sent_pos(tp);
		tally_set(t, TALLY_FROZEN);
	}
	tcp_look(sk, t, LOOK_LOCKED |
		 (tcp_past_handshake(oldstate) || tcp_past_handshake(newstate) ? LOOK_SEQ : 0));
	return 0;
}

/* The socket's end, after its last call: the last look, and what no owner took. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(tcp_destroy_btf, struct sock *sk)
{
	struct tcp_tally *t;

	if (!tcp_counted(sk) || !(t = bpf_sk_storage_get(&tcp_tallies, sk, 0, 0)))
		return 0;
	/* close() of a socket already CLOSE (reset by its peer) destroys it in the closer's call */
	if (!t->owner && sk->sk_lock.owned)
		t->owner = bpf_get_current_pid_tgid() >> 32;
	/* not a look at k: a connection dropped by connect(AF_UNSPEC) has its counters zeroed */
	tcp_look(sk, t, LOOK_LOCKED);
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
	int state, how;

	if (!task || !file || !tcp_counters || !(sock = bpf_sock_from_file(file)) || !(sk = sock->sk) ||
	    sk->sk_protocol != IPPROTO_TCP)
		return 0;
	state = sk->__sk_common.skc_state;
	if (state == TCP_LISTEN || state == TCP_SYN_SENT || state == TCP_NEW_SYN_RECV)
		return 0;
	/* a socket already CLOSE is looked at if it has storage (its data may still be read), never made one */
	if (!(t = bpf_sk_storage_get(&tcp_tallies, sk, 0, state == TCP_CLOSE ? 0 : BPF_SK_STORAGE_GET_F_CREATE)))
		return 0;
	tgid = task->tgid;
	how = tcp_past_handshake(state) ? LOOK_SEQ : 0;
	/* first met here, from before the census: past this side's FIN, nothing more is sent */
	if (!(t->flags & TALLY_BASE) && state != TCP_ESTABLISHED && state != TCP_CLOSE_WAIT && state != TCP_SYN_RECV)
		tally_set(t, TALLY_FROZEN);
	if (!t->owner)
		t->owner = tgid;
	if (tgid != t->owner && t->owner_sweep + 1 < tcp_sweep) {
		tcp_look(sk, t, how);
		t->owner = tgid;
	}
	if (tgid == t->owner)
		t->owner_sweep = tcp_sweep;
	else
		t->other_sweep = tcp_sweep;
	tcp_look(sk, t, how);
	if (t->owner_sweep == tcp_sweep && t->other_sweep == tcp_sweep)
		tcp_credit(t->owner, 0, 0, 0, 0, true);
	return 0;
}
