/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The I/O syscalls followed from entry (enter_io(), syscalls.bpf.h's on_syscall()) to exit
 * (on_sys_exit()), with their descriptors classified (fdclass.bpf.h) and closed at their return
 * through the file sites, the pipe and socket sites (pipe.bpf.h, sock.bpf.h) and the boundary
 * account; the socket call's type noted where its socket returns its length (type_at_length()).
 */
#ifndef ZCTRACE_IOCALL_BPF_H
#define ZCTRACE_IOCALL_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "sockcall.bpf.h"
#include "slots.bpf.h"
#include "boundary.bpf.h"
#include "pipe.bpf.h"
#include "sock.bpf.h"
#include "fdclass.bpf.h"

/* Remembers an I/O syscall's descriptors until its exit, for the file and pipe sites and the account. */
static __always_inline void enter_io(bool btf, struct pt_regs *regs, struct task_struct *task, __u32 tid, __u32 nr,
				     __u32 kind)
{
	struct io_call call = { .kind = kind, .nr = nr }, *slot;
	long a0 = SYSCALL_ARG(btf, regs, 1);
	struct file *f;

	switch (kind) {
	case IO_READ:
	case IO_WRITE:
		/* only where no socket's return types the slot (on_syscall(), rw_call()); read and
		 * write on a socket have no work during the call: closed at the exit, as recv and send are */
		if (rw_classify(btf, task, a0, &call, nr + 1) & FD_SOCK)
			return;
		break;
	case IO_SENDFILE:
		call.out = fd_class(a0);
		call.in = fd_class(PT_REGS_PARM2_CORE_SYSCALL(regs));
		break;
	case IO_VMSPLICE:
		vmsplice_classify(&call, a0);
		break;
	case IO_TEE:
		call.in = fd_class(a0);
		call.out = fd_class(PT_REGS_PARM2_CORE_SYSCALL(regs));
		break;
	case IO_SPLICE:
	case IO_COPY_RANGE:	/* (in, off_in, out, ...) */
		call.in = fd_class(a0);
		call.out = fd_class(PT_REGS_PARM3_CORE_SYSCALL(regs));
		break;
	default:		/* the socket calls, in io_kind_of only where a socket site or the account needs them */
		/* only a zerocopy send comes here (on_syscall()): its work during the call is UDP's pins */
		f = sock_call_at(btf, regs, nr, kind, &call);
		if (call.type == FT_UDP)
			udp_zc_enter(f, &call);
		break;
	}
	slot = TASK_STATE(io_calls, task, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (slot)
		*slot = call;
	else
		__sync_fetch_and_add(&misc.io_calls_dropped, 1);
}

static __always_inline bool kernel_copy_kind(__u32 kind)
{
	return kind == IO_SENDFILE || kind == IO_SPLICE || kind == IO_COPY_RANGE;
}

/*
 * Where a socket's return types the CPU's slot (socket_lengths), a read or write (or a vector
 * form) reads nothing at its entry but opens the slot (syscalls.bpf.h's on_syscall()): on a
 * socket, the dearest part of a traced server's calls, no descriptor, file or inode is read at
 * all. A file's first site event inside the call (a write_end, filemap_read's return) classifies
 * the descriptor then, keeps the call as enter_io() would, and marks the slot (RW_FILE_MARK): the
 * call's later events and its exit find it there. An exit that finds neither mark nor type
 * classifies the descriptor itself (a pipe, a file no site saw: exit_rw()).
 */
#define RW_FILE_MARK 0xff

/*
 * The socket sites and the account of a returning call. A global function, checked once by the
 * verifier: inlined in each of the syscall exit's paths, they outgrow what it checks.
 */
ZCT_GLOBAL int close_sock_call(struct io_call *call, long ret)
{
	struct moved moved = {};

	if (!call)
		return 0;
	if (ret > 0 && (track_boundary || sock_type_sites(call->type)))
		call_bytes(call, ret, &moved);
	/* a TCP call has no socket site at its return: no call of the function that finds none */
	if (call->type == FT_UDP || sock_type_sites(call->type))
		sock_syscall_exit(call, &moved);
	account_syscall(call, ret, &moved);
	return 0;
}

/*
 * A socket returns what a call moved (tp_btf sock_send_length, sock_recv_length), inside the call
 * that opened this CPU's slot (open_sock_call()), in the running thread (@tid, where the caller
 * knows it, else 0). The slot notes the type of @sk for the call's exit (sock_call_type()), if
 * user space holds the socket (a kernel socket's send inside a call has no file). The call's own
 * socket returns last (sock_sendmsg(), sock_recvmsg()), after any it sends through (KCM's TCP
 * socket): the last return is the one noted. Only the exit counts, and a thread switched out
 * between the two takes its slot along (sched.bpf.c): its exit finds the note all the same.
 * Returns the type noted, or NR_FD_TYPES where none was.
 */
static __always_inline __u8 type_at_length(__u32 tid, struct sock *sk, bool to_user)
{
	__u64 *slot, w;
	struct socket *sock;
	__u8 kind, type;

	if (!socket_lengths)
		return NR_FD_TYPES;
	slot = sock_call_slot();
	if (!slot)
		return NR_FD_TYPES;
	w = *slot;
	if (!w || (tid && SOCK_SLOT_TID(w) != tid))
		return NR_FD_TYPES;
	kind = SOCK_SLOT_KIND(w);
	if (to_user != (kind == IO_READ || kind == IO_RECV))
		return NR_FD_TYPES;
	sock = sk->sk_socket;
	if (!sock || !sock->file)
		return NR_FD_TYPES;
	type = sock_fd_type(true, sk);
	*slot = (w & ~0xffULL) | (type + 1);
	return type;
}

/*
 * Whether a returning sendto/sendmsg (@kind, syscall @nr) was a TCP send, from the mark its
 * TCP send left on this CPU (struct send_mark): no descriptor, file or socket is read. The mark
 * must be this thread's, left since it was last switched out, and what it returned must match. On
 * the tracepoint path every socket send passes sock_send_length before its syscall returns, and
 * the last one left its return if it was TCP (nr 0). The fentry and kprobe paths' mark names the
 * syscall and descriptor it was left in (mark_tcp_send()). Any send's exit takes the mark. Where
 * the socket's return notes the call instead (socket_lengths), no mark is left.
 */
static __always_inline bool tcp_send_returns(struct cpu_state *cs, struct task_struct *task, bool btf,
					     struct pt_regs *regs, __u32 nr, __u32 kind, long ret)
{
	return btf && kind == IO_SEND && take_send_mark(cs, task, nr, (__s32)SYSCALL_ARG(btf, regs, 1), ret);
}

/*
 * A read or write on a socket (@kind, syscall @nr) returns: what its entry found, if the verdict
 * of the thread (@task, the running one) still notes this call as under way (tp_btf, @btf). No
 * descriptor or file is read again.
 */
static __always_inline bool sock_rw_known(bool btf, struct task_struct *task, __u32 nr, __u32 kind,
					  struct io_call *call)
{
	struct fd_verdict *v;

	if (!btf || (kind != IO_READ && kind != IO_WRITE))
		return false;
	v = TASK_STATE(fd_verdicts, task, 0);
	if (!v || v->open_call != nr + 1)
		return false;
	v->open_call = 0;
	call->kind = kind;
	call->nr = nr;
	call->type = v->type;
	return true;
}

/*
 * A socket call with no io_call (every one but a zerocopy send, and read and write on a socket):
 * what its socket noted at its return (@typed: sock_call_type(), which the caller took whatever
 * the call returned, the slot being this call's alone), else what its arguments say, read now; no
 * map update on its way in or out.
 */
static __always_inline void exit_sock_call(bool btf, struct pt_regs *regs, __u32 nr, __u32 kind, __u8 typed,
					   long ret)
{
	struct io_call call = { .kind = kind, .nr = nr };

	if (ret <= 0)
		return;
	if (typed) {
		/* its socket noted it (only a target's call opens a slot): no descriptor to read */
		call.type = typed - 1;
		call.flags = sock_call_flags(btf, regs, nr, kind);
	} else {
		struct cpu_state *cs = cpu_state();	/* the memo and the mark: one lookup */
		/* its ids, switches and task storage: one helper call for all three */
		struct task_struct *task = current_task();

		if (!is_target_at(cs, TASK_READ(task, tgid)))
			return;
		if (tcp_send_returns(cs, task, btf, regs, nr, kind, ret))
			call.type = FT_TCP;
		else if (!sock_rw_known(btf, task, nr, kind, &call))
			sock_call_at(btf, regs, nr, kind, &call);
	}
	/*
	 * A TCP call has no socket site at its return, and one message's return is its bytes: its row
	 * of the account alone, with no call of the function that finds none. The mmsg calls return
	 * messages, and a receive with MSG_TRUNC what it discarded: close_sock_call() sizes those.
	 */
	if (call.type == FT_TCP && kind != IO_SENDMMSG && kind != IO_RECVMMSG && !(call.flags & ZCT_MSG_TRUNC)) {
		if (track_boundary)
			account_add(nr, FT_TCP, ret, false);
		return;
	}
	close_sock_call(&call, ret);
}

/*
 * Closes a file syscall. read() on a file copies what it returns (the tracepoint path has no event
 * closer to the copy). A buffered write() whose copies no probe saw (a filesystem without the
 * write_end tracepoint) is counted from its return; bytes a copy_file_range/sendfile/splice put in
 * a file without any copy are the filesystem's clone (reflink) or unseen, and are reported as such.
 */
static __always_inline void close_io(struct io_call *call, __u32 tgid, long ret, __u32 method)
{
	if (ret > 0) {
		if (call->kind == IO_READ && (call->in & (FD_REG | FD_DIRECT)) == FD_REG &&
		    site_uses(SITE_FILE_READ_COPY, METHOD_TP_BTF))
			record(tgid, SITE_FILE_READ_COPY, ret);
		if (call->kind == IO_WRITE && (call->out & (FD_REG | FD_DIRECT)) == FD_REG &&
		    !call->seen_write && site_method[SITE_FILE_WRITE_COPY] != METHOD_NONE) {
			record(tgid, SITE_FILE_WRITE_COPY, ret);
			if (counting())
				__sync_fetch_and_add(&misc.write_bytes_by_return, ret);
		}
		if (kernel_copy_kind(call->kind) && (call->out & FD_REG) && !call->seen_write && counting())
			__sync_fetch_and_add(&misc.file_bytes_unseen, ret);
		if ((call->kind == IO_READ && (call->in & (FD_REG | FD_DIRECT)) == (FD_REG | FD_DIRECT)) ||
		    (call->kind == IO_WRITE && (call->out & (FD_REG | FD_DIRECT)) == (FD_REG | FD_DIRECT)))
			if (site_uses(SITE_DIRECT_IO, method))
				record(tgid, SITE_DIRECT_IO, ret);
		pipe_syscall_exit(tgid, call->kind, call->in, call->out, ret);
	}
	close_sock_call(call, ret);
	call->kind = IO_NONE;	/* closed: the thread's next call fills it again */
}

/* Thread @task's io_call if it is syscall @nr's: one an earlier call left (its exit unseen) is dropped. */
static __always_inline struct io_call *task_io_of(struct task_struct *task, __u32 nr)
{
	struct io_call *call = task_io(task);

	/* where the syscall's number is known (the registers', or an fentry pair's own) */
	if (call && nr < MAX_SYSCALLS && call->nr != nr) {
		call->kind = IO_NONE;
		return NULL;
	}
	return call;
}

/*
 * A read or write returns where its entry read nothing (rw_call()): a socket typed its slot, a file
 * event kept the call, or the descriptor is classified now. The slot is taken either way.
 */
static __always_inline void exit_rw(bool btf, struct pt_regs *regs, struct task_struct *task, __u32 nr, __u32 kind,
				    long ret, __u32 method)
{
	struct io_call now = { .kind = kind, .nr = nr }, *call;
	__u8 type = sock_call_type(nr);

	if (type && type != RW_FILE_MARK) {
		exit_sock_call(btf, regs, nr, kind, type, ret);
		return;
	}
	/* kept by a file event of this call, the mark lost only where a switch clears slots (raw_tp) */
	call = task_io_of(task, nr);
	if (!call) {
		if (ret <= 0 || !is_target_memo(TASK_READ(task, tgid)))
			return;
		rw_classify(btf, task, SYSCALL_ARG(btf, regs, 1), &now, 0);
		call = &now;
	}
	close_io(call, TASK_READ(task, tgid), ret, method);
}

/* Closes a followed syscall: what enter_io() kept, or a socket call's exit where it kept nothing. */
static __always_inline void exit_io(bool btf, struct pt_regs *regs, __u32 nr, __u32 kind, long ret, __u32 method)
{
	struct task_struct *task = current_task();
	struct io_call *call;

	if (socket_lengths && (kind == IO_READ || kind == IO_WRITE)) {
		exit_rw(btf, regs, task, nr, kind, ret, method);
		return;
	}
	call = task_io_of(task, nr);
	if (!call) {
		/* read or write on a socket: enter_io() kept nothing */
		if (kind == IO_READ || kind == IO_WRITE)
			exit_sock_call(btf, regs, nr, kind, sock_call_type(nr), ret);
		return;
	}
	close_io(call, TASK_READ(task, tgid), ret, method);
}

/* The exit of syscall @nr: only a followed syscall has an io_call to close, no lookup for the others. */
static __always_inline void on_sys_exit_nr(bool btf, struct pt_regs *regs, unsigned long nr, long ret, __u32 method)
{
	__u32 kind;

	if (!track_io)
		return;
	if (nr < MAX_SYSCALLS && !io_kind_of[nr])
		return;
	kind = nr < MAX_SYSCALLS ? io_kind_of[nr] : IO_NONE;
	if (kind >= IO_SEND && !sock_call_zc(btf, regs, nr, kind))
		exit_sock_call(btf, regs, nr, kind, sock_call_type(nr), ret);
	else
		exit_io(btf, regs, nr, kind, ret, method);
}

/*
 * A syscall's exit, its number from the task's registers (the sys_exit tracepoint's programs); not
 * read at all where no I/O call is followed.
 */
static __always_inline void on_sys_exit(bool btf, struct pt_regs *regs, long ret, __u32 method)
{
	if (track_io)
		on_sys_exit_nr(btf, regs, SYSCALL_NR(btf, regs), ret, method);
}

#endif /* ZCTRACE_IOCALL_BPF_H */
