/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Descriptor classification: the calling task's open file at a descriptor (fd_file()), its FD_*
 * class and enum fd_type (file_class_type()), each thread's last verdict on an open file
 * (fd_verdicts), and what a socket call's arguments say (sock_call_at()). iocall.bpf.h classifies
 * a followed syscall's descriptors with these, and file.bpf.c a read's or write's (rw_classify()).
 */
#ifndef ZCTRACE_FDCLASS_BPF_H
#define ZCTRACE_FDCLASS_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "boundary.bpf.h"

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

#endif /* ZCTRACE_FDCLASS_BPF_H */
