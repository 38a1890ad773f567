// SPDX-License-Identifier: GPL-2.0
/*
 * The I/O syscalls alone, at their own functions (fentry/fexit on __x64_sys_read and the rest of
 * zctrace.h's ZCT_IO_SYSCALLS), in place of the raw syscall tracepoints sys_enter/sys_exit:
 * attached, those put every task of the machine on the syscall slow path, while these cost only
 * the calls they follow. The same work as the tracepoints' programs (on_syscall(),
 * on_sys_exit_nr()), from the same user registers (the wrapper's one argument is the task's
 * pt_regs), but for the number: each program's own, a constant (zctrace.h says why). Syscalls by
 * number are then the I/O syscalls' alone, so user space reports none.
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
/*
 * Each syscall's pair: its entry, and its exit counted as the sys_exit tracepoint's (METHOD_TP_BTF),
 * with the syscall's number from its slot of io_syscall_nr. A native task's registers hold the
 * same number; a compat task that reaches the same function (arm64's AArch32, x86's x32) is
 * followed as the native call it makes.
 */
#define IO_SYSCALL(name, kind)								\
SEC("fentry/" SYS_FUNC(name))								\
int BPF_PROG(io_##name##_entry, struct pt_regs *regs)					\
{											\
	on_syscall(true, regs, io_syscall_nr[IO_SYSCALL_##name]);			\
	return 0;									\
}											\
SEC("fexit/" SYS_FUNC(name))								\
int BPF_PROG(io_##name##_exit, struct pt_regs *regs, long ret)				\
{											\
	on_sys_exit_nr(true, regs, io_syscall_nr[IO_SYSCALL_##name], ret, METHOD_TP_BTF);\
	return 0;									\
}

ZCT_IO_SYSCALLS(IO_SYSCALL)
#endif
