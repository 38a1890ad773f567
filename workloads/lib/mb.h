/*
 * The microbenchmark harness: options, timed samples with warm-up, distributions, numbered steps
 * (USDT zctrace:step) and the assumptions zctrace checks against the kernel's counts of a step.
 */
#ifndef MB_H
#define MB_H

#include <stdbool.h>
#include <stdint.h>
#include "wl.h"

/* Marks the start of numbered step @id (> 0) of a microbenchmark, or its end (0): one probe site. */
void wl_step_mark(uint32_t id);
#define WL_STEP_MARK(id) wl_step_mark(id)

#define MB_MAX_STEPS WL_MAX_STEPS	/* step ids 1..63: the tracer keeps MAX_STEPS */

/* ---- options ---- */

enum mb_opt_type {
	MB_COUNT,	/* a positive integer */
	MB_SIZE,	/* bytes, suffixes K, M, G */
	MB_CPU,		/* a CPU number, or -1 for none */
	MB_SECONDS,	/* a positive number of seconds */
	MB_CHOICE,	/* one of the words in @choices, separated by '|' */
	MB_FLAG,	/* no argument: sets a bool */
	MB_STRING,	/* any non-empty word, e.g. a directory */
};

/* An option's meaning, and a choice's words, are its row of mb_opt_docs (contract/mbdocs.c). */
struct mb_opt {
	const char *name;
	enum mb_opt_type type;
	void *dst;		/* uint64_t for COUNT/SIZE, int for CPU, double for SECONDS,
				   const char * for CHOICE and STRING, bool for FLAG */
	uint64_t min, max;	/* COUNT and SIZE bounds; max 0 = 1..2^62 */
};

/*
 * Parses argv against @opts (terminated by a NULL name) of workload @name; prints usage for
 * --help. An option without its row in mb_opt_docs, or a row without its option, fails it.
 */
int mb_parse(int argc, char **argv, const char *name, const char *what, const struct mb_opt *opts);
/* One option's value into o->dst, within its bounds (a choice: among @choices); a one-line error and -1 if not. */
int mb_set_opt(const char *name, const struct mb_opt *o, const char *choices, const char *arg);
/* An integer, digits only, below 2^63. */
int mb_parse_count(const char *s, uint64_t *out);

/* ---- timing ---- */

static inline uint64_t mb_now_ns(void)
{
	return wl_now_ns();
}

#if defined(__x86_64__) || defined(__i386__)
#define MB_HAVE_TSC 1
static inline uint64_t mb_rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}

/* rdtscp waits for earlier instructions to finish: the end of a timed stretch. */
static inline uint64_t mb_rdtscp(void)
{
	uint32_t lo, hi, aux;

	__asm__ __volatile__("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	return ((uint64_t)hi << 32) | lo;
}
#else
#define MB_HAVE_TSC 0
static inline uint64_t mb_rdtsc(void) { return 0; }
static inline uint64_t mb_rdtscp(void) { return 0; }
#endif

/* TSC ticks per second, measured against CLOCK_MONOTONIC; 0 where there is no TSC. */
double mb_tsc_hz(void);

/* Keeps the compiler from dropping or merging work whose result is otherwise unused. */
#define mb_barrier() __asm__ __volatile__("" ::: "memory")
#define mb_use(x) __asm__ __volatile__("" : : "r"(x) : "memory")

/* Pins the calling thread to @cpu (-1: leaves it). Returns 0, or -errno having said why. */
int mb_pin(const char *name, int cpu);

/* ---- samples and distributions ---- */

struct mb_samples {
	double *v;
	size_t n, cap;
};

/* Room for @n samples in all, allocated now: outside a step (the allocator may enter the kernel). */
void mb_samples_reserve(struct mb_samples *s, size_t n);
void mb_samples_add(struct mb_samples *s, double v);
void mb_samples_free(struct mb_samples *s);
/* The p-th percentile (nearest rank) of the samples; sorts them. */
double mb_percentile(struct mb_samples *s, double p);

/* ---- the run: steps, results, assumptions ---- */

struct mb {
	const char *name;
	int cpu;			/* pinned CPU, -1 if none */
	int steps;			/* steps begun so far */
	uint64_t start_ns;
	bool ended;			/* the measured phase is over */
	json_object *results, *assumptions, *step_names, *notes;
};

void mb_init(struct mb *m, const char *name, int cpu);
/* Starts the measured phase (the copy sites count from here) once setup is done. */
void mb_begin(struct mb *m);
/* Begins a numbered step; the kernel counts what the targets do until mb_step_end(). */
int mb_step_begin(struct mb *m, const char *what);
void mb_step_end(struct mb *m);

/*
 * States what the kernel must have counted in @step: @measure (see README: syscall:NAME, syscalls,
 * switches, ...) equals @expected, or lies within [@lo, @hi] when those differ from it.
 */
void mb_assume(struct mb *m, int step, const char *claim, const char *measure, uint64_t expected,
	       uint64_t lo, uint64_t hi);
static inline void mb_assume_exact(struct mb *m, int step, const char *claim, const char *measure,
				   uint64_t expected)
{
	mb_assume(m, step, claim, measure, expected, expected, expected);
}

/*
 * Adds a distribution to the results: min, median, mean, p99, max and a histogram of @s, which
 * holds one value per sample (in @unit, per iteration). Returns the result for extra fields.
 */
json_object *mb_result(struct mb *m, const char *name, const char *unit, struct mb_samples *s,
		       uint64_t iters_per_sample, uint64_t warmup);
void mb_note(struct mb *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the measured phase, before what must not be in it (a peer's end); mb_finish() does too. */
void mb_end(struct mb *m);
/* Ends the measured phase, if not yet, and writes the figures (plus @extra's fields, if any). */
int mb_finish(struct mb *m, json_object *extra);

/*
 * lmbench's benchmp shape: the harness times @run over @iters iterations per sample, @warmup
 * samples first (dropped), then @reps kept, inside one step. Returns the step id, or -1.
 */
struct mb_bench {
	const char *name;
	const char *unit;			/* of one iteration; "ns" unless the run reports its own */
	void (*run)(void *state, uint64_t iters);
	void *state;
};
/* The sampling of mb_measure() without its result: @reps samples appended to @s. */
int mb_sample(struct mb *m, const struct mb_bench *b, uint64_t iters, uint64_t warmup, uint64_t reps,
	      struct mb_samples *s);
int mb_measure(struct mb *m, const struct mb_bench *b, uint64_t iters, uint64_t warmup, uint64_t reps,
	       struct mb_samples *out);

#endif
