/*
 * A command of a user's for the sampler's tests: memcpy() of 1 MiB over and over for SECONDS, or
 * memset() with "set" (libc's time, no copy). Built linked to libc and statically
 * (.output/tests/copyloop, copyloop-static), with no instrumentation: a sanitizer's would
 * intercept memcpy().
 *
 * copyloop SECONDS [set]
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	size_t n = 1 << 20;
	char *a = malloc(n), *b = malloc(n);
	double secs = atof(argv[1]);
	int set = argc > 2;	/* "set": memset() the buffer instead, libc's time but no copy */
	struct timespec t0, t;
	volatile char sink;

	memset(a, 1, n);
	memset(b, 2, n);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 64; i++) {
			if (set)
				memset(b, a[i], n);
			else
				memcpy(b, a, n);
			sink = b[i];
			a[i]++;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	(void)sink;
	return 0;
}
