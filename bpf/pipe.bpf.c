// SPDX-License-Identifier: GPL-2.0
/*
 * Pipe sites: pipe_write_copy (user->pipe buffer), pipe_ref (page references moved into a pipe by
 * vmsplice, splice, tee, sendfile) and pipe_read_copy (pipe buffer->user), by fexit or kretprobe
 * pipe_write/pipe_read, or by the syscall's return through file.bpf.c's syscall tracking, which
 * calls pipe_syscall_exit() below (this file is included before it).
 * One part of zctrace.bpf.c's object (it includes every part after common.bpf.h): each
 * site keeps all its flavours here, for every kernel.
 */

/* Whether @site counts from the syscall's return: its tp_btf or raw_tp flavour. */
static __always_inline bool by_return(__u32 site)
{
	return !(standalone_sites & 1U << site) && (site_uses(site, METHOD_TP_BTF) || site_uses(site, METHOD_RAW_TP));
}

/*
 * A pipe syscall's return, classified at its entry by file.bpf.c's enter_io(): @in and @out are the
 * FD_* classes of its source and destination. write() and read() on a pipe copy what they return
 * (the tracepoint flavours of the copy sites); whatever enters a pipe by vmsplice, splice, tee or
 * sendfile enters as page references, the only flavour pipe_ref has. vmsplice() out of a pipe
 * copies to user memory without pipe_read(), so its return is pipe_read_copy's on every method.
 */
static __always_inline void pipe_syscall_exit(__u32 tgid, __u32 kind, __u8 in, __u8 out, long ret)
{
	if (ret <= 0)
		return;
	switch (kind) {
	case IO_WRITE:
		if ((out & FD_PIPE) && by_return(SITE_PIPE_WRITE_COPY))
			record(tgid, SITE_PIPE_WRITE_COPY, ret);
		break;
	case IO_READ:
		if ((in & FD_PIPE) && by_return(SITE_PIPE_READ_COPY))
			record(tgid, SITE_PIPE_READ_COPY, ret);
		break;
	case IO_VMSPLICE:
		if ((in & FD_PIPE) && site_method[SITE_PIPE_READ_COPY] != METHOD_NONE &&
		    !(standalone_sites & 1U << SITE_PIPE_READ_COPY))
			record(tgid, SITE_PIPE_READ_COPY, ret);
		/* fall through: into the pipe */
	case IO_SPLICE:
	case IO_TEE:
	case IO_SENDFILE:
		if ((out & FD_PIPE) && by_return(SITE_PIPE_REF))
			record(tgid, SITE_PIPE_REF, ret);
		break;
	}
}

/*
 * pipe_write() and pipe_read() return what they copied, whoever called them: write()/read() and
 * their vector forms, on anonymous pipes and FIFOs alike, io_uring's requests too.
 */
static __always_inline void on_pipe_copy(__u32 site, __u32 method, long ret)
{
	__u32 tgid;

	if (ret <= 0 || !site_uses(site, method))
		return;
	tgid = current_tgid();
	if (is_target_memo(tgid))
		record(tgid, site, ret);
}

/* pipe_write(iocb, from) and pipe_read(iocb, to) since 4.x: a kretprobe there misses the returns of
 * the readers and writers that sleep inside beyond its instances, fexit none */
SEC("fexit/pipe_write")
int BPF_PROG(pipe_write_fexit)
{
	on_pipe_copy(SITE_PIPE_WRITE_COPY, METHOD_FENTRY, func_ret_after(ctx, 2));
	return 0;
}

SEC("kretprobe/pipe_write")
int BPF_KRETPROBE(pipe_write_kretprobe, long ret)
{
	on_pipe_copy(SITE_PIPE_WRITE_COPY, METHOD_KPROBE, ret);
	return 0;
}

SEC("fexit/pipe_read")
int BPF_PROG(pipe_read_fexit)
{
	on_pipe_copy(SITE_PIPE_READ_COPY, METHOD_FENTRY, func_ret_after(ctx, 2));
	return 0;
}

SEC("kretprobe/pipe_read")
int BPF_KRETPROBE(pipe_read_kretprobe, long ret)
{
	on_pipe_copy(SITE_PIPE_READ_COPY, METHOD_KPROBE, ret);
	return 0;
}
