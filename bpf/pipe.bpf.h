/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What pipe.bpf.c shares: the pipe sites counted at a pipe syscall's return, which iocall.bpf.h's
 * syscall tracking closes through pipe_syscall_exit().
 */
#ifndef ZCTRACE_PIPE_BPF_H
#define ZCTRACE_PIPE_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "slots.bpf.h"

/* Whether @site counts from the syscall's return: its tp_btf or raw_tp method. */
static __always_inline bool by_return(__u32 site)
{
	return !(standalone_sites & 1U << site) && (site_uses(site, METHOD_TP_BTF) || site_uses(site, METHOD_RAW_TP));
}

/*
 * A pipe syscall's return, classified at its entry by iocall.bpf.h's enter_io(): @in and @out are
 * the FD_* classes of its source and destination. write() and read() on a pipe copy what they return
 * (the tracepoint methods of the copy sites); whatever enters a pipe by vmsplice, splice, tee or
 * sendfile enters as page references, the only method pipe_ref has. vmsplice() out of a pipe
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

#endif /* ZCTRACE_PIPE_BPF_H */
