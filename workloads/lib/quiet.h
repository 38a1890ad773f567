/*
 * Timed loops that must not enter the kernel (CPU, clock and memory microbenchmarks): their
 * sample arrays are reserved and touched before a step begins, so recording a sample neither
 * faults nor calls brk/mmap inside it, and the involuntary switches the thread suffered during a
 * step are counted with getrusage() around it (outside it) for a note next to the kernel's figures.
 */
#ifndef QUIET_H
#define QUIET_H

#include <sys/resource.h>
#include "mb.h"

/* Empties @s and gives it room for @n samples, every page of it touched now. */
static inline void quiet_reserve(struct mb_samples *s, size_t n)
{
	mb_samples_free(s);
	mb_samples_reserve(s, n ? n : 1);
}

/* Involuntary switches of the calling thread so far (the scheduler's nivcsw); -1 if unknown. */
static inline long quiet_nivcsw(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nivcsw;
}

/*
 * mb_sample() into an emptied @s, and *@nivcsw = the involuntary switches of the step. The caller
 * adds the result, e.g. after subtracting an overhead. Returns the step.
 */
static inline int quiet_measure(struct mb *m, const struct mb_bench *b, uint64_t iters, uint64_t warmup,
				uint64_t reps, struct mb_samples *s, long *nivcsw)
{
	long before;
	int step;

	quiet_reserve(s, reps);
	before = quiet_nivcsw();
	step = mb_sample(m, b, iters, warmup, reps, s);
	*nivcsw = quiet_nivcsw() - before;
	return step;
}

#endif
