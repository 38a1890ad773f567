/* The machine's memory-copy bound at one copy size (membound.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "os/membound.h"

#define MEMBOUND_MIN 64
#define MEMBOUND_MAX (64UL << 20)
#define MEMBOUND_TRIALS 7
#define MEMBOUND_TRIAL_BYTES (8UL << 20)	/* copied per trial: about a millisecond in the caches */

static double mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

double memcpy_bytes_per_ns(size_t size)
{
	double best = 0;
	size_t rounds;
	char *a, *b;

	if (size < MEMBOUND_MIN)
		size = MEMBOUND_MIN;
	if (size > MEMBOUND_MAX)
		size = MEMBOUND_MAX;
	a = malloc(size);
	b = malloc(size);
	if (!a || !b) {
		free(a);
		free(b);
		return 0;
	}
	memset(a, 1, size);
	memset(b, 2, size);
	rounds = MEMBOUND_TRIAL_BYTES / size + 1;
	/* the best trial: a trial the scheduler or an interrupt cut into is only slower */
	for (int t = 0; t < MEMBOUND_TRIALS; t++) {
		double t0 = mono_ns(), ns;

		for (size_t r = 0; r < rounds; r++) {
			memcpy(r & 1 ? a : b, r & 1 ? b : a, size);
			__asm__ __volatile__("" : : "r"(a), "r"(b) : "memory");
		}
		ns = mono_ns() - t0;
		if (ns > 0 && rounds * size / ns > best)
			best = rounds * size / ns;
	}
	free(a);
	free(b);
	return best;
}
