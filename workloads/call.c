/*
 * call: the cost of a procedure call with 0 to 7 integer arguments, less the overhead of the
 * loop that makes it (measured first, in the same run, the same way). The callees are kept out
 * of line and out of interprocedural tricks (noinline, noipa: no cloning, no constant
 * propagation, no caller-specific register allocation) and consume every argument through an
 * empty asm, so each iteration makes a real call with its arguments set up. The kernel checks
 * that no timed loop entered it, and that the loops never switched out on their own.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "quiet.h"

#if defined(__clang__)
#define CALLEE __attribute__((noinline, used))
#else
#define CALLEE __attribute__((noinline, noipa, used))
#endif

typedef unsigned long u;

static CALLEE void call0(void) { mb_barrier(); }
static CALLEE void call1(u a) { mb_use(a); }
static CALLEE void call2(u a, u b) { mb_use(a); mb_use(b); }
static CALLEE void call3(u a, u b, u c) { mb_use(a); mb_use(b); mb_use(c); }
static CALLEE void call4(u a, u b, u c, u d) { mb_use(a); mb_use(b); mb_use(c); mb_use(d); }
static CALLEE void call5(u a, u b, u c, u d, u e)
{
	mb_use(a); mb_use(b); mb_use(c); mb_use(d); mb_use(e);
}
static CALLEE void call6(u a, u b, u c, u d, u e, u f)
{
	mb_use(a); mb_use(b); mb_use(c); mb_use(d); mb_use(e); mb_use(f);
}
/* the seventh integer argument goes on the stack (x86-64 SysV passes six in registers) */
static CALLEE void call7(u a, u b, u c, u d, u e, u f, u g)
{
	mb_use(a); mb_use(b); mb_use(c); mb_use(d); mb_use(e); mb_use(f); mb_use(g);
}

/* The same loop as loop.c's: the counter through an empty asm, nothing else. */
static void run_empty(void *state, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		mb_use(i);
}

/* Arguments derived from the counter: nothing constant for the compiler to fold into the callee. */
static void run0(void *state, uint64_t iters) { for (u i = 0; i < iters; i++) call0(); }
static void run1(void *state, uint64_t iters) { for (u i = 0; i < iters; i++) call1(i); }
static void run2(void *state, uint64_t iters) { for (u i = 0; i < iters; i++) call2(i, i); }
static void run3(void *state, uint64_t iters) { for (u i = 0; i < iters; i++) call3(i, i, i); }
static void run4(void *state, uint64_t iters) { for (u i = 0; i < iters; i++) call4(i, i, i, i); }
static void run5(void *state, uint64_t iters)
{
	for (u i = 0; i < iters; i++)
		call5(i, i, i, i, i);
}
static void run6(void *state, uint64_t iters)
{
	for (u i = 0; i < iters; i++)
		call6(i, i, i, i, i, i);
}
static void run7(void *state, uint64_t iters)
{
	for (u i = 0; i < iters; i++)
		call7(i, i, i, i, i, i, i);
}

static void (*const runs[8])(void *, uint64_t) = { run0, run1, run2, run3, run4, run5, run6, run7 };

int main(int argc, char **argv)
{
	uint64_t iters = 1000000, reps = 100, warmup = 5, max_args = 7;
	int cpu = 0;
	const struct mb_opt opts[] = {
		{ "iters", MB_COUNT, &iters, 1, 1000000000 },
		{ "reps", MB_COUNT, &reps, 1, 1000000 },
		{ "warmup", MB_COUNT, &warmup, 0, 1000000 },
		{ "max-args", MB_COUNT, &max_args, 0, 7 },
		{ "cpu", MB_CPU, &cpu },
		{},
	};
	struct mb_samples loop = {}, s = {};
	double hz, overhead = 0;
	long nivcsw;
	struct mb m;
	int step;

	if (mb_parse(argc, argv, "call", "Times procedure calls with 0..7 integer arguments, less "
		     "the loop overhead; the kernel checks no timed loop entered it.", opts))
		return 2;
	if (mb_pin("call", cpu))
		return 1;
	hz = mb_tsc_hz();
	mb_init(&m, "call", cpu);
	mb_begin(&m);
	for (int n = -1; n <= (int)max_args; n++) {
		char name[48], claim[160];
		struct mb_bench b = { name, "ns", n < 0 ? run_empty : runs[n] };
		struct mb_samples *into = n < 0 ? &loop : &s;
		json_object *r;

		if (n < 0)
			snprintf(name, sizeof(name), "empty loop (the overhead)");
		else
			snprintf(name, sizeof(name), "call, %d argument%s", n, n == 1 ? "" : "s");
		step = quiet_measure(&m, &b, iters, warmup, reps, into, &nivcsw);
		snprintf(claim, sizeof(claim), "%s: the %" PRIu64 " iterations made no system call", name,
			 (warmup + reps) * iters);
		mb_assume_exact(&m, step, claim, "syscalls", 0);
		snprintf(claim, sizeof(claim), "%s: the loop never switched out on its own", name);
		mb_assume_exact(&m, step, claim, "switches_undisturbed", 0);
		if (n < 0) {
			r = mb_result(&m, name, "ns", &loop, iters, warmup);
			overhead = mb_percentile(&loop, 50);
		} else {
			/* the loop's median, taken from every sample: what the call adds to an iteration */
			double raw = mb_percentile(&s, 50);

			for (size_t i = 0; i < s.n; i++)
				s.v[i] -= overhead;
			snprintf(name, sizeof(name), "call, %d arg%s, less loop", n, n == 1 ? "" : "s");
			r = mb_result(&m, name, "ns", &s, iters, warmup);
			json_object_object_add(r, "median_with_loop", json_object_new_double(raw));
			json_object_object_add(r, "loop_overhead_subtracted", json_object_new_double(overhead));
		}
		if (hz > 0)
			json_object_object_add(r, "median_tsc_cycles",
					       json_object_new_double(mb_percentile(into, 50) * hz / 1e9));
		if (nivcsw)
			mb_note(&m, "step %d (%s): %ld involuntary switches (getrusage); they show in "
				"p99/max, not in the median", step, name, nivcsw);
	}
	mb_note(&m, "each call figure is a sample's time per iteration less the empty loop's median "
		"(%.3f ns); out-of-order execution overlaps the two, so the difference is what a call adds",
		overhead);
	if (hz > 0)
		mb_note(&m, "TSC at %.3f GHz: 1 ns = %.2f TSC cycles (median_tsc_cycles in the JSON)",
			hz / 1e9, hz / 1e9);
	mb_samples_free(&loop);
	mb_samples_free(&s);
	return mb_finish(&m, NULL);
}
