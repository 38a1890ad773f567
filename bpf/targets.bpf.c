// SPDX-License-Identifier: GPL-2.0
/*
 * Target filter: the traced processes follow forks and exits (tp_btf, raw_tp).
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "census.bpf.h"

/* ---- target filter: follow forks ---------------------------------------------------------- */

static __always_inline void on_fork(struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct step_stats *step;
	__u8 one = 1;

	/* the census needs no list: every process is one */
	if (trace_all || !is_target(ptgid))
		return;

	if (bpf_map_update_elem(&targets, &ctgid, &one, BPF_ANY))
		__sync_fetch_and_add(&misc.targets_dropped, 1);
	else if (ctgid != ptgid)
		note_target_ident(child, ctgid);
	__sync_fetch_and_add(&targets_gen, 1);
	__sync_fetch_and_add(&misc.forks, 1);
	step = cur_step();
	if (step)
		__sync_fetch_and_add(&step->forks, 1);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(fork_btf, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child);
	return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(fork_raw, struct task_struct *parent, struct task_struct *child)
{
	on_fork(parent, child);
	return 0;
}

static __always_inline void on_exit(struct task_struct *task)
{
	struct step_stats *step;
	__u32 tid;

	if (!is_target(BPF_CORE_READ(task, tgid)))
		return;
	tid = BPF_CORE_READ(task, pid);
	if (trace_all && tid == BPF_CORE_READ(task, tgid))
		note_ident(tid, BPF_EXIST);
	/* the process's last name: the running task's, typed on either method */
	if (!trace_all && tid == BPF_CORE_READ(task, tgid))
		note_target_ident(current_task(), tid);
	/* the exiting thread is the running one: its typed task, on either method */
	if (trace_all)
		census_thread_exit(current_task());
	/* its calls' state, where it lives in a hash (below 5.11); its verdicts and off-CPU start are
	 * checked against what they were made for, and age out */
	TASK_STATE_GONE(io_calls, tid);
	TASK_STATE_GONE(send_call_task, tid);
	__sync_fetch_and_add(&misc.exits, 1);
	step = cur_step();
	if (step)
		__sync_fetch_and_add(&step->exits, 1);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *task)
{
	on_exit(task);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *task)
{
	on_exit(task);
	return 0;
}
