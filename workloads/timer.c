/*
 * timer: the overhead of reading the clock, the figure every later timing carries. As in the
 * classic method, each clock is read twice back to back, many times; the median difference is
 * the timer overhead. rdtsc and rdtscp are counted in TSC cycles, clock_gettime(CLOCK_MONOTONIC)
 * in ns; notes give each in the other unit. The kernel checks that reading the clocks never
 * entered it: clock_gettime is served by the vDSO (from the TSC), not by a system call.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "quiet.h"

struct clock {
	const char *key;		/* --clock name */
	const char *name;		/* step and result name */
	const char *unit;
	void (*pairs)(struct mb_samples *s, uint64_t warmup, uint64_t reps);
};

/* Two back-to-back rdtsc: rdtsc does not wait for earlier instructions, so this is its issue cost. */
static void rdtsc_pairs(struct mb_samples *s, uint64_t warmup, uint64_t reps)
{
	for (uint64_t r = 0; r < warmup + reps; r++) {
		uint64_t t0 = mb_rdtsc(), t1 = mb_rdtsc();

		if (r >= warmup)
			s->v[s->n++] = (double)(t1 - t0);
	}
}

/* Two back-to-back rdtscp: each waits for the instructions before it, the end-of-region read. */
static void rdtscp_pairs(struct mb_samples *s, uint64_t warmup, uint64_t reps)
{
	for (uint64_t r = 0; r < warmup + reps; r++) {
		uint64_t t0 = mb_rdtscp(), t1 = mb_rdtscp();

		if (r >= warmup)
			s->v[s->n++] = (double)(t1 - t0);
	}
}

static void clock_gettime_pairs(struct mb_samples *s, uint64_t warmup, uint64_t reps)
{
	struct timespec a, b;

	for (uint64_t r = 0; r < warmup + reps; r++) {
		clock_gettime(CLOCK_MONOTONIC, &a);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (r >= warmup)
			s->v[s->n++] = (double)((b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	}
}

/* The largest step every difference is a multiple of: how coarsely the counter advances. */
static uint64_t granularity(const struct mb_samples *s)
{
	uint64_t g = 0;

	for (size_t i = 0; i < s->n; i++) {
		uint64_t a = (uint64_t)s->v[i], b = g;

		while (b) {
			uint64_t t = a % b;

			a = b;
			b = t;
		}
		g = a;
	}
	return g;
}

static const struct clock clocks[] = {
	{ "rdtsc", "rdtsc read twice", "cycles", rdtsc_pairs },
	{ "rdtscp", "rdtscp read twice", "cycles", rdtscp_pairs },
	{ "clock_gettime", "clock_gettime(CLOCK_MONOTONIC) read twice", "ns", clock_gettime_pairs },
};

static struct timer_cfg {
	uint64_t reps, warmup;
	const char *only;
	int cpu;
} cfg = {
	.reps = 100000, .warmup = 1000, .only = "all",
};

static const struct mb_opt opts[] = {
	{ "clock", MB_CHOICE, &cfg.only },
	{ "reps", MB_COUNT, &cfg.reps, 1, 10000000 },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, 10000000 },
	{ "cpu", MB_CPU, &cfg.cpu },
	{},
};

/* One clock's result, with its median in the other unit when the TSC's rate is known; notes. */
static void report_clock(struct mb *m, const struct clock *c, struct mb_samples *s, double hz,
			 long nivcsw)
{
	bool cycles = !strcmp(c->unit, "cycles");
	json_object *r = mb_result(m, c->name, c->unit, s, 1, cfg.warmup);
	double med, p99;

	if (cycles && granularity(s) > 1)
		mb_note(m, "%s: every difference is a multiple of %" PRIu64 " TSC cycles: the "
			"counter as read here advances in steps that size", c->key, granularity(s));
	med = mb_percentile(s, 50);
	p99 = mb_percentile(s, 99);
	if (hz > 0) {
		double ns = cycles ? med * 1e9 / hz : med, cyc = cycles ? med : med * hz / 1e9;

		json_object_object_add(r, "median_ns", json_object_new_double(ns));
		json_object_object_add(r, "median_tsc_cycles", json_object_new_double(cyc));
		mb_note(m, "%s: median %.0f TSC cycles = %.1f ns (p99 %.0f %s); %ld involuntary "
			"switches in the step", c->key, cyc, ns, p99, c->unit, nivcsw);
	} else {
		mb_note(m, "%s: median %.1f %s (p99 %.0f %s); %ld involuntary switches in the step",
			c->key, med, c->unit, p99, c->unit, nivcsw);
	}
}

/* One clock's pairs of reads in one step; its claims and result. */
static void time_clock(struct mb *m, const struct clock *c, struct mb_samples *s, double hz)
{
	char claim[160];
	long nivcsw, before;
	int step;

	quiet_reserve(s, cfg.reps);
	before = quiet_nivcsw();
	step = mb_step_begin(m, c->name);
	c->pairs(s, cfg.warmup, cfg.reps);
	mb_step_end(m);
	nivcsw = quiet_nivcsw() - before;

	snprintf(claim, sizeof(claim), "%s: %" PRIu64 " pairs made no system call",
		 c->name, cfg.warmup + cfg.reps);
	mb_assume_exact(m, step, claim, "syscalls", 0);
	if (!strcmp(c->key, "clock_gettime")) {
		snprintf(claim, sizeof(claim), "the vDSO served all %" PRIu64 " clock_gettime calls "
			 "(none entered the kernel)", 2 * (cfg.warmup + cfg.reps));
		mb_assume_exact(m, step, claim, "syscall:clock_gettime", 0);
	}
	report_clock(m, c, s, hz, nivcsw);
}

int main(int argc, char **argv)
{
	struct mb_samples s = {};
	double hz;
	struct mb m;

	if (mb_parse(argc, argv, "timer", "Times reading the clock twice: rdtsc, rdtscp, "
		     "clock_gettime; the kernel checks that no read entered it.", opts))
		return 2;
	if (mb_pin("timer", cfg.cpu))
		return 1;
	if (!MB_HAVE_TSC && strcmp(cfg.only, "clock_gettime")) {
		fprintf(stderr, "timer: no TSC on this architecture (try --clock clock_gettime)\n");
		return 1;
	}
	hz = mb_tsc_hz();	/* 50 ms against CLOCK_MONOTONIC: before the measured phase */
	mb_init(&m, "timer", cfg.cpu);
	mb_begin(&m);
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		if (strcmp(cfg.only, "all") && strcmp(cfg.only, clocks[i].key))
			continue;
		time_clock(&m, &clocks[i], &s, hz);
	}
	if (hz > 0)
		mb_note(&m, "TSC at %.3f GHz (measured against CLOCK_MONOTONIC over 50 ms); TSC cycles "
			"count at that rate, not necessarily the core clock's", hz / 1e9);
	mb_note(&m, "the timer overhead to subtract from a single timed region is the median of the "
		"clock that times it");
	mb_samples_free(&s);
	return mb_finish(&m, NULL);
}
