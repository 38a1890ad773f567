/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What file.bpf.c shares: the I/O syscalls followed from entry (enter_io(), syscalls.bpf.h's
 * on_syscall()) to exit (on_sys_exit()), with their descriptors classified; the socket call's type
 * noted where its socket returns its length (type_at_length()); the file sites of an io_uring
 * request (file_uring_done()).
 */
#ifndef ZCTRACE_FILE_BPF_H
#define ZCTRACE_FILE_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "sockcall.bpf.h"
#include "slots.bpf.h"
#include "boundary.bpf.h"
#include "pipe.bpf.h"
#include "sock.bpf.h"

/*
 * Pages the targets brought into the page cache, by file: file.bpf.c's alone, defined here ahead of
 * fd_verdicts, the place the object lays it out in.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct pc_key);
	__type(value, __u64);
} pc_adds SEC(".maps");

#define ZCT_FMODE_READ 0x1
#define ZCT_FMODE_WRITE 0x2

/* The calling task's open file at descriptor @fd, or NULL. */
static __always_inline struct file *fd_file(long fd)
{
	struct task_struct *task = current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *f = NULL;

	if (fd < 0 || !fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (bpf_core_read(&f, sizeof(f), &fds[fd]))
		return NULL;
	return f;
}

/*
 * The same, for tp_btf (@btf): the walk to the table is plain loads through the typed @task (the
 * current one, which the caller has at hand); the table's slots are untyped for the verifier and
 * still read as raw_tp reads them.
 */
static __always_inline struct file *fd_file_at(bool btf, struct task_struct *task, long fd)
{
	struct fdtable *fdt;
	struct file **fds, *f = NULL;

	if (!btf || !HAVE_TASK_BTF)
		return fd_file(fd);
	fdt = task->files->fdt;
	if (fd < 0 || !fdt || fd >= fdt->max_fds)
		return NULL;
	fds = fdt->fd;
	if (bpf_core_read(&f, sizeof(f), &fds[fd]))
		return NULL;
	return f;
}

/* FD_* flags of open file @f (0 for NULL); its enum fd_type in @type when @type is set. */
static __always_inline __u8 file_class_type(struct file *f, __u8 *type)
{
	__u32 mode, flags;
	__u8 cls = 0;

	if (!f)
		return 0;
	mode = BPF_CORE_READ(f, f_inode, i_mode) & ZCT_S_IFMT;
	flags = BPF_CORE_READ(f, f_flags);
	if (mode == ZCT_S_IFREG)
		cls |= FD_REG;
	else if (mode == ZCT_S_IFIFO)
		cls |= FD_PIPE;
	else if (mode == ZCT_S_IFSOCK)
		cls |= FD_SOCK;
	if (flags & o_direct_flag)
		cls |= FD_DIRECT;
	if (type)
		*type = file_type(f, mode, flags);
	return cls;
}

static __always_inline __u8 file_class(struct file *f)
{
	return file_class_type(f, NULL);
}

/*
 * Each thread's last verdict on an open file (tp_btf only: raw_tp has no typed task to keep it
 * in). Most calls use the descriptor the thread used last, and reading what a socket is costs
 * nine reads. The verdict depends on the inode (its type, its socket: both fixed for its life)
 * and on f_flags (O_DIRECT; fcntl changes it), and is reused only while the descriptor's struct
 * file, its inode's address and number and its flags all match: a descriptor closed and opened
 * again may get the same struct file back, but not the same inode at the same address with the
 * same number (sockets and pipes number theirs from one counter, get_next_ino()).
 */
struct fd_verdict {
	__u64 file;	/* struct file * */
	__u64 inode;	/* struct inode * */
	__u64 ino;
	__u32 flags;	/* f_flags */
	__u8 cls;	/* FD_* */
	__u8 type;	/* enum fd_type */
	__u16 pad;
	__u32 open_call;	/* a read or write on this socket is under way: its syscall number + 1 */
	__u32 pad2;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fd_verdict);
} fd_verdicts SEC(".maps");

/*
 * The file's inode and flags in one read where they lie close, as they do in every kernel from
 * 6.1 on (f_inode and f_flags 8 to 32 bytes apart): each read is a helper call, the dearest part
 * of the verdict's check. The offsets are CO-RE's, constants by the time the verifier sees them.
 */
static __always_inline void file_inode_flags(struct file *f, struct inode **inode, __u32 *flags)
{
	__u32 off_i = bpf_core_field_offset(struct file, f_inode), off_f = bpf_core_field_offset(struct file, f_flags);
	__u32 lo = off_i < off_f ? off_i : off_f;
	__u64 span[6] = {};	/* 48 bytes, 8-aligned */

	if (off_i - lo <= sizeof(span) - 8 && off_f - lo <= sizeof(span) - 4 && !((off_i - lo) & 7) &&
	    !bpf_probe_read_kernel(span, sizeof(span), (void *)f + lo)) {
		*inode = (struct inode *)span[(off_i - lo) / 8];
		*flags = ((__u32 *)span)[(off_f - lo) / 4];
		return;
	}
	bpf_core_read(inode, sizeof(*inode), &f->f_inode);
	bpf_core_read(flags, sizeof(*flags), &f->f_flags);
}

/*
 * file_class_type() through the calling thread's last verdict, where @btf allows one; the verdict
 * notes @open_call (read and write on a socket: the syscall's number + 1, else 0) for the exit.
 */
static __always_inline __u8 file_class_type_at(bool btf, struct task_struct *task, struct file *f, __u8 *type,
						__u32 open_call)
{
	struct fd_verdict *v, now = { .file = (__u64)f };
	struct inode *inode = NULL;

	if (!btf || !f)
		return file_class_type(f, type);
	file_inode_flags(f, &inode, &now.flags);
	if (inode)
		bpf_core_read(&now.ino, sizeof(now.ino), &inode->i_ino);
	now.inode = (__u64)inode;
	v = TASK_STATE(fd_verdicts, task, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (v && v->file == now.file && v->inode == now.inode && v->ino == now.ino && v->flags == now.flags) {
		v->open_call = open_call && (v->cls & FD_SOCK) ? open_call : 0;
		*type = v->type;
		return v->cls;
	}
	now.cls = file_class_type(f, &now.type);
	now.open_call = open_call && (now.cls & FD_SOCK) ? open_call : 0;
	if (v)
		*v = now;
	*type = now.type;
	return now.cls;
}

/* FD_* flags of the calling task's descriptor @fd. */
static __always_inline __u8 fd_class(long fd)
{
	return file_class(fd_file(fd));
}

/*
 * vmsplice() moves user memory into the pipe when its descriptor is open for writing, else out
 * of it: the kernel's own test (vmsplice_type()). The pipe is the destination or the source.
 */
static __always_inline void vmsplice_classify(struct io_call *call, long fd)
{
	struct file *f = fd_file(fd);
	__u32 fmode = f ? BPF_CORE_READ(f, f_mode) : 0;

	if (fmode & ZCT_FMODE_WRITE)
		call->out = file_class(f);
	else if (fmode & ZCT_FMODE_READ)
		call->in = file_class(f);
}

/*
 * A socket call's flags: sendto/recvfrom(fd, buf, len, flags), send/recvmmsg(fd, vec, vlen, flags),
 * send/recvmsg(fd, msg, flags); read and write on a socket have none.
 */
static __always_inline __u32 sock_call_flags(bool btf, struct pt_regs *regs, __u32 nr, __u32 kind)
{
	if (kind == IO_READ || kind == IO_WRITE)
		return 0;
	return kind == IO_RECVMMSG || kind == IO_SENDMMSG || nr == recvfrom_nr || nr == sendto_nr ?
	       SYSCALL_ARG(btf, regs, 4) : SYSCALL_ARG(btf, regs, 3);
}

static __always_inline bool sock_call_zc(bool btf, struct pt_regs *regs, __u32 nr, __u32 kind)
{
	return (kind == IO_SEND || kind == IO_SENDMMSG) &&
	       (sock_call_flags(btf, regs, nr, kind) & ZCT_MSG_ZEROCOPY);
}

/*
 * What a socket call's arguments say (its descriptor's type, its mmsghdr vector, its flags), read
 * at its entry or at its exit: the syscall's registers keep its arguments until it returns.
 */
static __always_inline struct file *sock_call_at(bool btf, struct pt_regs *regs, __u32 nr, __u32 kind,
						 struct io_call *call)
{
	struct task_struct *task = current_task();
	struct file *f = fd_file_at(btf, task, SYSCALL_ARG(btf, regs, 1));

	call->kind = kind;
	call->nr = nr;
	file_class_type_at(btf, task, f, &call->type, 0);
	call->vec = SYSCALL_ARG(btf, regs, 2);
	call->flags = sock_call_flags(btf, regs, nr, kind);
	return f;	/* its open file: the descriptor is looked up once */
}

/*
 * A read's or write's descriptor @fd, classified into @call: its class goes in as its source or
 * out as its destination by the call's kind, and is returned; @open_call as file_class_type_at().
 */
static __always_inline __u8 rw_classify(bool btf, struct task_struct *task, long fd, struct io_call *call,
					__u32 open_call)
{
	__u8 cls = file_class_type_at(btf, task, fd_file_at(btf, task, fd), &call->type, open_call);

	if (call->kind == IO_READ)
		call->in = cls;
	else
		call->out = cls;
	return cls;
}

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

	/* where the registers name the syscall */
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

/* Only a followed syscall has an io_call to close: no lookup for the others. */
static __always_inline void on_sys_exit(bool btf, struct pt_regs *regs, long ret, __u32 method)
{
	unsigned long nr;
	__u32 kind;

	if (!track_io)
		return;
	nr = SYSCALL_NR(btf, regs);
	if (nr < MAX_SYSCALLS && !io_kind_of[nr])
		return;
	kind = nr < MAX_SYSCALLS ? io_kind_of[nr] : IO_NONE;
	if (kind >= IO_SEND && !sock_call_zc(btf, regs, nr, kind))
		exit_sock_call(btf, regs, nr, kind, sock_call_type(nr), ret);
	else
		exit_io(btf, regs, nr, kind, ret, method);
}

/* Set before load: the file sites counted where an io_uring request completes (1 << enum site). */
const volatile __u32 uring_file_sites = 0;

/*
 * An io_uring read or write request (@kind: enum io_kind) on a regular file (@type: enum fd_type)
 * of process @tgid completed with @res bytes. Buffered, those bytes were copied between the page
 * cache and user memory, as a read() or write() copies what it returns; with O_DIRECT they went
 * by DMA (direct_io). Counted here on every method: the probes inside a copy (fexit, kretprobe,
 * ext4's write_end) count only inside a read or write syscall (rw_call()), and a request runs in
 * io_uring_enter(), in task work or in an io-wq worker, never there. An io-wq worker and an
 * SQPOLL thread are of the submitter's thread group: the bytes are the submitter's.
 */
static __always_inline void file_uring_done(__u32 tgid, __u8 kind, __u8 type, long res)
{
	__u32 site;

	if (kind != IO_READ && kind != IO_WRITE)
		return;
	if (type == FT_REG)
		site = kind == IO_READ ? SITE_FILE_READ_COPY : SITE_FILE_WRITE_COPY;
	else if (type == FT_REG_DIRECT)
		site = SITE_DIRECT_IO;
	else
		return;
	if (uring_file_sites & 1U << site)
		record(tgid, site, res);
}

#endif /* ZCTRACE_FILE_BPF_H */
