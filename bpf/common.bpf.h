/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every part of zctrace's BPF object needs to read the kernel: the helpers and CO-RE, what the
 * kernel's BPF offers (HAVE_*, the compat object's loops), the running task and each thread's state,
 * the traced calls' arguments, registers and return values. The rest is in headers of its own, each
 * included where it is used: settings.bpf.h, maps.bpf.h, filter.bpf.h, sockcall.bpf.h, slots.bpf.h.
 */
#ifndef ZCTRACE_COMMON_BPF_H
#define ZCTRACE_COMMON_BPF_H
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "zctrace.h"

#define ZCT_PF_EXITING 0x00000004	/* include/linux/sched.h: set at the start of do_exit() */

/*
 * What the kernel's BPF offers. Linux 5.11 gave tracing programs task storage and the running task
 * as a typed pointer, 5.15 a task's user registers, 5.17 bpf_loop() and fexit's return value by
 * helper. The compat object (below) asks the kernel's BTF at load (CO-RE: the verifier drops the
 * branch not taken); below 5.11 a thread's state lives in an LRU hash keyed by its id (user space
 * makes each task-storage map one: tracer.c), and the running task is an untyped pointer read
 * with BPF_CORE_READ.
 */
#ifdef ZCT_COMPAT
#define HAVE_TASK_STORAGE bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_storage_get)
#define HAVE_TASK_BTF bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf)
#define HAVE_TASK_PT_REGS bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)
#else
/* the main object loads from 5.17 on only (user/trace/tracer.c), where all of them are */
#define HAVE_TASK_STORAGE 1
#define HAVE_TASK_BTF 1
#define HAVE_TASK_PT_REGS 1
#endif

/*
 * The compat object (ZCT_COMPAT: the same source, built for kernels before bpf_loop(), 5.17)
 * leaves out what such a verifier refuses even on a branch it would drop: bpf_loop()'s callbacks
 * (5.13), atomics that return a value (5.12). Its loops are bounded ones, of at most @max turns.
 */
#ifdef ZCT_COMPAT
#define ZCT_LOOP(nr, max, fn, ctx)						\
	do {									\
		__u32 loop_nr = (nr);						\
									\
		for (__u32 loop_i = 0; loop_i < (max) && loop_i < loop_nr; loop_i++) \
			fn(loop_i, ctx);					\
	} while (0)
#define ZCT_TURNS(max) ((max) < 64 ? (max) : 64)	/* what such a verifier follows in one program */
/* a function checked alone (global) takes no pointer argument before 5.12: checked in place */
#define ZCT_GLOBAL static __always_inline
#else
#define ZCT_LOOP(nr, max, fn, ctx) bpf_loop((nr) < (max) ? (nr) : (max), fn, ctx, 0)
#define ZCT_TURNS(max) (max)
#define ZCT_GLOBAL __noinline
#endif

/* The running thread. */
static __always_inline struct task_struct *current_task(void)
{
	if (HAVE_TASK_BTF)
		return bpf_get_current_task_btf();
	return (struct task_struct *)bpf_get_current_task();
}

/* Field @field of a task current_task() gave (typed: a load; untyped: a read). */
#define TASK_READ(task, field) (HAVE_TASK_BTF ? (task)->field : BPF_CORE_READ(task, field))

/* Zeros: a thread's first state where the state lives in a hash (the largest is the census's). */
__u8 task_state_zeroes[sizeof(struct census_thread)] = {};

static __always_inline void *task_state_in_hash(void *map, __u32 tid, __u64 flags)
{
	void *v = bpf_map_lookup_elem(map, &tid);

	if (v || !(flags & BPF_LOCAL_STORAGE_GET_F_CREATE))
		return v;
	bpf_map_update_elem(map, &tid, task_state_zeroes, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, &tid);
}

/*
 * Thread @task's state in task-storage map @map, made if @flags say so (BPF_LOCAL_STORAGE_GET_F_CREATE),
 * or NULL: in the task itself, or in the hash keyed by its id that stands for the map below 5.11.
 */
#define TASK_STATE(map, task, flags)									\
	({												\
		_Static_assert(sizeof(*(map).value) <= sizeof(task_state_zeroes), "task_state_zeroes"); \
		(__typeof__((map).value))(HAVE_TASK_STORAGE ?						\
			bpf_task_storage_get(&(map), task, 0, flags) :					\
			task_state_in_hash(&(map), TASK_READ(task, pid), flags));			\
	})

/* Drops thread @tid's state where it lives in a hash (below 5.11): the task's own goes with it. */
#define TASK_STATE_GONE(map, tid)									\
	do {												\
		__u32 gone_tid = (tid);									\
													\
		if (!HAVE_TASK_STORAGE)									\
			bpf_map_delete_elem(&(map), &gone_tid);						\
	} while (0)

/*
 * Thread @task's user registers, as it entered the kernel (typed from 5.15; before, where the
 * kernel keeps them, at the top of its stack: read them with SYSCALL_ARG(HAVE_TASK_PT_REGS, ...)).
 */
static __always_inline struct pt_regs *task_user_regs(struct task_struct *task)
{
	if (HAVE_TASK_PT_REGS)
		return (struct pt_regs *)bpf_task_pt_regs(task);
#if defined(__TARGET_ARCH_x86) || defined(__TARGET_ARCH_arm64)
	/* task_pt_regs(): x86-64 and arm64 keep no padding above them, with 16 KiB stacks */
	return (struct pt_regs *)((__u64)BPF_CORE_READ(task, stack) + 16384) - 1;
#else
	return NULL;
#endif
}

/*
 * A field of kernel object @p: a plain load where the verifier types the pointer (tp_btf, fentry:
 * @btf, a constant, so that each method keeps only its own branch), else a probe read (raw_tp,
 * kprobe, and pointers the programs keep as numbers).
 */
#define READ_FIELD(btf, p, field) ((btf) ? (p)->field : BPF_CORE_READ(p, field))

/*
 * How many times @task has been switched out: __schedule() counts a switch before its tracepoint,
 * and nothing counts while the task is off the CPU. @btf as READ_FIELD()'s.
 */
static __always_inline __u64 switches_of(bool btf, struct task_struct *task)
{
	return READ_FIELD(btf, task, nvcsw) + READ_FIELD(btf, task, nivcsw);
}

/* ... of a task current_task() gave. */
static __always_inline __u64 task_switches(struct task_struct *task)
{
	return switches_of(HAVE_TASK_BTF, task);
}

/*
 * Syscall argument @n from the syscall's registers: a plain load where the verifier types them
 * (tp_btf, @btf, a constant: each method keeps only its own branch), else a read.
 */
#define SYSCALL_ARG(btf, regs, n) \
	((btf) ? PT_REGS_PARM##n##_SYSCALL(regs) : PT_REGS_PARM##n##_CORE_SYSCALL(regs))

#if defined(__TARGET_ARCH_x86)
#define SYSCALL_NR(btf, regs) READ_FIELD(btf, regs, orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define SYSCALL_NR(btf, regs) READ_FIELD(btf, regs, syscallno)
#else
#define SYSCALL_NR(btf, regs) MAX_SYSCALLS	/* unknown here: look every call up */
#endif

static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xFFFFFFFF) << 5; v >>= shift; r |= shift;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	/*
	 * A mask, not a compare: the verifier must see the bound, and clang drops the compare. The
	 * asm keeps clang from moving the mask onto one operand of the ORs above, a bound that 6.1's
	 * verifier does not carry through them.
	 */
	asm volatile("%0 &= %1" : "+r"(r) : "i"(MAX_SLOTS - 1));
	return r;
}

static __always_inline __u32 current_tgid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/* What the traced function returned, in an fexit program (bpf_get_func_ret: the return value's
 * place among the arguments moves when a kernel adds one). */
static __always_inline long func_ret(void *ctx)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return (long)ret;
}

/*
 * The same for a function whose first @nargs arguments are all it has on every kernel before 5.17:
 * the compat object, built for those kernels (no bpf_get_func_ret()), reads the return where fexit
 * puts it, after them.
 */
static __always_inline long func_ret_after(void *ctx, int nargs)
{
#ifdef ZCT_COMPAT
	return (long)((__u64 *)ctx)[nargs];
#else
	return func_ret(ctx);
#endif
}

#endif /* ZCTRACE_COMMON_BPF_H */
