/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The boundary account: the bytes each I/O call of the targets moved between user memory and the
 * kernel, by call and file type, counted at the call's return, apart from every copy site. User
 * space holds it against the sites that explain such bytes; what none explains is "unattributed".
 * Here too the send marks a TCP send leaves for its syscall's exit, so that the exit need not read
 * the descriptor to know the call was TCP's. No program of its own: the syscall exits
 * (iocall.bpf.h), the sends (send.bpf.c) and io_uring's completions (zerocopy.bpf.c) call it.
 */
#ifndef ZCTRACE_BOUNDARY_BPF_H
#define ZCTRACE_BOUNDARY_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "slots.bpf.h"

const volatile __u8 track_boundary = 0;	/* keep the account (user space: the boundary probe chose) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_ACCOUNT_KEYS);
	__type(key, struct account_key);
	__type(value, struct account_stats);
} account SEC(".maps");

/*
 * A run's rows, first per CPU (as hot_sites): a row's slot on a CPU is the first key's that lands
 * there; a key that finds its slot taken, and every row of the census, goes to the account. User
 * space adds the two.
 */
#define HOT_ACCOUNT_SLOTS 32

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HOT_ACCOUNT_SLOTS);
	__type(key, __u32);
	__type(value, struct hot_account);
} hot_account SEC(".maps");

/*
 * The last TCP send's mark on each CPU, for its syscall's exit (tcp_send_returns()): what it
 * returned, and whose it was. It holds only while its thread stays on the CPU: a thread that is
 * switched out (the only way it can leave the CPU, or let another thread's syscall run on it) has
 * another count of switches by the time its exit compares. And it holds only within one send
 * syscall: the next one's entry forgets it (forget_send_mark()). Where the socket's return notes
 * what each socket call was (socket_lengths: sock_call_slots), no mark is left or taken. It lives
 * in the CPU's state (zctrace.h's struct cpu_state), beside the target filter's memo that every
 * program taking or leaving it asks first: one lookup for both.
 */

/*
 * The syscall the current thread is in (its number + 1; 0 outside any, or if its registers are
 * out of reach) and that syscall's first argument (a descriptor, for the socket calls), from its
 * user registers: typed pointers in every program that leaves a mark (tp_btf, fexit, kprobes).
 */
static __always_inline __u32 current_syscall(struct task_struct *task, __s32 *arg0)
{
	struct pt_regs *regs = task_user_regs(task);

	if (!regs)
		return 0;
	*arg0 = SYSCALL_ARG(HAVE_TASK_PT_REGS, regs, 1);
	return SYSCALL_NR(HAVE_TASK_PT_REGS, regs) + 1;
}

/*
 * A send syscall of thread @tid starts: its mark in this CPU's state @cs, if any, is an earlier
 * call's (one whose exit did not take it: a zerocopy send's, a TCP send's in task work after a
 * syscall's exit), and no exit may take it from here on. A mark holds from its syscall's entry to
 * its exit.
 */
static __always_inline void forget_send_mark(struct cpu_state *cs, __u32 tid)
{
	if (cs && cs->mark.tid == tid)
		cs->mark.tid = 0;
}

/*
 * Leaves the send mark in this CPU's state @cs: @ret for thread @tid (@task), with syscall @nr
 * (+ 1, or 0) and descriptor @fd. The thread id goes last: a program preempted while it writes
 * (fexit) leaves a mark whose every field is its own or the one that came between, whose exit
 * cleared the id.
 */
static __always_inline void leave_send_mark(struct cpu_state *cs, struct task_struct *task, __u32 tid, long ret,
					    __u32 nr, __s32 fd)
{
	struct send_mark *m = cs ? &cs->mark : NULL;

	if (!m)
		return;
	m->tid = 0;
	m->nr = nr;
	m->fd = fd;
	m->ret = ret;
	m->switches = task_switches(task);
	asm volatile("" ::: "memory");
	m->tid = tid;
}

/*
 * A send syscall (@nr, on descriptor @fd) returns @ret: whether this CPU's state @cs holds the
 * calling thread's (@task, the running one) mark for it, left since the thread was last switched out, with the same
 * return, and the same syscall and descriptor where the mark names them. The mark is taken either
 * way.
 */
static __always_inline bool take_send_mark(struct cpu_state *cs, struct task_struct *task, __u32 nr, __s32 fd,
					   long ret)
{
	struct send_mark *m = cs ? &cs->mark : NULL;
	bool mine;

	if (!m || m->tid != TASK_READ(task, pid))
		return false;
	mine = m->ret == ret && m->switches == task_switches(task) &&
	       (!m->nr || (m->nr == nr + 1 && m->fd == fd));
	m->tid = 0;
	return mine;
}

#define ZCT_MMSGHDR_SIZE 64	/* struct mmsghdr: a 56-byte msghdr, then msg_len */
#define ZCT_MMSG_LEN_OFF 56
#define ZCT_UIO_MAXIOV 1024	/* the kernel's bound on vlen */

#define ZCT_S_IFMT 0170000
#define ZCT_S_IFREG 0100000
#define ZCT_S_IFIFO 0010000
#define ZCT_S_IFSOCK 0140000

/* What socket @sk is, for the account (enum fd_type): plain loads where @btf types it. */
static __always_inline __u8 sock_fd_type(bool btf, const struct sock *sk)
{
	__u16 family, proto, type;

	if (!sk)
		return FT_SOCK_OTHER;
	family = READ_FIELD(btf, sk, __sk_common.skc_family);
	proto = READ_FIELD(btf, sk, sk_protocol);
	type = READ_FIELD(btf, sk, sk_type);
	if (family == ZCT_AF_UNIX)
		return type == ZCT_SOCK_STREAM ? FT_UNIX_STREAM : FT_UNIX_DGRAM;
	if (family != ZCT_AF_INET && family != ZCT_AF_INET6)
		return FT_SOCK_OTHER;
	if (proto == ZCT_IPPROTO_TCP)
		return FT_TCP;
	return proto == ZCT_IPPROTO_UDP ? FT_UDP : FT_SOCK_OTHER;
}

/* What an open file is, for the account (enum fd_type). */
static __always_inline __u8 file_type(struct file *f, __u32 mode, __u32 flags)
{
	struct socket *sock;

	if (mode == ZCT_S_IFREG)
		return flags & o_direct_flag ? FT_REG_DIRECT : FT_REG;
	if (mode == ZCT_S_IFIFO)
		return FT_PIPE;
	if (mode != ZCT_S_IFSOCK)
		return FT_OTHER;
	sock = BPF_CORE_READ(f, private_data);
	return sock_fd_type(false, BPF_CORE_READ(sock, sk));
}

/* What a returning I/O call moved between user memory and the kernel. */
struct moved {
	__u64 bytes;
	__u64 msgs;	/* datagrams or messages: sendmmsg/recvmmsg's return, else 1 */
	bool unsized;	/* a receive with MSG_TRUNC: its return is the datagram's length, not what it copied */
};

struct mmsg_sum {
	__u64 vec;
	__u64 bytes;
};

static long mmsg_add_one(__u32 i, struct mmsg_sum *s)
{
	__u32 len = 0;

	bpf_probe_read_user(&len, sizeof(len), (void *)(s->vec + (__u64)i * ZCT_MMSGHDR_SIZE + ZCT_MMSG_LEN_OFF));
	s->bytes += len;
	return 0;
}

/*
 * A returning I/O call's bytes (@ret > 0): read/write and send/recv return their bytes;
 * sendmmsg/recvmmsg return messages, whose bytes the kernel wrote in each msg_len.
 */
static __always_inline void call_bytes(const struct io_call *call, long ret, struct moved *m)
{
	struct mmsg_sum sum = { .vec = call->vec };
	bool recv = call->kind == IO_RECV || call->kind == IO_RECVMMSG;

	m->unsized = recv && (call->flags & ZCT_MSG_TRUNC);
	if (call->kind != IO_SENDMMSG && call->kind != IO_RECVMMSG) {
		m->bytes = ret;
		m->msgs = 1;
		return;
	}
	ZCT_LOOP(ret, ZCT_TURNS(ZCT_UIO_MAXIOV), mmsg_add_one, &sum);
#ifdef ZCT_COMPAT
	/* messages past what the loop reads: the call's bytes are not known */
	m->unsized |= ret > ZCT_TURNS(ZCT_UIO_MAXIOV);
#endif
	m->bytes = sum.bytes;
	m->msgs = ret;
}

/*
 * Adds one call's bytes to the account under (call, file type). Its callers are tracepoints (the
 * syscall's exit, io_uring_complete), which cannot be preempted: plain adds to a CPU's slot
 * (hold_slot()).
 */
static __always_inline void account_add(__u32 call, __u8 type, __u64 bytes, bool unsized)
{
	static const struct account_stats zero;
	struct account_key key = { .call = call, .fd_type = type, .tgid = trace_all ? current_tgid() : 0 };
	struct account_stats *st;

	if (!counting() || (!bytes && !unsized))
		return;
	if (!trace_all) {
		__u64 word = hot_account_word(call, type);
		__u32 slot = (call * 7 + type) & (HOT_ACCOUNT_SLOTS - 1);
		struct hot_account *h = bpf_map_lookup_elem(&hot_account, &slot);

		if (h && claim_slot(&h->key, word)) {
			hold_slot(&h->key, word);
			h->st.calls += 1;
			if (unsized)
				h->st.unsized += 1;
			else
				h->st.bytes += bytes;
			let_go_slot(&h->key, word);
			return;
		}
	}
	st = bpf_map_lookup_elem(&account, &key);
	if (!st) {
		bpf_map_update_elem(&account, &key, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&account, &key);
		if (!st) {
			__sync_fetch_and_add(&misc.account_dropped, 1);
			return;
		}
	}
	__sync_fetch_and_add(&st->calls, 1);
	if (unsized)
		__sync_fetch_and_add(&st->unsized, 1);
	else
		__sync_fetch_and_add(&st->bytes, bytes);
}

/* A returning I/O syscall, with what call_bytes() made of its return: its row of the account. */
static __always_inline void account_syscall(const struct io_call *call, long ret, const struct moved *m)
{
	if (!track_boundary || ret <= 0)
		return;
	switch (call->kind) {
	case IO_READ:
	case IO_WRITE:
	case IO_SEND:
	case IO_RECV:
	case IO_SENDMMSG:
	case IO_RECVMMSG:
		account_add(call->nr, call->type, m->bytes, m->unsized);
		break;
	}
}

#endif /* ZCTRACE_BOUNDARY_BPF_H */
