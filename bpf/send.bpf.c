// SPDX-License-Identifier: GPL-2.0
/*
 * TCP send sites and the pins: send_copy, zc_pin, splice_ref. tp_btf tcp_sendmsg_locked per loop
 * iteration, fentry/fexit or kprobe/kretprobe tcp_sendmsg_locked per call, and the kernel's own pin
 * and page-reference helpers, TCP's and UDP's.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "tcpflows.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "slots.bpf.h"
#include "boundary.bpf.h"
#include "sock.bpf.h"
#include "iocall.bpf.h"
#include "send.bpf.h"

/* ---- send side through tracepoints ---------------------------------------------------------- */

/* The ubuf_info a caller brings for its zerocopy send (io_uring SEND_ZC, 6.0+), or 0. */
static __always_inline __u64 msg_ubuf(bool btf, const struct msghdr *msg)
{
	if (!bpf_core_field_exists(msg->msg_ubuf))
		return 0;
	return (__u64)READ_FIELD(btf, msg, msg_ubuf);
}

/* The same decision tcp_sendmsg_locked() takes before its loop. */
static __always_inline __u32 send_mode(bool btf, const struct sock *sk, const struct msghdr *msg)
{
	__u32 flags = READ_FIELD(btf, msg, msg_flags);
	__u64 route_sg = READ_FIELD(btf, sk, sk_route_caps) & 1;	/* NETIF_F_SG is bit 0 */

	if (flags & ZCT_MSG_ZEROCOPY) {
		unsigned long sk_flags = READ_FIELD(btf, sk, __sk_common.skc_flags);

		if ((msg_ubuf(btf, msg) || (sk_flags >> bpf_core_enum_value(enum sock_flags, SOCK_ZEROCOPY)) & 1)
		    && route_sg)
			return SEND_MODE_ZEROCOPY;
		return SEND_MODE_COPY;
	}
	if ((flags & ZCT_MSG_SPLICE_PAGES) && route_sg)
		return SEND_MODE_SPLICE;
	return SEND_MODE_COPY;
}

static __always_inline __u32 mode_site(__u32 mode)
{
	if (mode == SEND_MODE_ZEROCOPY)
		return SITE_ZC_PIN;
	if (mode == SEND_MODE_SPLICE)
		return SITE_SPLICE_REF;
	return SITE_SEND_COPY;
}

/*
 * A zerocopy send call's bytes, kept for its completion. MSG_ZEROCOPY's by the socket's
 * notification id (sk_zckey, the call's own); a ubuf_info the caller brings (io_uring) leaves that
 * counter alone, so its calls are kept under the ubuf_info its notification carries instead.
 */
static __always_inline void keep_zc_call(__u64 sk, __u32 zc_id, __u64 ubuf, __u32 tgid, __u64 bytes)
{
	struct zc_owner *owner;
	struct zc_sum sum;
	__u32 life;

	if (ubuf) {
		owner = note_ubuf(ubuf, tgid);
		if (owner) {
			__sync_fetch_and_add(&owner->sends, 1);
			__sync_fetch_and_add(&owner->bytes, bytes);
		} else {
			__sync_fetch_and_add(&misc.zc_calls_dropped, 1);
		}
		return;
	}
	/* kept for its notice, where the notices are followed (not by the census) */
	if (!zc_notices_on)
		return;
	life = zc_sock_life(sk);
	if (zc_sum_at(sk, life, zc_id, bytes, &sum) || zc_keep_sum(sk, life, zc_id, &sum))
		__sync_fetch_and_add(&misc.zc_calls_dropped, 1);
}

/* Inline: sock_send_length_btf counts once per TCP send; the loop's chunks are the others'. */
static __always_inline void record_send_chunk(struct task_struct *task, __u32 tgid, __u32 mode, __u64 bytes)
{
	__u32 site = mode_site(mode);

	if (bytes && site_uses(site, METHOD_TP_BTF))
		record_inline(task, tgid, site, bytes, METHOD_TP_BTF);
}

/*
 * Only an skb of a MSG_ZEROCOPY call can carry a ubuf_info (io_uring's SEND_ZC sets the flag too):
 * the sockets of the others need not be noted.
 */
static __always_inline void note_zc_sock(const struct sock *sk, const struct msghdr *msg, bool btf, __u32 tgid)
{
	if (READ_FIELD(btf, msg, msg_flags) & ZCT_MSG_ZEROCOPY)
		note_sock(sk, tgid);
}

/* Set once the loop below follows a call: until then no thread has one open (sock_send_length_btf). */
__u32 loop_calls_seen = 0;

/*
 * Fires at the head of every loop iteration of tcp_sendmsg_locked(); each iteration moves one
 * chunk (one copy, one pin or one set of page references), seen as the drop of msg_data_left().
 * Only a call that pins or references pages is followed chunk by chunk: one that copies is one
 * copy of what it returned (sock_send_length_btf), as fexit counts it on other kernels.
 */
SEC("tp_btf/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg_locked_btf, const struct sock *sk, const struct msghdr *msg,
	     const struct sk_buff *skb, int size_goal)
{
	struct task_struct *task;
	struct send_call *call;
	__u64 left;
	__u32 tgid;

	/* a call that can only copy is counted whole where it returns (sock_send_length_btf) */
	if (!(msg->msg_flags & (ZCT_MSG_ZEROCOPY | ZCT_MSG_SPLICE_PAGES)))
		return 0;
	task = current_task();
	tgid = TASK_READ(task, tgid);
	if (!is_target_memo(tgid))
		return 0;
	left = msg->msg_iter.count;
	call = TASK_STATE(send_call_task, task, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!call) {
		__sync_fetch_and_add(&misc.send_calls_dropped, 1);
		return 0;
	}
	if (call->sk != (__u64)sk || call->msg != (__u64)msg) {
		struct send_call fresh = {
			.sk = (__u64)sk,
			.msg = (__u64)msg,
			.start_left = left,
			.last_left = left,
			.mode = send_mode(true, sk, msg),
		};

		/* MSG_ZEROCOPY the kernel declines copies: no call opened, one copy at its return */
		if (fresh.mode == SEND_MODE_COPY) {
			call->sk = 0;
			return 0;
		}
		if (fresh.mode == SEND_MODE_ZEROCOPY) {
			saw_zc_send();
			fresh.ubuf = msg_ubuf(true, msg);
			if (fresh.ubuf)
				note_ubuf(fresh.ubuf, tgid);
			else
				fresh.zc_id = BPF_CORE_READ(sk, sk_zckey.counter) - 1;
		}
		if (!loop_calls_seen)
			loop_calls_seen = 1;
		/* the kprobe method's call, where both are attached, is not this loop's to end */
		fresh.kp_sk = call->kp_sk;
		fresh.kp_msg = call->kp_msg;
		*call = fresh;	/* only this thread writes its slot */
		note_zc_sock(sk, msg, true, tgid);
		return 0;
	}
	if (left < call->last_left) {
		record_send_chunk(task, tgid, call->mode, call->last_left - left);
		call->last_left = left;
	}
	return 0;
}

/* tcp_sendmsg_locked_btf is attached (user space): its calls end below. */
const volatile __u8 tp_send_loop = 0;

/*
 * Every socket send returns here: the socket's type is noted for the exit of the I/O call it is the
 * body of (type_at_length()), and a TCP send call of the loop above is closed: its last chunk is
 * what it returned minus what earlier iterations moved. A TCP send the loop did not follow only
 * copied: what it returned is one copy.
 */
SEC("tp_btf/sock_send_length")
int BPF_PROG(sock_send_length_btf, struct sock *sk, int ret, int flags)
{
	struct task_struct *task = current_task();
	__u32 tgid = TASK_READ(task, tgid);
	struct cpu_state *cs = NULL;
	struct send_call *call;
	__u32 mode = SEND_MODE_COPY;
	__u64 bytes = 0;
	bool open, tcp;
	__u8 type, sk_type;

	/* only a target's call opens a slot: no filter before it */
	type = type_at_length(TASK_READ(task, pid), sk, false);
	/* the socket's type, read once where the standalone sites need it */
	sk_type = type < NR_FD_TYPES || !standalone_sites ? type : sock_fd_type(true, sk);
	count_at_length(task, sk, ret, flags, false, sk_type);
	if (!tp_send_loop)
		return 0;
	/*
	 * A slot this send typed is a target's call (as above): the filter only for the others. The
	 * CPU's state only where a syscall's exit takes the mark from it (the census has none).
	 */
	if (type == NR_FD_TYPES && !trace_all) {
		cs = cpu_state();
		if (!is_target_at(cs, tgid))
			return 0;
	} else if (type == NR_FD_TYPES && !is_target(tgid)) {
		return 0;
	}
	/* a run whose sends all copied opened no loop call: no thread's needs looking up */
	call = loop_calls_seen ? TASK_STATE(send_call_task, task, 0) : NULL;
	open = call && call->sk == (__u64)sk;
	tcp = open || (sk_type < NR_FD_TYPES ? sk_type : sock_fd_type(true, sk)) == FT_TCP;
	/* without the socket's note (socket_lengths), the exit takes this mark, or none */
	if (!socket_lengths)
		leave_send_mark(cs, task, TASK_READ(task, pid), tcp && ret > 0 ? ret : 0, 0, 0);
	if (open && ret > 0) {
		__u64 earlier = call->start_left - call->last_left;

		mode = call->mode;
		if ((__u64)ret > earlier)
			bytes = ret - earlier;
		if (mode == SEND_MODE_ZEROCOPY)
			keep_zc_call(call->sk, call->zc_id, call->ubuf, tgid, ret);
	} else if (tcp && ret > 0) {
		bytes = ret;
	}
	record_send_chunk(task, tgid, mode, bytes);
	/* closed: the thread's next call reuses the slot */
	if (call)
		call->sk = 0;
	return 0;
}

/* ---- fentry/fexit and kprobe methods, for kernels that allow them --------------------------- */

/*
 * What the syscall's exit takes instead of reading the descriptor (tcp_send_returns()): this TCP
 * send's return, under the syscall and the descriptor it ran in, read from the task's user
 * registers. No program sees every socket send on these kernels to clear it, as sock_send_length
 * does on the tracepoint path: the exit takes it only for the same syscall on the same descriptor,
 * and a TCP send inside any other call (write, sendmmsg, splice) leaves one no send's exit takes.
 * Where sock_send_length notes the sends (socket_lengths), no exit takes one: none is left.
 */
static __always_inline void mark_tcp_send(struct cpu_state *cs, long ret)
{
	struct task_struct *task;
	__s32 fd = -1;
	__u32 nr;

	if (socket_lengths)
		return;
	task = current_task();
	nr = current_syscall(task, &fd);
	/* outside a syscall (task work on the way out) the registers name none: no mark */
	if (nr)
		leave_send_mark(cs, task, TASK_READ(task, pid), ret, nr, fd);
}

/*
 * A send call at its return, with the socket and message it was called with: what it returned is
 * what it moved, and the mode the kernel chose before its loop says how (the same choice the
 * tracepoint path reads). Copied bytes go to send_copy; a MSG_ZEROCOPY call is kept for its
 * completion notice; pins and page references are counted where the kernel makes them
 * (skb_zerocopy_iter_stream, skb_splice_from_iter); a TCP send leaves its mark for the syscall's exit.
 * fexit's socket and message are typed (@btf): plain loads; a kretprobe's are the numbers its entry kept.
 */
static __always_inline void sent(struct cpu_state *cs, bool btf, __u32 method, __u32 tgid, struct sock *sk,
				 struct msghdr *msg, long ret)
{
	__u32 mode;

	if (ret <= 0)
		return;
	mode = send_mode(btf, sk, msg);
	if (mode == SEND_MODE_COPY && site_uses(SITE_SEND_COPY, method))
		record_inline(NULL, tgid, SITE_SEND_COPY, ret, method);
	/*
	 * the socket's next notification id, less one: this call's, under the socket's lock. Not if
	 * another thread's send on the socket took an id while this one waited for memory (the lock
	 * let go): this call's bytes are then kept under that one's id.
	 */
	if (mode == SEND_MODE_ZEROCOPY)
		keep_zc_call((__u64)sk, READ_FIELD(btf, sk, sk_zckey.counter) - 1, msg_ubuf(btf, msg), tgid, ret);
	mark_tcp_send(cs, ret);
}

/*
 * A target's spliced pages go into @sk (sendfile, splice): a device without scatter-gather has
 * them copied on transmit, where tx_copy finds their owner by the socket.
 */
static __always_inline void note_splice_sock(const struct sock *sk, __u32 tgid)
{
	if (!splice_sends_seen)
		splice_sends_seen = 1;
	note_sock(sk, tgid);
}

/*
 * At a send's entry, only a zerocopy or splicing call has work: before its first skb leaves,
 * zc_path and tx_copy note its owner there.
 */
static __always_inline void zc_send_entry(bool btf, struct sock *sk, struct msghdr *msg, __u32 tgid)
{
	unsigned int flags = READ_FIELD(btf, msg, msg_flags);

	if (!(flags & (ZCT_MSG_ZEROCOPY | ZCT_MSG_SPLICE_PAGES)) || !is_target_memo(tgid))
		return;
	if (flags & ZCT_MSG_SPLICE_PAGES) {
		note_splice_sock(sk, tgid);
		return;
	}
	saw_zc_send();
	note_sock(sk, tgid);
}

/* fexit has the call's arguments beside its return: the entry keeps nothing. */
SEC("fentry/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg_locked_fentry, struct sock *sk, struct msghdr *msg)
{
	zc_send_entry(true, sk, msg, current_tgid());
	return 0;
}

SEC("fexit/tcp_sendmsg_locked")
int BPF_PROG(tcp_sendmsg_locked_fexit, struct sock *sk, struct msghdr *msg, size_t size, int ret)
{
	struct cpu_state *cs = cpu_state();	/* the memo and the mark: one lookup */
	__u32 tgid = current_tgid();

	if (is_target_at(cs, tgid))
		sent(cs, true, METHOD_FENTRY, tgid, sk, msg, ret);
	return 0;
}

/*
 * A kretprobe has no arguments: the entry keeps them in the thread's send call, apart from the
 * tracepoint path's (whose loop must never take a kprobe's call for its own).
 */
SEC("kprobe/tcp_sendmsg_locked")
int BPF_KPROBE(tcp_sendmsg_locked_kprobe, struct sock *sk, struct msghdr *msg)
{
	__u32 tgid = current_tgid();
	struct send_call *call;

	zc_send_entry(false, sk, msg, tgid);
	if (!is_target_memo(tgid))
		return 0;
	call = TASK_STATE(send_call_task, current_task(), BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!call) {
		__sync_fetch_and_add(&misc.send_calls_dropped, 1);
		return 0;
	}
	call->kp_sk = (__u64)sk;
	call->kp_msg = (__u64)msg;
	return 0;
}

SEC("kretprobe/tcp_sendmsg_locked")
int BPF_KRETPROBE(tcp_sendmsg_locked_kretprobe, int ret)
{
	struct cpu_state *cs = cpu_state();
	__u32 tgid = current_tgid();
	struct send_call *call;
	__u64 sk;

	if (!is_target_at(cs, tgid))
		return 0;
	call = TASK_STATE(send_call_task, current_task(), 0);
	if (!call || !call->kp_sk)
		return 0;
	sk = call->kp_sk;
	call->kp_sk = 0;	/* closed: the thread's next call sets it again */
	sent(cs, false, METHOD_KPROBE, tgid, (struct sock *)sk, (struct msghdr *)call->kp_msg, ret);
	return 0;
}

static __always_inline void on_returned_bytes(__u32 site, __u32 method, long ret)
{
	__u32 tgid = current_tgid();

	/* once per page on the ->sendpage path: the per-CPU memo first, as every hot program does */
	if (ret > 0 && site_uses(site, method) && is_target_memo(tgid))
		record(tgid, site, ret);
}

/*
 * The pin: its ubuf_info is the pinner's from here on (deferred_copy and zc_path look it up there,
 * whichever API made it). Another process's pin forgets an owner left from an earlier life of the
 * same ubuf_info. Only zerocopy sends come here.
 */
static __always_inline void on_pin(__u64 uarg)
{
	__u32 tgid = current_tgid();

	if (!uarg)
		return;
	if (is_target_memo(tgid))
		note_ubuf(uarg, tgid);
	else if (bpf_map_lookup_elem(&zc_owners, &uarg))
		bpf_map_delete_elem(&zc_owners, &uarg);
}

/*
 * Every kernel passes the ubuf_info fifth (6.16 adds a sixth, the devmem binding). Those five have
 * not changed since 4.14, so the compat object reads the return after them: a kprobe program
 * there is skipped unseen where it runs inside another one (5.10 counts no such miss), and a
 * zerocopy skb copied in that softirq lost its deferred copy.
 */
SEC("fexit/skb_zerocopy_iter_stream")
int BPF_PROG(skb_zerocopy_iter_stream_fexit, struct sock *sk, struct sk_buff *skb, struct msghdr *msg,
	     int len, struct ubuf_info *uarg)
{
	int ret = (int)func_ret_after(ctx, 5);

	on_pin((__u64)uarg);
	on_returned_bytes(SITE_ZC_PIN, METHOD_FENTRY, ret);
	if (ret > 0)
		tcp_not_copied(sk, TCP_DERIVED_SEND, ret);
	return 0;
}

SEC("kprobe/skb_zerocopy_iter_stream")
int BPF_KPROBE(skb_zerocopy_iter_stream_kprobe, struct sock *sk, struct sk_buff *skb, struct msghdr *msg,
	       int len, struct ubuf_info *uarg)
{
	on_pin((__u64)uarg);
	return 0;
}

SEC("kretprobe/skb_zerocopy_iter_stream")
int BPF_KRETPROBE(skb_zerocopy_iter_stream_kretprobe, int ret)
{
	on_returned_bytes(SITE_ZC_PIN, METHOD_KPROBE, ret);
	return 0;
}

SEC("fexit/skb_splice_from_iter")
int BPF_PROG(skb_splice_from_iter_fexit)
{
	on_returned_bytes(SITE_SPLICE_REF, METHOD_FENTRY, func_ret(ctx));
	return 0;
}

SEC("kretprobe/skb_splice_from_iter")
int BPF_KRETPROBE(skb_splice_from_iter_kretprobe, long ret)
{
	on_returned_bytes(SITE_SPLICE_REF, METHOD_KPROBE, ret);
	return 0;
}

/*
 * Before 6.5, sendfile and splice reach TCP through do_tcp_sendpages(): page references, no copy
 * (once per page); the socket is noted for tx_copy.
 */
static __always_inline void on_sendpages(__u32 method, struct sock *sk, long ret)
{
	__u32 tgid = current_tgid();

	if (ret <= 0 || !site_uses(SITE_SPLICE_REF, method) || !is_target_memo(tgid))
		return;
	record(tgid, SITE_SPLICE_REF, ret);
	note_splice_sock(sk, tgid);
}

/*
 * Its five arguments are the same on every kernel that has it (until 6.5), so 5.10 takes this and
 * not the kretprobe: a kretprobe misses the returns of senders asleep inside (waiting for send
 * buffer) beyond its instances, one per CPU on a kernel without preemption.
 */
SEC("fexit/do_tcp_sendpages")
int BPF_PROG(do_tcp_sendpages_fexit, struct sock *sk, struct page *page, int offset, size_t size)
{
	on_sendpages(METHOD_FENTRY, sk, func_ret_after(ctx, 5));
	tcp_call_ends(sk, TCP_DERIVED_SEND);
	return 0;
}

/*
 * The census's, with TCP's copies from the sockets' counters: what the call sends from here to its
 * return is referenced, not copied (tcp_sendpage_locked() copies by another way without
 * scatter-gather; kTLS sends its records here, which it made by a copy of its own).
 */
SEC("fentry/do_tcp_sendpages")
int BPF_PROG(do_tcp_sendpages_fentry, struct sock *sk)
{
	tcp_call_begins(sk, TCP_DERIVED_SEND);
	return 0;
}

/*
 * From 6.5 sendfile and splice reach a socket through splice_to_socket(), which sends the pipe's
 * pages with MSG_SPLICE_PAGES: TCP takes references to them where the route has scatter-gather,
 * and copies them where it has not (tcp_sendmsg_locked()). Counted here for TCP sockets alone, by
 * the census, with no program on a plain send; a run follows each send call instead. What it
 * sends from entry to return is referenced where the route had scatter-gather at its entry.
 */
static __always_inline struct sock *tcp_sock_of_file(struct file *file)
{
	struct socket *sock = bpf_sock_from_file(file);
	struct sock *sk = sock ? sock->sk : NULL;

	return sk && sk->sk_protocol == ZCT_IPPROTO_TCP ? sk : NULL;
}

SEC("fentry/splice_to_socket")
int BPF_PROG(splice_to_socket_fentry, struct pipe_inode_info *pipe, struct file *out, loff_t *ppos,
	     size_t len)
{
	struct sock *sk = tcp_sock_of_file(out);

	if (sk && sk->sk_route_caps & ZCT_NETIF_F_SG)
		tcp_call_begins(sk, TCP_DERIVED_SEND);
	return 0;
}

SEC("fexit/splice_to_socket")
int BPF_PROG(splice_to_socket_fexit, struct pipe_inode_info *pipe, struct file *out, loff_t *ppos,
	     size_t len, unsigned int flags, long ret)
{
	struct sock *sk = tcp_sock_of_file(out);
	bool refs;
	__u32 tgid;

	if (!sk)
		return 0;
	/* referenced where the route had scatter-gather as it began (its mark), as the counters take it */
	refs = tcp_call_ends(sk, TCP_DERIVED_SEND) && ret > 0;
	tgid = current_tgid();
	if (refs && site_uses(SITE_SPLICE_REF, METHOD_FENTRY) && is_target_memo(tgid)) {
		record(tgid, SITE_SPLICE_REF, ret);
		note_splice_sock(sk, tgid);
	}
	return 0;
}

/* A kretprobe has no arguments: the entry notes the socket. */
SEC("kprobe/do_tcp_sendpages")
int BPF_KPROBE(do_tcp_sendpages_kprobe, struct sock *sk)
{
	__u32 tgid = current_tgid();

	if (site_uses(SITE_SPLICE_REF, METHOD_KPROBE) && is_target_memo(tgid))
		note_splice_sock(sk, tgid);
	return 0;
}

SEC("kretprobe/do_tcp_sendpages")
int BPF_KRETPROBE(do_tcp_sendpages_kretprobe, long ret)
{
	on_returned_bytes(SITE_SPLICE_REF, METHOD_KPROBE, ret);
	return 0;
}

/* ---- UDP MSG_ZEROCOPY pins ------------------------------------------------------------------- */

/*
 * A UDP zerocopy send pins its pages with __zerocopy_sg_from_iter(), which returns 0 once it has
 * pinned all @length bytes, into an skb that already carries the send's ubuf_info (TCP pins
 * through it too, inside skb_zerocopy_iter_stream(), and is counted there). The pinned bytes are
 * the call's that were not copied: sock_syscall_exit() takes them off udp_send_copy.
 */
static __always_inline void on_udp_pin(struct sock *sk, struct sk_buff *skb, __u64 length, int ret,
				       __u32 method)
{
	struct skb_shared_info *shinfo;
	struct io_call *call;
	__u32 tgid;

	if (ret || !length || !sk || BPF_CORE_READ(sk, sk_protocol) != ZCT_IPPROTO_UDP)
		return;
	tgid = current_tgid();
	if (!is_target_memo(tgid))
		return;
	shinfo = (void *)(BPF_CORE_READ(skb, head) + BPF_CORE_READ(skb, end));
	on_pin((__u64)BPF_CORE_READ(shinfo, destructor_arg));
	if (!site_uses(SITE_ZC_PIN, method))
		return;
	record(tgid, SITE_ZC_PIN, length);
	call = current_io();
	if (call)
		call->pinned += length;
}

/*
 * From 6.0 its first argument is the send's msghdr. The compat object's kernels (before 5.17) pass
 * (sk, skb, from, length), and fexit puts the return after them. 5.17 to 5.19 take the main object
 * with the older arguments: there user space sets this aside (refuse_old_sg_from_iter()) for the
 * kprobe method, which reads both.
 */
SEC("fexit/__zerocopy_sg_from_iter")
int BPF_PROG(zerocopy_sg_from_iter_fexit, struct msghdr *msg, struct sock *sk, struct sk_buff *skb,
	     struct iov_iter *from, size_t length)
{
#ifdef ZCT_COMPAT
	on_udp_pin((struct sock *)ctx[0], (struct sk_buff *)ctx[1], ctx[3], (int)ctx[4], METHOD_FENTRY);
#else
	on_udp_pin(sk, skb, length, (int)func_ret(ctx), METHOD_FENTRY);
#endif
	return 0;
}

/* The kprobe method's arguments, from entry to return, by thread. */
struct udp_pin_args {
	__u64 sk;
	__u64 skb;
	__u64 length;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);	/* tid */
	__type(value, struct udp_pin_args);
} udp_pin_args SEC(".maps");

/* Its first argument, the send's msghdr, came with msghdr's sg_from_iter (6.0); before, it starts at the socket. */
SEC("kprobe/__zerocopy_sg_from_iter")
int zerocopy_sg_from_iter_kprobe(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct msghdr *msg = NULL;
	bool with_msg = bpf_core_field_exists(msg->sg_from_iter);
	/* read, not loaded: the verifier takes no load from a context pointer moved by a choice */
	struct sock *sk = (void *)(with_msg ? PT_REGS_PARM2_CORE(ctx) : PT_REGS_PARM1_CORE(ctx));
	struct udp_pin_args args = {
		(__u64)sk,
		with_msg ? PT_REGS_PARM3_CORE(ctx) : PT_REGS_PARM2_CORE(ctx),
		with_msg ? PT_REGS_PARM5_CORE(ctx) : PT_REGS_PARM4_CORE(ctx),
	};

	if (BPF_CORE_READ(sk, sk_protocol) == ZCT_IPPROTO_UDP && is_target_memo(current_tgid()))
		bpf_map_update_elem(&udp_pin_args, &tid, &args, BPF_ANY);
	return 0;
}

SEC("kretprobe/__zerocopy_sg_from_iter")
int BPF_KRETPROBE(zerocopy_sg_from_iter_kretprobe, int ret)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct udp_pin_args *args = bpf_map_lookup_elem(&udp_pin_args, &tid);

	if (!args)
		return 0;
	on_udp_pin((struct sock *)args->sk, (struct sk_buff *)args->skb, args->length, ret, METHOD_KPROBE);
	bpf_map_delete_elem(&udp_pin_args, &tid);
	return 0;
}
