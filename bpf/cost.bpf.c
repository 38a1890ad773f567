// SPDX-License-Identifier: GPL-2.0
/*
 * The sampler: what each copy costs. A perf_event program on a sampling event of every CPU
 * (user/trace/cost.c opens them) takes each sample of a traced task, reads its kernel stack and
 * places it, in the kernel, by bpf/costwalk.h's rule over the functions user space named
 * (cost_ranges, sorted by address): a copy site's copy, or a kind of other time. Counts per CPU,
 * for the whole run and for the measured phase.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone).
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "costwalk.h"

_Static_assert(NR_COST_CLASSES <= COST_SLOTS, "a slot for every class");

/* Functions the walk knows, sorted by start; user space fills cost_nranges of them after load. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, COST_MAX_RANGES);
	__type(key, __u32);
	__type(value, struct cost_range);
} cost_ranges SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cost_cpu);
} cost_cpus SEC(".maps");

/*
 * The census's copy samples by process (--cost); one entry where the census does not sample. Not
 * per CPU: that would be the map times the CPUs, in the kernel and in each read.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, CENSUS_CPU_PROCS);
	__type(key, __u32);
	__type(value, struct census_cpu);
} census_cpu SEC(".maps");

/* Set by user space once cost_ranges is filled: until then every sample is kernel_other. */
__u32 cost_nranges = 0;


/* ZCT_TURNS: the search's halvings, log2(COST_MAX_RANGES) */
#define COST_SEARCH_TURNS 15

/*
 * The role word of the function holding address @ip, 0 if none the walk knows. A global function,
 * which the verifier checks once, not at each frame of the walk (it takes no pointer: 5.6 and on).
 */
__noinline __u32 cost_word_of(__u64 ip)
{
	__u32 lo = 0, hi = cost_nranges, mid;
	struct cost_range *r;

	if (hi > COST_MAX_RANGES)
		hi = COST_MAX_RANGES;
	if (!hi)
		return 0;
	/* the last range that starts at or below @ip lies in [lo, hi) */
	for (int i = 0; i < COST_SEARCH_TURNS && hi - lo > 1; i++) {
		mid = (lo + hi) / 2;
		r = bpf_map_lookup_elem(&cost_ranges, &mid);
		if (!r)
			return 0;
		if (r->start <= ip)
			lo = mid;
		else
			hi = mid;
	}
	r = bpf_map_lookup_elem(&cost_ranges, &lo);
	if (!r || ip < r->start || ip - r->start >= r->len)
		return 0;
	return r->word;
}

/* Where the walk places the sample of a target whose kernel stack is in cc->ips (@n bytes). */
static __always_inline __u32 place(struct bpf_perf_event_data *ctx, struct cost_cpu *cc, long n)
{
	struct cost_walk w = {};

	if (n < 0) {
		/* a user-mode sample has no kernel stack to read; a kernel one that fails is counted */
		if ((long)PT_REGS_IP(&ctx->regs) >= 0)
			return COST_USER;
		cc->stack_errors++;
		return COST_KERNEL_OTHER;
	}
	n /= sizeof(__u64);
	for (__u32 i = 0; i < COST_FRAMES; i++) {
		if (i >= n)
			return cost_finish(&w, n);
		if (cost_step(&w, i, cost_word_of(cc->ips[i])))
			return w.cls;
	}
	return cost_finish(&w, n);
}

/* A census sample of process @tgid in copy site @site's copy. */
static __always_inline void census_sample(__u32 tgid, __u32 site)
{
	struct census_cpu *c = bpf_map_lookup_elem(&census_cpu, &tgid);

	if (!c) {
		struct census_cpu fresh = {};

		bpf_map_update_elem(&census_cpu, &tgid, &fresh, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&census_cpu, &tgid);
		if (!c) {
			__sync_fetch_and_add(&misc.census_samples_dropped, 1);
			return;
		}
	}
	/* a 64-bit index, checked where it is used (the verifier loses a check of the 32-bit one) */
	__u64 i = site;

	barrier_var(i);
	if (i < NR_SITES)
		__sync_fetch_and_add(&c->samples[i], 1);
}

SEC("perf_event")
int cost_sample(struct bpf_perf_event_data *ctx)
{
	struct cost_cpu *cc;
	__u32 zero = 0, cls, slot, tgid = current_tgid();

	if (!is_target_memo(tgid))
		return 0;
	cc = bpf_map_lookup_elem(&cost_cpus, &zero);
	if (!cc)
		return 0;
	cls = place(ctx, cc, bpf_get_stack(ctx, cc->ips, sizeof(cc->ips), 0));
	if (cls >= NR_COST_CLASSES)
		cls = COST_KERNEL_OTHER;
	/* the census (every process but zctrace): only the copies, by process */
	if (trace_all) {
		if (cls < NR_SITES)
			census_sample(tgid, cls);
		return 0;
	}
	slot = cls & (COST_SLOTS - 1);
	barrier_var(slot);	/* the mask where the verifier sees it, next to the loads */
	/* the run's task-clock starts at the exec of the process zctrace started: so does this count */
	if (!root_tgid || misc.exec_seen) {
		cc->all[slot]++;
		/* task-clock leaves out a task's exit (do_exit() stops it early): counted apart */
		if (BPF_CORE_READ((struct task_struct *)bpf_get_current_task(), flags) & ZCT_PF_EXITING)
			cc->exiting++;
	}
	if (counting())
		cc->phase[slot]++;
	return 0;
}
