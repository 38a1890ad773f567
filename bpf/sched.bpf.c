// SPDX-License-Identifier: GPL-2.0
/*
 * Context switches and off-CPU time (tp_btf, raw_tp sched_switch), and the exec perf starts at.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "sockcall.bpf.h"
#include "sched.bpf.h"

/* An add to a switch figure: plain on this CPU's sum, atomic on the census's shared one. */
static __always_inline void sched_add(__u64 *v, __u64 n)
{
	if (trace_all)
		__sync_fetch_and_add(v, n);
	else
		*v += n;
}

/* The figures a switch of @tgid adds to: this CPU's sum for a run, the process's for the census. */
static __always_inline struct sched_stats *sched_of(__u32 tgid)
{
	static const struct sched_stats zero;
	struct sched_stats *st;
	__u32 zero_key = 0;

	if (!trace_all)
		return bpf_map_lookup_elem(&sched_cpu, &zero_key);
	st = bpf_map_lookup_elem(&sched, &tgid);
	if (!st) {
		bpf_map_update_elem(&sched, &tgid, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&sched, &tgid);
	}
	return st;
}

/* When a task left the CPU, and its switches then (switches_of()): its last time out only while
 * they are unchanged. */
struct offcpu_mark {
	__u64 start;
	__u64 switches;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u32);	/* tid */
	__type(value, struct offcpu_mark);
} offcpu_start SEC(".maps");

/*
 * ... the same for tp_btf, whose task pointers the verifier trusts: the time sits in the task
 * itself, with no hash update on the way out and no lookup and delete on the way back. Beside it,
 * the socket call the task was in as it left (maps.bpf.h's sock_call_slots), for its CPU's slot
 * when it comes back.
 */
struct task_sched {
	__u64 offcpu_start;	/* ns when it left the CPU, 0 once taken */
	__u64 sock_call;	/* its CPU's SOCK_SLOT() word as it left, 0 once taken */
	__u64 switches;		/* switches_of() as it left: which leaving sock_call is from */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_sched);
} offcpu_task SEC(".maps");

/* The target task (tid) that last ran on each CPU: a step's handoffs are counted against it. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} last_target SEC(".maps");

/* ---- context switches and off-CPU time ----------------------------------------------------- */

/*
 * Now, on the scheduler's own clock: the runqueue's (rq->clock, sched_clock_cpu()), which
 * __schedule() brought up to date before picking @next, the clock the scheduler's own accounting
 * (schedstats, delay accounting) reads. @next is queued on this CPU's runqueue, reached through its
 * CFS runqueue: plain loads and no helper call, where bpf_ktime_get_ns() can cost as much as all
 * the rest of the program (rdtsc in a guest). After a wakeup that preempts, __schedule() keeps the
 * wakeup's update: the time a switch-out is stamped with is then that wakeup's, at most the few
 * microseconds until the switch earlier. A kernel without group scheduling has no cfs_rq->rq: there,
 * the monotonic clock.
 */
static __always_inline __u64 switch_clock(bool btf, struct task_struct *next)
{
	struct cfs_rq *cfs_rq = NULL;

	if (!bpf_core_field_exists(cfs_rq->rq))
		return bpf_ktime_get_ns();
	if (btf)
		return next->se.cfs_rq->rq->clock;
	return BPF_CORE_READ(next, se.cfs_rq, rq, clock);
}

/*
 * Set once a switch-out's time went to offcpu_start on tp_btf, the task's storage having refused
 * it: from then on a switch-in that finds no time in the task looks there too.
 */
volatile __u32 offcpu_in_hash;

/*
 * A target task leaves the CPU at @now, inside socket call @sock_call (a SOCK_SLOT() word, or 0):
 * noted in the task (@btf), or the time alone by its tid (the call is dropped: its exit reads the
 * descriptor). The task's storage refuses while a program preempted on this CPU holds its lock
 * (before 6.2, on PREEMPT_RT: @prev itself, preempted inside a storage call), and then the time
 * goes by tid too.
 */
static __always_inline void offcpu_begin(bool btf, struct task_struct *prev, __u64 now, __u64 sock_call)
{
	struct offcpu_mark mark;
	struct task_sched *ts;
	__u32 tid;

	if (btf) {
		ts = offcpu_storage_refused ? NULL : TASK_STATE(offcpu_task, prev, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (ts) {
			ts->offcpu_start = now;
			ts->sock_call = sock_call;
			ts->switches = switches_of(btf, prev);
			return;
		}
	}
	tid = READ_FIELD(btf, prev, pid);
	mark.start = now;
	mark.switches = switches_of(btf, prev);
	if (bpf_map_update_elem(&offcpu_start, &tid, &mark, BPF_ANY))
		__sync_fetch_and_add(&misc.offcpu_dropped, 1);
	else if (btf && !offcpu_in_hash)
		offcpu_in_hash = 1;
}

/*
 * When target task @next (@tid) left the CPU, taken: 0 if its last time out was not noted. The
 * socket call it was in then, taken too, goes to *@sock_call (left 0 if none).
 */
static __always_inline __u64 offcpu_end(bool btf, struct task_struct *next, __u32 tid, __u64 *sock_call)
{
	struct offcpu_mark *mark;
	struct task_sched *ts;
	__u64 start;

	if (btf) {
		ts = TASK_STATE(offcpu_task, next, 0);
		start = 0;
		if (ts) {
			/*
			 * Only what the task's last time out left: a switch-out this program did not
			 * see to the end (before 6.2 the storage refuses even a lookup while a preempted
			 * program holds this CPU's lock on it), or whose time went by tid, must bring
			 * back what an earlier one left neither into a later call nor as the start of a
			 * later time off the CPU.
			 */
			start = ts->switches == switches_of(btf, next) ? ts->offcpu_start : 0;
			if (start)
				*sock_call = ts->sock_call;
			ts->offcpu_start = 0;
			ts->sock_call = 0;
		}
		if (start || !offcpu_in_hash)
			return start;
	}
	mark = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!mark)
		return 0;
	/* one left by a switch-in not seen, or by a thread gone whose id came back, is not this one's */
	start = mark->switches == switches_of(btf, next) ? mark->start : 0;
	bpf_map_delete_elem(&offcpu_start, &tid);
	return start;
}

/* Target @prev (of @tgid) leaves the CPU at @now: its switch is counted. Its figures, or NULL. */
static __always_inline struct sched_stats *switch_out(bool btf, bool preempt, struct task_struct *prev,
						      unsigned int prev_state, __u32 tgid, bool next_target,
						      __u64 now, __u64 sock_call)
{
	struct sched_stats *st = sched_of(tgid);
	struct step_stats *step = cur_step();
	/* the scheduler's own rule for nvcsw/nivcsw in __schedule() */
	bool voluntary = !preempt && prev_state;

	if (st) {
		if (voluntary)
			sched_add(&st->voluntary, 1);
		else
			sched_add(&st->involuntary, 1);
#ifdef ZCT_COMPAT
		if (!trace_all)
			__sync_fetch_and_add(&misc.switches_compat, 1);
#endif
	} else {
		__sync_fetch_and_add(&misc.sched_dropped, 1);
	}
	if (step) {
		if (voluntary) {
			__sync_fetch_and_add(&step->voluntary, 1);
		} else {
			__sync_fetch_and_add(&step->involuntary, 1);
			if (!next_target)
				__sync_fetch_and_add(&step->preempted, 1);
		}
	}
	/* perf stops counting a task inside do_exit(): what follows is the tracer's alone */
	if (READ_FIELD(btf, prev, flags) & ZCT_PF_EXITING)
		__sync_fetch_and_add(&misc.switches_exiting, 1);
	offcpu_begin(btf, prev, now, sock_call);
	return st;
}

/*
 * The tgids come from the caller: tp_btf (@btf) reads them directly, raw_tp through CO-RE reads;
 * @btf is a constant, so each method keeps only its own branches. @prev is the task running: the
 * per-CPU memo mostly holds its verdict already, and is left holding @next's. Threads of one
 * process switching to each other share one verdict and one lookup of their figures.
 */
static __always_inline void on_switch(bool btf, bool preempt, struct task_struct *prev,
				      struct task_struct *next, unsigned int prev_state,
				      __u32 prev_tgid, __u32 next_tgid)
{
	struct cpu_state *cs = cpu_state();
	bool prev_target = is_target_at(cs, prev_tgid);
	/* through the memo too: @next runs from here, and its own events ask for its verdict next */
	bool next_target = next_tgid == prev_tgid ? prev_target : is_target_at(cs, next_tgid);
	struct sched_stats *st = NULL;
	__u32 tgid = next_tgid;
	__u32 tid, zero_key = 0, *last;
	__u64 now, start, *slot = NULL, sock_call = 0;

	/*
	 * Every switch, any thread's: the CPU's socket call slot (open_sock_call()) goes with @prev
	 * (only a target opens one), and comes back with @next below, or is 0.
	 */
	if (socket_lengths) {
		slot = sock_call_slot();
		if (slot) {
			sock_call = *slot;
			*slot = 0;
		}
	}
	if (!prev_target && !next_target)
		return;
	now = switch_clock(btf, next);
	if (prev_target) {
		/* raw_tp has no task storage to keep it in: the call's exit reads the descriptor */
		if (!btf || SOCK_SLOT_TID(sock_call) != prev->pid)
			sock_call = 0;
		st = switch_out(btf, preempt, prev, prev_state, prev_tgid, next_target, now, sock_call);
	}
	if (!next_target)
		return;
	tid = READ_FIELD(btf, next, pid);
	/*
	 * A handoff: this CPU now runs a target task other than the target that ran on it last.
	 * Unlike switches, a task outside the targets running in between (A -> X -> A, or
	 * A -> X -> B) neither adds nor hides one.
	 */
	last = bpf_map_lookup_elem(&last_target, &zero_key);
	if (last) {
		struct step_stats *step = cur_step();

		if (step && *last && *last != tid)
			__sync_fetch_and_add(&step->handoffs, 1);
		*last = tid;
	}
	sock_call = 0;
	start = offcpu_end(btf, next, tid, &sock_call);
	if (slot && sock_call)
		*slot = sock_call;
	if (start && now > start) {
		__u64 delta = now - start;

		/* a run's sum is the same for both; the census's is each process's */
		if (!st || (trace_all && next_tgid != prev_tgid))
			st = sched_of(tgid);
		if (st) {
			sched_add(&st->offcpu_ns, delta);
			sched_add(&st->offcpu_hist[log2_slot(delta / 1000)], 1);
		}
	}
}

/* perf counts from the exec (enable_on_exec): note how many switches happened before it. */
static __always_inline void on_exec(struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid);

	/* the name it takes from here: the running task's, typed on either method */
	if (!trace_all && is_target(tgid))
		note_target_ident(current_task(), tgid);
	if (!root_tgid || tgid != root_tgid || misc.exec_seen)
		return;
	misc.switches_before_exec = switches_so_far(tgid);
	misc.exec_seen = 1;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(exec_btf, struct task_struct *task)
{
	on_exec(task);
	return 0;
}

SEC("raw_tp/sched_process_exec")
int BPF_PROG(exec_raw, struct task_struct *task)
{
	on_exec(task);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	on_switch(true, preempt, prev, next, prev_state, prev->tgid, next->tgid);
	return 0;
}

/* task_struct's state before 5.14, when it was renamed __state */
struct task_struct___state {
	long state;
} __attribute__((preserve_access_index));

extern int LINUX_KERNEL_VERSION __kconfig;

/*
 * The tracepoint gives the state @prev leaves in from 5.18; before, it has three arguments (one
 * read past them refuses the attach), and the state is the task's own as it leaves: a task a
 * signal woke as it went to sleep reads running there.
 */
SEC("raw_tp/sched_switch")
int switch_raw(__u64 *ctx)
{
	struct task_struct *prev = (void *)ctx[1], *next = (void *)ctx[2];
	unsigned int prev_state;

	if (LINUX_KERNEL_VERSION >= KERNEL_VERSION(5, 18, 0))
		prev_state = ctx[3];
	else if (bpf_core_field_exists(prev->__state))
		prev_state = BPF_CORE_READ(prev, __state);
	else
		prev_state = BPF_CORE_READ((struct task_struct___state *)prev, state);
	on_switch(false, ctx[0], prev, next, prev_state, BPF_CORE_READ(prev, tgid), BPF_CORE_READ(next, tgid));
	return 0;
}
