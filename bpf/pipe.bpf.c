// SPDX-License-Identifier: GPL-2.0
/*
 * Pipe sites: pipe_write_copy (user->pipe buffer), pipe_ref (page references moved into a pipe by
 * vmsplice, splice, tee, sendfile) and pipe_read_copy (pipe buffer->user), by fexit or kretprobe
 * pipe_write/pipe_read, or by the syscall's return through iocall.bpf.h's syscall tracking, which
 * calls pipe_syscall_exit() (pipe.bpf.h).
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "filter.bpf.h"
#include "slots.bpf.h"
#include "pipe.bpf.h"

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
