/*
 * The sampler's user side: the table of kernel functions its walk knows (ktable.h: kallsyms or
 * the boot's copy of it, and the JITed BPF programs; each named by role), the sampling events it
 * runs on, one per CPU, and its counts.
 */
#ifndef COST_H
#define COST_H

#include <stdbool.h>
#include <stddef.h>
#include "zctrace.h"

struct zctrace_bpf;
struct bpf_program;

/* samples a second on each CPU: a prime, off the kernel's tick; costs about 1% (make bench: sampler) */
#define COST_DEFAULT_HZ 997
#define COST_DEFAULT_HZ_STR "997"
#define COST_MAX_HZ 100000

/* The sampler's figures, summed over the CPUs. */
struct cost_figures {
	bool measured;			/* false: every figure below is absent, why says why */
	char why[200];
	const char *event;		/* "cpu-clock" */
	__u64 period_ns;		/* one sample stands for this much CPU time */
	unsigned hz;
	unsigned nfuncs;		/* kernel functions the walk knew */
	unsigned nfuncs_bpf;		/* ... JITed BPF functions among them */
	const char *funcs_from;		/* "kallsyms", or "cache": the boot's copy (ktable.h) */
	unsigned user_fns;		/* user-space copy routines it knew (user_copy) */
	bool user_measured;		/* user_copy's time is measured (at most half of the user-mode
					 * samples unread); else user_why says why */
	char user_why[200];
	__u64 user_phase;		/* user-mode samples in the measured phase */
	__u64 user_unread;		/* ... whose file the kernel could not read: placed in user */
	__u64 user_lib;			/* ... in the library of the copy routines known (libc) */
	__u64 all[NR_COST_CLASSES];	/* samples of the targets, from the exec zctrace started */
	__u64 phase[NR_COST_CLASSES];	/* ... inside the measured phase (all of them where not gated) */
	__u64 stack_errors;
	__u64 exiting;			/* of all, samples of tasks exiting: task-clock leaves them out */
};

/* Timed copies (run --time-copies), summed over the CPUs. */
struct copy_time_figures {
	bool asked;			/* --time-copies given: the report has a section, measured or not */
	bool measured;			/* false: why says why */
	char why[200];
	__u64 ns[NR_COST_CLASSES];	/* exclusive ns of timed calls: a site's, or other_copies */
	__u64 calls[NR_COST_CLASSES];
	__u64 switched;			/* calls the CPU left before they returned: counted, not timed */
	__u64 unmatched;
	__u64 too_deep;
};

/* A sampling rate @arg (NULL: COST_DEFAULT_HZ) into *@hz: 0, or -EINVAL outside @lo..COST_MAX_HZ. */
int cost_parse_hz(const char *arg, unsigned lo, unsigned *hz);
/* The role word (bpf/costwalk.h) of kernel function @name (suffixes such as ".isra.0" ignored). */
__u32 cost_word_of_name(const char *name);
/* The name of class @cls (enum site, then enum cost_class): a site's name or a kind's. */
const char *cost_class_name(int cls);

/*
 * Attaches the sampler's program @prog at @hz on every online CPU (its function table filled
 * first: cost_table_fill()). 0, or a negative errno with why in @why.
 */
int cost_attach(struct zctrace_bpf *obj, struct bpf_program *prog, unsigned hz, char *why, size_t n);
/* Fills the walk's function table in @obj, for the sampler and the timed copies: 0, or a negative
 * errno with why in @why. */
int cost_table_fill(struct zctrace_bpf *obj, char *why, size_t n);
/* Refills the function table after tracer_reset() emptied the maps. 0 or a negative errno. */
int cost_refill(struct zctrace_bpf *obj);
/* Closes the sampling events and their links (nothing if none). */
void cost_detach(void);
/* Reads the counts into @c, or says why there are none (@why_off: the probe's refusal, or NULL). */
void cost_read(struct zctrace_bpf *obj, struct cost_figures *c, const char *why_off);

/* Reads timed copies into @t, or says why there are none (@why_off: the probe's refusal, NULL if attached). */
void copy_time_read(struct zctrace_bpf *obj, struct copy_time_figures *t, bool asked, const char *why_off);

/*
 * A 95% interval for a count of @k samples (a Poisson count: the score interval), in samples.
 */
void cost_interval(__u64 k, double *lo, double *hi);

#endif
