/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The target filter: whether a process is traced (the targets, or the census's every process), and
 * who each process is (idents).
 */
#ifndef ZCTRACE_FILTER_BPF_H
#define ZCTRACE_FILTER_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"

static __always_inline bool is_target(__u32 tgid)
{
	if (trace_all)
		return tgid && tgid != self_tgid;
	/* the idle tasks (tgid 0) are no one's: no lookup for the switches to and from them */
	return tgid && bpf_map_lookup_elem(&targets, &tgid) != NULL;
}

/* is_target() through the memo of this CPU's state @cs: the filter every hot program runs first. */
static __always_inline bool is_target_at(struct cpu_state *cs, __u32 tgid)
{
	__u32 gen = (targets_gen & 0x7fffffff) << 1;
	__u64 *memo = cs ? &cs->memo : NULL, m;
	bool verdict;

	if (trace_all)
		return tgid && tgid != self_tgid;
	if (!tgid)
		return false;	/* the idle tasks: no lookup, and the memo keeps the verdict it has */
	if (memo) {
		m = *memo;
		if ((__u32)(m >> 32) == tgid && ((__u32)m & ~1U) == gen)
			return m & 1;
	}
	verdict = is_target(tgid);
	if (memo)
		*memo = (__u64)tgid << 32 | gen | verdict;
	return verdict;
}

/* The same, looking the CPU's state up. */
static __always_inline bool is_target_memo(__u32 tgid)
{
	/* the census's filter needs no state: no lookup */
	return trace_all ? is_target(tgid) : is_target_at(cpu_state(), tgid);
}

/*
 * The census notes who a process is when it makes its first key, if it is the one running (not a
 * softirq's), and again as it exits (@flags BPF_EXIST): what a short process last called itself.
 */
static __always_inline void note_ident(__u32 tgid, __u64 flags)
{
	struct proc_ident id = {};
	struct task_struct *task;

	if (!trace_all || current_tgid() != tgid)
		return;
	task = current_task();
	BPF_CORE_READ_STR_INTO(&id.comm, task, group_leader, comm);
	id.cgroup = bpf_get_current_cgroup_id();
	bpf_map_update_elem(&idents, &tgid, &id, flags);
}

/* A run's target process @tgid, as thread @task of it shows it now: its name and network namespace. */
static __always_inline void note_target_ident(struct task_struct *task, __u32 tgid)
{
	struct proc_ident id = {};

	if (trace_all)
		return;
	BPF_CORE_READ_STR_INTO(&id.comm, task, group_leader, comm);
	id.netns = BPF_CORE_READ(task, nsproxy, net_ns, ns.inum);
	if (!id.netns) {
		/* an exiting task may have let its namespaces go: it keeps the one noted before */
		struct proc_ident *was = bpf_map_lookup_elem(&idents, &tgid);

		if (was)
			id.netns = was->netns;
	}
	bpf_map_update_elem(&idents, &tgid, &id, BPF_ANY);
}

#endif /* ZCTRACE_FILTER_BPF_H */
