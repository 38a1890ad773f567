/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What sched.bpf.c shares: the switch figures, and how many switches a run's targets made so far
 * (switches_so_far(), which the exec and the execve the perf counters start at ask for).
 */
#ifndef ZCTRACE_SCHED_BPF_H
#define ZCTRACE_SCHED_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"

/* The census's switches and off-CPU time, by process. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MAX_TARGETS);
	__type(key, __u32);	/* tgid */
	__type(value, struct sched_stats);
} sched SEC(".maps");

/*
 * A run's, summed over its targets (user space reads no more), per CPU: no lookup by process, and
 * plain adds, since sched_switch runs with interrupts off and nothing else writes them.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sched_stats);
} sched_cpu SEC(".maps");

#ifndef ZCT_COMPAT
struct cpu_sum {
	__u64 switches;
};

static long add_cpu_switches(__u32 cpu, struct cpu_sum *sum)
{
	__u32 zero_key = 0;
	struct sched_stats *st = bpf_map_lookup_percpu_elem(&sched_cpu, &zero_key, cpu);

	if (st)
		sum->switches += st->voluntary + st->involuntary;
	return 0;
}
#endif

/*
 * The switches counted so far for @tgid: for a run, those of all its targets, which before the
 * first target's exec are its own (the others are its children, made after it).
 */
static __always_inline __u64 switches_so_far(__u32 tgid)
{
	struct sched_stats *st;

	if (trace_all) {
		st = bpf_map_lookup_elem(&sched, &tgid);
		return st ? st->voluntary + st->involuntary : 0;
	}
#ifdef ZCT_COMPAT
	return misc.switches_compat;
#else
	struct cpu_sum sum = {};

	bpf_loop(nr_cpus, add_cpu_switches, &sum, 0);
	return sum.switches;
#endif
}

#endif /* ZCTRACE_SCHED_BPF_H */
