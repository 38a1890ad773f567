/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The per-site counters: each CPU's slots claimed by a target (hot_sites), the shared map (sites),
 * the census's counters (census.bpf.h), and the log2 histograms of the copy sizes.
 */
#ifndef ZCTRACE_SLOTS_BPF_H
#define ZCTRACE_SLOTS_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "census.bpf.h"

/*
 * Whether a CPU's slot whose owner word is *@owner is @word's: already, or claimed now while free
 * (0). A compare-and-swap, since a program on the same CPU may claim it in between.
 */
static __always_inline bool claim_slot(__u64 *owner, __u64 word)
{
#ifdef ZCT_COMPAT
	/* no compare-and-swap: no slot is claimed, every count goes to the shared map */
	return *owner == word;
#else
	return *owner == word || (!*owner && !__sync_val_compare_and_swap(owner, 0, word));
#endif
}

/*
 * A claimed slot, added to with plain loads and stores, each about 5 ns cheaper than an atomic add
 * here. Only a program that cannot be preempted does so (tracepoints and kprobes run with
 * preemption off): on its CPU only an interrupt can come between its loads and stores, and a
 * program the interrupt runs finds the owner word busy (HOT_BUSY), claims nothing and counts in
 * the shared map. A program that may be preempted (fentry/fexit, uprobes: they only keep to their
 * CPU) adds atomically, and it too leaves a busy slot alone.
 */
static __always_inline void hold_slot(__u64 *owner, __u64 word)
{
	*owner = word | HOT_BUSY;
	asm volatile("" ::: "memory");
}

static __always_inline void let_go_slot(__u64 *owner, __u64 word)
{
	asm volatile("" ::: "memory");
	*owner = word;
}

/* Whether a program of @method may be preempted while it runs (see hold_slot()). */
static __always_inline bool method_preemptible(__u32 method)
{
	return method == METHOD_FENTRY || method == METHOD_USDT;
}

/*
 * Adds @ncopies copies of @bytes in all to a site; the histogram gets the mean copy size. The
 * programs that count once per message or skb take it inlined (record_inline()): here a call and
 * its return cost them as much as the counting. The others call record_n(), a global function the
 * verifier checks once, not again on every path of every program that counts. A caller that may
 * be preempted (@preemptible) adds to its CPU's slot atomically (hold_slot()); record_n() always
 * does, since the rare sites it counts include fexit's and uprobes'.
 */
static __always_inline int count_copies(struct task_struct *task, __u32 tgid, __u32 site, __u64 bytes,
					__u64 ncopies, bool preemptible)
{
	static const struct site_stats zero;
	struct site_key key = { .tgid = tgid, .site = site };
	struct site_stats *st;
	__u32 slot;

	if (!counting() || ncopies == 0)
		return 0;
	slot = log2_slot(ncopies == 1 ? bytes : bytes / ncopies);	/* no division for the one copy most calls count */
	if (trace_all && census_count(task, tgid, site, bytes, ncopies, slot))
		return 0;
	if (!trace_all) {
		struct hot_site *h = bpf_map_lookup_elem(&hot_sites, &site);

		if (h && claim_slot(&h->tgid, tgid)) {
			st = &h->st;
			if (preemptible)
				goto add;
			hold_slot(&h->tgid, tgid);
			st->count += ncopies;
			st->bytes += bytes;
			st->hist[slot] += ncopies;
			let_go_slot(&h->tgid, tgid);
			return 0;
		}
	}
	st = bpf_map_lookup_elem(&sites, &key);
	if (!st) {
		if (!bpf_map_update_elem(&sites, &key, &zero, BPF_NOEXIST)) {
			__sync_fetch_and_add(&misc.sites_made, 1);
			note_ident(tgid, BPF_ANY);
		}
		st = bpf_map_lookup_elem(&sites, &key);
		if (!st) {
			__sync_fetch_and_add(&misc.sites_dropped, 1);
			return 0;
		}
	}
add:
	__sync_fetch_and_add(&st->count, ncopies);
	__sync_fetch_and_add(&st->bytes, bytes);
	/* the census's sizes are in census_hists, over every process */
	if (!trace_all)
		__sync_fetch_and_add(&st->hist[slot], ncopies);
	return 0;
}

__noinline int record_n(__u32 tgid, __u32 site, __u64 bytes, __u64 ncopies)
{
	return count_copies(NULL, tgid, site, bytes, ncopies, true);
}

static __always_inline void record(__u32 tgid, __u32 site, __u64 bytes)
{
	record_n(tgid, site, bytes, 1);
}

/* One copy, counted inline by a program of @method: for the programs that count once per message
 * or skb. @task is the running thread's, where the program has it at hand; NULL otherwise. */
static __always_inline void record_inline(struct task_struct *task, __u32 tgid, __u32 site, __u64 bytes,
					  __u32 method)
{
	count_copies(task, tgid, site, bytes, 1, method_preemptible(method));
}

#endif /* ZCTRACE_SLOTS_BPF_H */
