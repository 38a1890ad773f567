// SPDX-License-Identifier: GPL-2.0
/*
 * The sampler: what each copy costs. A perf_event program on a sampling event of every CPU
 * (user/trace/cost.c opens them) takes each sample of a traced task, reads its kernel stack and
 * places it, in the kernel, by bpf/costwalk.h's rule over the functions user space named
 * (cost_ranges, sorted by address): a copy site's copy, or a kind of other time; a user-mode
 * sample in one of libc's copy routines (user_copy_fns) is the program's own copy. Counts per CPU,
 * for the whole run and for the measured phase.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone).
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "costwalk.h"

_Static_assert(NR_COST_CLASSES <= COST_SLOTS, "a slot for every class");
_Static_assert(NR_COST_CLASSES <= 256, "a class fits the walk's state byte");

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

/* The user-space copy routines and their library's build ID, set by user space before the
 * sampler attaches (none: every user-mode sample is user). */
struct user_copy_fn user_copy_fns[USER_COPY_FNS] = {};
__u32 user_copy_nfns = 0;
__u8 user_copy_lib[USER_COPY_BUILD_ID] = {};


/* ZCT_TURNS: the search's halvings, log2(COST_MAX_RANGES) */
#define COST_SEARCH_TURNS 15
_Static_assert(COST_MAX_RANGES <= 0xffff, "a span's two ends fit in one scalar");

#define SPAN(lo, hi) ((lo) | (hi) << 16)
#define SPAN_LO(s) ((s) & 0xffff)
#define SPAN_HI(s) ((s) >> 16)
#define SPAN_LOST 0xffffffffU

/*
 * One halving of the search for @ip: the ranges [lo, hi) to the half that holds the last one
 * starting at or below it. A global function taking and giving scalars: the verifier checks it
 * once. Inlined, each halving's two outcomes doubled the paths it walked (2^15 at the last, 840,000
 * instructions of its 1,000,000 and half a second of a load here).
 */
__noinline __u32 cost_search_halve(__u32 span, __u64 ip)
{
	__u32 lo = SPAN_LO(span), hi = SPAN_HI(span), mid = (lo + hi) / 2;
	struct cost_range *r = bpf_map_lookup_elem(&cost_ranges, &mid);

	if (!r)
		return SPAN_LOST;
	return r->start <= ip ? SPAN(mid, hi) : SPAN(lo, mid);
}

/*
 * The role word of the function holding address @ip, 0 if none the walk knows. A global function,
 * which the verifier checks once, not at each frame of the walk (it takes no pointer: 5.6 and on).
 */
__noinline __u32 cost_word_of(__u64 ip)
{
	__u32 hi = cost_nranges, span, lo;
	struct cost_range *r;

	if (hi > COST_MAX_RANGES)
		hi = COST_MAX_RANGES;
	if (!hi)
		return 0;
	/* the last range that starts at or below @ip lies in [lo, hi) */
	span = SPAN(0, hi);
	for (int i = 0; i < COST_SEARCH_TURNS && SPAN_HI(span) - SPAN_LO(span) > 1; i++) {
		span = cost_search_halve(span, ip);
		if (span == SPAN_LOST)
			return 0;
	}
	lo = SPAN_LO(span);
	r = bpf_map_lookup_elem(&cost_ranges, &lo);
	if (!r || ip < r->start || ip - r->start >= r->len)
		return 0;
	return r->word;
}

/* The walk's state between two frames, in one scalar: copying, pending, decided, the class. */
#define WALK_COPYING 1
#define WALK_PENDING 2
#define WALK_DONE 4
#define WALK_CLASS(s) ((s) >> 8)

/*
 * One frame of the walk (cost_step()) from and to that scalar. A global function: the verifier
 * checks it once, where inlined in the loop it walked every frame for each mix of the walk's
 * fields it could meet (880,000 instructions of its 1,000,000, half a second of a load here).
 */
__noinline __u32 cost_walk_frame(__u32 state, __u32 depth, __u32 word)
{
	struct cost_walk w = {
		.copying = !!(state & WALK_COPYING),
		.pending = !!(state & WALK_PENDING),
		.cls = WALK_CLASS(state),
	};
	__u32 done = cost_step(&w, depth, word) ? WALK_DONE : 0;

	return (w.copying ? WALK_COPYING : 0) | (w.pending ? WALK_PENDING : 0) | done | (w.cls & 0xff) << 8;
}

#ifndef ZCT_COMPAT
/* bpf_find_vma()'s callback: whether the mapping holds a file. */
static long user_vma_file(struct task_struct *task, struct vm_area_struct *vma, bool *file)
{
	*file = !!vma->vm_file;
	return 0;
}

/*
 * Whether a user-mode sample at @ip, whose build ID the kernel did not give, is unread: the
 * mappings were held (bpf_find_vma() fails alike: -EBUSY), or its file has no build ID the kernel
 * could read. Code in no file (anonymous, JITed, the vDSO) is no library's copy: not unread.
 */
static __always_inline bool user_unread(__u64 ip)
{
	bool file = true;
	long err = bpf_find_vma(bpf_get_current_task_btf(), ip, user_vma_file, &file, 0);

	return err == -EBUSY || (!err && file);
}
#else
/* before bpf_find_vma() (5.17): every sample whose build ID the kernel did not give */
static __always_inline bool user_unread(__u64 ip)
{
	return true;
}
#endif

/*
 * A user-mode sample: the program's own copy (user_copy) where its address lies in a user-space
 * copy routine, else user. The kernel gives the address as its file's build ID and the offset in
 * it (bpf_get_stack()'s BPF_F_USER_BUILD_ID, one frame). Counted: those it could not read (another
 * held the task's mappings; on PREEMPT_RT, in every interrupt), and those in the copy routines'
 * library (libc) at all, by which user space knows the program ran that library.
 */
static __always_inline __u32 place_user(struct bpf_perf_event_data *ctx, struct cost_cpu *cc)
{
	struct bpf_stack_build_id id = {};
	/* from the exec of the process zctrace started: before it, that process is zctrace's fork */
	bool phase = counting() && (!root_tgid || misc.exec_seen);
	__u64 a, b, c, d;
	__u32 e, f;

	if (!user_copy_nfns || trace_all)
		return COST_USER;
	if (phase)
		cc->user_phase++;
	if (bpf_get_stack(ctx, &id, sizeof(id), BPF_F_USER_STACK | BPF_F_USER_BUILD_ID) < (long)sizeof(id) ||
	    id.status != BPF_STACK_BUILD_ID_VALID) {
		if (phase && user_unread(PT_REGS_IP(&ctx->regs)))
			cc->user_unread++;
		return COST_USER;
	}
	/* the library's build ID, compared 8, 8 and 4 bytes at a time */
	__builtin_memcpy(&a, id.build_id, 8);
	__builtin_memcpy(&b, user_copy_lib, 8);
	__builtin_memcpy(&c, id.build_id + 8, 8);
	__builtin_memcpy(&d, user_copy_lib + 8, 8);
	__builtin_memcpy(&e, id.build_id + 16, 4);
	__builtin_memcpy(&f, user_copy_lib + 16, 4);
	if (a != b || c != d || e != f)
		return COST_USER;
	if (phase)
		cc->user_lib++;
	for (__u32 i = 0; i < USER_COPY_FNS; i++) {
		if (i >= user_copy_nfns)
			break;
		if (id.offset >= user_copy_fns[i].start && id.offset < user_copy_fns[i].end)
			return SITE_USER_COPY;
	}
	return COST_USER;
}

/* Where the walk places the sample of a target whose kernel stack is in cc->ips (@n bytes). */
static __always_inline __u32 place(struct bpf_perf_event_data *ctx, struct cost_cpu *cc, long n)
{
	struct cost_walk w = {};
	__u32 state = 0;

	if (n <= 0) {
		/* a user-mode sample has no kernel stack (an empty one, or an error before 6.x); a kernel
		 * one whose stack cannot be read is counted */
		if ((long)PT_REGS_IP(&ctx->regs) >= 0)
			return place_user(ctx, cc);
		if (n < 0)
			cc->stack_errors++;
		return COST_KERNEL_OTHER;
	}
	n /= sizeof(__u64);
	for (__u32 i = 0; i < COST_FRAMES; i++) {
		if (i >= n)
			break;
		state = cost_walk_frame(state, i, cost_word_of(cc->ips[i]));
		if (state & WALK_DONE)
			return WALK_CLASS(state);
	}
	w.copying = !!(state & WALK_COPYING);
	w.pending = !!(state & WALK_PENDING);
	w.cls = WALK_CLASS(state);
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
	slot = cls;
	barrier_var(slot);	/* the mask where the verifier sees it, next to the loads */
	slot &= COST_SLOTS - 1;
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

/*
 * Timed copies (--time-copies): fentry and fexit on the copy routines fentry can reach.
 * A CPU keeps a stack of the calls open on it: an interrupt's copy inside a task's is timed apart
 * and left out of the task's. A context switch empties the stack (copy_time_switch), so a call
 * that slept (a page fault's I/O) or was preempted is counted, not timed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct copy_time_cpu);
} copy_times SEC(".maps");

#define COPY_TIME_DATAGRAM 1
#define COPY_TIME_UBUFS 2

static __always_inline void copy_time_enter(__u32 fn)
{
	__u32 zero = 0, d;
	struct copy_time_cpu *ct;

	if (!counting() || !is_target_memo(current_tgid()))
		return;
	ct = bpf_map_lookup_elem(&copy_times, &zero);
	if (!ct)
		return;
	d = ct->depth;
	if (d >= COPY_TIME_DEPTH) {
		ct->too_deep++;
		return;
	}
	/* masked where the verifier sees it (5.10's loses the check above through the spill) */
	barrier_var(d);
	d &= COPY_TIME_DEPTH - 1;
	/*
	 * An interrupt can time a copy of its own at any point here (a softirq's deferred copy). The
	 * slot is cleared, then claimed, then filled: a call that comes in before the claim takes the
	 * slot and leaves it; one that comes in after lands above it and adds to its nested time.
	 */
	ct->f[d].nested = 0;
	barrier();
	ct->depth = d + 1;
	barrier();
	ct->f[d].tid = (__u32)bpf_get_current_pid_tgid();
	ct->f[d].fn = fn;
	ct->f[d].start = bpf_ktime_get_ns();
}

static __always_inline void copy_time_exit(void *ctx, __u32 fn)
{
	__u64 now = bpf_ktime_get_ns(), took, start, nested;
	__u32 zero = 0, d, state = WALK_COPYING, cls = COST_COPY_OTHER, tid = (__u32)bpf_get_current_pid_tgid();
	struct copy_time_cpu *ct = bpf_map_lookup_elem(&copy_times, &zero);
	bool leading = true;
	long n;

	if (!ct)
		return;
	d = ct->depth;
	if (!d || d > COPY_TIME_DEPTH)
		return;
	d--;
	barrier_var(d);
	d &= COPY_TIME_DEPTH - 1;
	start = ct->f[d].start;
	nested = ct->f[d].nested;
	if (ct->f[d].tid != tid || ct->f[d].fn != fn) {
		ct->unmatched++;
		return;
	}
	/* the frame is read before it is let go: an interrupt's call may take the slot from here on */
	barrier();
	ct->depth = d;
	took = now > start ? now - start : 0;
	took -= nested < took ? nested : took;
	/*
	 * The caller's stack: the tracer's own frames (this program, its trampoline) first. The
	 * scratch is the CPU's: an interrupt's timed copy inside this walk is skb_copy_ubufs(),
	 * which reads no stack.
	 */
	n = fn == COPY_TIME_UBUFS ? 0 : bpf_get_stack(ctx, ct->ips, sizeof(ct->ips), 0);
	n = n > 0 ? (__u64)n / sizeof(__u64) : 0;
	for (__u32 i = 0; i < COST_FRAMES; i++) {
		__u32 word;

		if (i >= n)
			break;
		word = cost_word_of(ct->ips[i]);
		if (leading && (COST_ROLE(word) == ROLE_NONE ||
				(COST_ROLE(word) == ROLE_KIND && COST_CLASS(word) == COST_TRACER)))
			continue;
		leading = false;
		state = cost_walk_frame(state, i, word);
		if (state & WALK_DONE)
			break;
	}
	cls = state & WALK_DONE ? WALK_CLASS(state) : state & WALK_PENDING ? SITE_FILE_WRITE_COPY : COST_COPY_OTHER;
	/* skb_copy_ubufs() is the deferred copy itself, whoever calls it */
	if (fn == COPY_TIME_UBUFS)
		cls = SITE_DEFERRED_COPY;
	/* a copy that no site holds stays a copy: other_copies, never a kind of non-copy time */
	if (cls >= NR_SITES)
		cls = COST_COPY_OTHER;
	barrier_var(cls);
	cls &= COST_SLOTS - 1;
	ct->ns[cls] += took;
	ct->calls[cls]++;
	/* the call inside another: its whole time, this walk's too, is not the outer one's */
	if (d) {
		__u32 up = d - 1;

		barrier_var(up);
		up &= COPY_TIME_DEPTH - 1;
		ct->f[up].nested += bpf_ktime_get_ns() - start;
	}
}

/* A context switch: the calls open on this CPU are the task's that leaves it; none is timed. */
SEC("tp_btf/sched_switch")
int BPF_PROG(copy_time_switch)
{
	__u32 zero = 0;
	struct copy_time_cpu *ct = bpf_map_lookup_elem(&copy_times, &zero);

	if (ct && ct->depth) {
		ct->switched += ct->depth;
		ct->depth = 0;
	}
	return 0;
}

#define COPY_TIMED(fn, id)						\
	SEC("fentry/" #fn)						\
	int BPF_PROG(fn##_time_in)					\
	{								\
		copy_time_enter(id);					\
		return 0;						\
	}								\
	SEC("fexit/" #fn)						\
	int BPF_PROG(fn##_time_out)					\
	{								\
		copy_time_exit(ctx, id);				\
		return 0;						\
	}

/*
 * The copies fentry can reach on Debian's kernels (5.10 to 6.12): a socket receive's copy to the
 * user (TCP, UDP, Unix), and the deferred copy. lib/iov_iter.c's routines, under every other
 * site's copy, have no ftrace entry there, so no trampoline.
 */
COPY_TIMED(skb_copy_datagram_iter, COPY_TIME_DATAGRAM)
COPY_TIMED(skb_copy_ubufs, COPY_TIME_UBUFS)
