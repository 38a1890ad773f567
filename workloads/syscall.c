/*
 * syscall: the cost of a null system call, three ways, and of the vDSO clock calls. The kernel
 * checks which of them really entered it: syscall(SYS_getpid), glibc's getpid() (once cached by
 * glibc, no longer since 2.25), time() and clock_gettime() (the vDSO: no kernel entry).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "mb.h"

static void run_raw_getpid(void *state, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		mb_use(syscall(SYS_getpid));
}

static void run_getpid(void *state, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		mb_use(getpid());
}

static void run_time(void *state, uint64_t iters)
{
	for (uint64_t i = 0; i < iters; i++)
		mb_use(time(NULL));
}

static void run_clock_gettime(void *state, uint64_t iters)
{
	struct timespec ts;

	for (uint64_t i = 0; i < iters; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		mb_use(ts.tv_nsec);
	}
}

struct call {
	const char *key;		/* --call name */
	const char *syscall;		/* the kernel's name for what it would enter */
	bool enters;			/* expected to enter the kernel */
	struct mb_bench bench;
};

static struct call calls[] = {
	{ "syscall", "getpid", true, { "syscall(SYS_getpid)", "ns", run_raw_getpid } },
	{ "getpid", "getpid", true, { "getpid() (glibc)", "ns", run_getpid } },
	{ "time", "time", false, { "time() (vDSO)", "ns", run_time } },
	{ "clock_gettime", "clock_gettime", false, { "clock_gettime(CLOCK_MONOTONIC) (vDSO)", "ns",
						      run_clock_gettime } },
};

int main(int argc, char **argv)
{
	uint64_t iters = 10000, reps = 200, warmup = 10;
	const char *only = "all", *assume = "auto";
	int cpu = 0;
	const struct mb_opt opts[] = {
		{ "call", MB_CHOICE, &only },
		{ "iters", MB_COUNT, &iters, 1, 100000000 },
		{ "reps", MB_COUNT, &reps, 1, 1000000 },
		{ "warmup", MB_COUNT, &warmup, 0, 1000000 },
		{ "cpu", MB_CPU, &cpu },
		{ "assume", MB_CHOICE, &assume },
		{},
	};
	struct mb m;

	if (mb_parse(argc, argv, "syscall", "Times null system calls and the vDSO clock calls; the "
		     "kernel counts which entered it.", opts))
		return 2;
	if (mb_pin("syscall", cpu))
		return 1;
	mb_init(&m, "syscall", cpu);
	mb_begin(&m);
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		const struct call *c = &calls[i];
		bool enters = !strcmp(assume, "auto") ? c->enters : !strcmp(assume, "kernel");
		uint64_t n = (warmup + reps) * iters;
		char claim[160], measure[48];
		int step;

		if (strcmp(only, "all") && strcmp(only, c->key))
			continue;
		step = mb_measure(&m, &c->bench, iters, warmup, reps, NULL);
		snprintf(measure, sizeof(measure), "syscall:%s", c->syscall);
		if (enters) {
			snprintf(claim, sizeof(claim), "each %s entered the kernel once", c->bench.name);
			mb_assume_exact(&m, step, claim, measure, n);
		} else {
			snprintf(claim, sizeof(claim), "%s never entered the kernel (%" PRIu64 " calls)",
				 c->bench.name, n);
			mb_assume_exact(&m, step, claim, measure, 0);
		}
	}
	return mb_finish(&m, NULL);
}
