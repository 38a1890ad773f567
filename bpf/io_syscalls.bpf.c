// SPDX-License-Identifier: GPL-2.0
/*
 * The I/O syscalls alone, at their own functions (fentry/fexit on __x64_sys_read and the rest of
 * iocalls.c's list), in place of the raw syscall tracepoints sys_enter/sys_exit: attached, those
 * put every task of the machine on the syscall slow path, while these cost only the calls they
 * follow. The same work as the tracepoints' programs (on_syscall(), on_sys_exit()), from the
 * same user registers: the wrapper's one argument is the task's pt_regs, orig_ax its number.
 * Syscalls by number are then the I/O syscalls' alone, so user space reports none.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone).
 */
#include "common.bpf.h"
#include "iocall.bpf.h"
#include "syscalls.bpf.h"

#if defined(__TARGET_ARCH_x86)
#define SYS_FUNC(name) "__x64_sys_" #name
#elif defined(__TARGET_ARCH_arm64)
#define SYS_FUNC(name) "__arm64_sys_" #name
#endif

#ifdef SYS_FUNC
/* Each syscall's pair: its entry, and its exit counted as the sys_exit tracepoint's (METHOD_TP_BTF). */
#define IO_SYSCALL(name)								\
SEC("fentry/" SYS_FUNC(name))								\
int BPF_PROG(io_##name##_entry, struct pt_regs *regs)					\
{											\
	on_syscall(true, regs, SYSCALL_NR(true, regs));					\
	return 0;									\
}											\
SEC("fexit/" SYS_FUNC(name))								\
int BPF_PROG(io_##name##_exit, struct pt_regs *regs, long ret)				\
{											\
	on_sys_exit(true, regs, ret, METHOD_TP_BTF);					\
	return 0;									\
}

IO_SYSCALL(read)
IO_SYSCALL(pread64)
IO_SYSCALL(readv)
IO_SYSCALL(preadv)
IO_SYSCALL(preadv2)
IO_SYSCALL(write)
IO_SYSCALL(pwrite64)
IO_SYSCALL(writev)
IO_SYSCALL(pwritev)
IO_SYSCALL(pwritev2)
IO_SYSCALL(sendfile64)
IO_SYSCALL(splice)
IO_SYSCALL(copy_file_range)
IO_SYSCALL(vmsplice)
IO_SYSCALL(tee)
IO_SYSCALL(sendto)
IO_SYSCALL(sendmsg)
IO_SYSCALL(sendmmsg)
IO_SYSCALL(recvfrom)
IO_SYSCALL(recvmsg)
IO_SYSCALL(recvmmsg)
#endif
