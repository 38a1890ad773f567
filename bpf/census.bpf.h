/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The census's counting (zctrace.h, struct census_thread): each thread's copies in the thread
 * itself, the copy sizes per CPU, and the thread's last counters sent as it exits. The counting
 * it serves is slots.bpf.h's (count_copies()).
 */
#ifndef ZCTRACE_CENSUS_BPF_H
#define ZCTRACE_CENSUS_BPF_H
#include "common.bpf.h"
#include "settings.bpf.h"
#include "filter.bpf.h"

/* user space: the census counts in the threads (its task iterator attached), not in the sites hash */
const volatile __u8 census_threads = 0;

/* Serials of the threads counted, the last one given. */
__u64 census_serial = 0;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct census_thread);
} census_thread_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct census_hists);
} census_hists SEC(".maps");

/* Each counted thread's last counters, as it exits (the census sizes it). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} census_exits SEC(".maps");

/*
 * The running thread's counters, made at its first copy, or NULL where they cannot take this
 * one: the thread has exited, or a program of its own is adding to them (this one came in
 * between, from an interrupt).
 */
static __always_inline struct census_thread *census_thread_of(struct task_struct *task, __u32 tgid)
{
	struct census_thread *t;

	t = TASK_STATE(census_thread_counts, task, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t || t->state)
		return NULL;
	if (!t->serial) {
		t->tgid = tgid;
#ifdef ZCT_COMPAT
		/* no fetching add: its id, unique among the threads alive, and its start */
		t->serial = (__u64)TASK_READ(task, pid) << 32 | (__u32)BPF_CORE_READ(task, start_time);
#else
		t->serial = __sync_add_and_fetch(&census_serial, 1);
#endif
		note_ident(tgid, BPF_ANY);
	}
	return t;
}

/*
 * Counts @ncopies copies of @bytes at @site for the census, in size slot @slot: in the running
 * thread's counters (@task, the running one, or NULL) if it is @tgid's, with plain adds (only its
 * own programs write them, and one that comes in between finds them busy). Returns false where
 * the caller must count in the hash: another process's copy (a deferred copy found by its owner),
 * or counters that cannot take it.
 */
static __always_inline bool census_count(struct task_struct *task, __u32 tgid, __u32 site, __u64 bytes,
					 __u64 ncopies, __u32 slot)
{
	__u64 at = (__u64)site * MAX_SLOTS + slot;
	struct census_hists *h;
	struct census_thread *t;
	__u32 zero = 0;

	/* one 64-bit index, checked where it is used: 6.1's verifier loses a check of the 32-bit site */
	if (site >= NR_SITES || at >= NR_SITES * MAX_SLOTS)
		return true;
	h = bpf_map_lookup_elem(&census_hists, &zero);
	if (h)
		__sync_fetch_and_add(&h->hist[0][at], ncopies);
	if (!census_threads)
		return false;
	/* the running thread's, from its task (@task where the caller has it): a load, not a helper call */
	if (!task)
		task = current_task();
	if (TASK_READ(task, tgid) != tgid || !(t = census_thread_of(task, tgid)))
		return false;
	t->state = CENSUS_ADDING;
	asm volatile("" ::: "memory");
	t->site[site].count += ncopies;
	t->site[site].bytes += bytes;
	asm volatile("" ::: "memory");
	t->state = 0;
	return true;
}

/*
 * Thread @task exits: its counters are final. Marked so (nothing adds to them again, the task
 * iterator passes them by) before they are sent, so that user space, which takes the ring
 * buffer before it runs the iterator, meets them in one of the two only.
 */
static __always_inline void census_thread_exit(struct task_struct *task)
{
	struct census_thread *t;

	if (!census_threads)
		return;
	t = TASK_STATE(census_thread_counts, task, 0);
	if (!t || !t->serial || t->state == CENSUS_EXITED)
		return;
	t->state = CENSUS_EXITED;
	if (bpf_ringbuf_output(&census_exits, t, sizeof(*t), 0))
		__sync_fetch_and_add(&misc.census_exits_dropped, 1);
	/* in a hash (below 5.11), not left to crowd out the live threads' counters */
	TASK_STATE_GONE(census_thread_counts, TASK_READ(task, pid));
}

#endif /* ZCTRACE_CENSUS_BPF_H */
