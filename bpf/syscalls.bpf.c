// SPDX-License-Identifier: GPL-2.0
/*
 * Syscalls by number (whole run, measured phase, microbenchmark step) and page faults.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "syscalls.bpf.h"

SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_btf, struct pt_regs *regs, long id)
{
	on_syscall(true, regs, id);
	return 0;
}

SEC("raw_tp/sys_enter")
int BPF_PROG(sys_enter_raw, struct pt_regs *regs, long id)
{
	on_syscall(false, regs, id);
	return 0;
}

static __always_inline void on_fault(bool user)
{
	struct step_stats *step;

	if (!is_target_memo(current_tgid()))
		return;
	__sync_fetch_and_add(user ? &misc.page_faults_user : &misc.page_faults_kernel, 1);
	step = cur_step();
	if (step)
		__sync_fetch_and_add(user ? &step->faults_user : &step->faults_kernel, 1);
}

SEC("tp_btf/page_fault_user")
int BPF_PROG(fault_user_btf) { on_fault(true); return 0; }

SEC("tp_btf/page_fault_kernel")
int BPF_PROG(fault_kernel_btf) { on_fault(false); return 0; }

SEC("raw_tp/page_fault_user")
int BPF_PROG(fault_user_raw) { on_fault(true); return 0; }

SEC("raw_tp/page_fault_kernel")
int BPF_PROG(fault_kernel_raw) { on_fault(false); return 0; }
