/*
 * loop: the overhead of one iteration of an empty counted loop, the figure subtracted from loops
 * that time one operation per iteration (call does). The body is an empty asm that takes the
 * counter, so the compiler keeps every iteration without -O0. The kernel checks the loop never
 * entered it and never switched out on its own; preemptions by other tasks are reported.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "quiet.h"

static void run_empty(void *state, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		mb_use(i);
}

int main(int argc, char **argv)
{
	uint64_t iters = 1000000, reps = 200, warmup = 10;
	int cpu = 0;
	const struct mb_opt opts[] = {
		{ "iters", MB_COUNT, &iters, 1, 1000000000 },
		{ "reps", MB_COUNT, &reps, 1, 1000000 },
		{ "warmup", MB_COUNT, &warmup, 0, 1000000 },
		{ "cpu", MB_CPU, &cpu },
		{},
	};
	const struct mb_bench b = { "empty loop", "ns", run_empty };
	struct mb_samples s = {};
	char claim[160];
	double hz, med;
	long nivcsw;
	json_object *r;
	struct mb m;
	int step;

	if (mb_parse(argc, argv, "loop", "Times one iteration of an empty counted loop; the kernel "
		     "checks the loop never entered it.", opts))
		return 2;
	if (mb_pin("loop", cpu))
		return 1;
	hz = mb_tsc_hz();
	mb_init(&m, "loop", cpu);
	mb_begin(&m);
	step = quiet_measure(&m, &b, iters, warmup, reps, &s, &nivcsw);
	snprintf(claim, sizeof(claim), "the %" PRIu64 " iterations made no system call",
		 (warmup + reps) * iters);
	mb_assume_exact(&m, step, claim, "syscalls", 0);
	mb_assume_exact(&m, step, "the loop never switched out on its own (every switch was a "
			"preemption by another task)", "switches_undisturbed", 0);
	r = mb_result(&m, b.name, "ns", &s, iters, warmup);
	med = mb_percentile(&s, 50);
	if (hz > 0) {
		json_object_object_add(r, "median_tsc_cycles", json_object_new_double(med * hz / 1e9));
		mb_note(&m, "empty loop: median %.3f ns = %.2f TSC cycles per iteration (TSC %.3f GHz)",
			med, med * hz / 1e9, hz / 1e9);
	}
	mb_note(&m, "%ld involuntary switches during the step (getrusage); a sample that contains one "
		"shows in p99/max, not in the median", nivcsw);
	mb_note(&m, "timer overhead (one clock_gettime pair per sample of %" PRIu64 " iterations) "
		"is below %.4f ns per iteration: not subtracted", iters, 100.0 / iters);
	mb_samples_free(&s);
	return mb_finish(&m, NULL);
}
