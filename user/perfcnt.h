/* perf_event_open counters on the traced processes. */
#ifndef PERFCNT_H
#define PERFCNT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define NR_PERF_COUNTERS 8
#define MAX_PERF_FDS 256

struct perf_counter {
	const char *name;
	int nfds;
	int fds[MAX_PERF_FDS];
	bool supported;
	char why[96];		/* why not supported */
	bool counted;		/* read succeeded and the counter ran */
	double value;		/* scaled by enabled/running time if it was multiplexed */
};

struct perf_set {
	struct perf_counter c[NR_PERF_COUNTERS];
};

/* Counters on a child that has not exec'd yet: inherited, enabled at exec. */
void perf_open_child(struct perf_set *ps, pid_t child);
/* Counters on every thread of a running process, enabled now. */
void perf_open_pid(struct perf_set *ps, pid_t pid);
void perf_read(struct perf_set *ps);
void perf_close(struct perf_set *ps);
const struct perf_counter *perf_find(const struct perf_set *ps, const char *name);
/* The name of counter @i ("task-clock", "cycles", ...), as perf calls it. */
const char *perf_counter_name(int i);

#endif
