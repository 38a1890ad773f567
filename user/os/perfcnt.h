/* perf_event_open counters on the traced processes. */
#ifndef PERFCNT_H
#define PERFCNT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define NR_PERF_COUNTERS 11
#define MAX_PERF_FDS 512
#define MAX_CORE_PMUS 4

/*
 * What one set of descriptors counts. WHOLE: the workload, every thread and every process it
 * forks (inherit). MAIN: the workload's own process, its threads only (inherit_thread, Linux
 * 5.13+), so that WHOLE - MAIN is every other process: a --peer process receiver.
 */
enum perf_scope { PERF_WHOLE, PERF_MAIN, PERF_REST, NR_PERF_SCOPES };

struct perf_fd {
	int fd;
	uint8_t scope;		/* PERF_WHOLE or PERF_MAIN */
	uint16_t group;		/* one task's event on each core PMU: summed before scaling */
};

struct perf_count {
	bool counted;
	double value;		/* scaled by enabled/running time if it was multiplexed */
	double running;		/* lowest fraction of its enabled time a group was on a PMU; 1: never multiplexed */
};

struct perf_counter {
	const char *name;
	bool hardware;		/* a CPU PMU's event, not a software one */
	const char *standin;	/* counted with this software event instead (ZCTRACE_PERF_STANDIN) */
	double simulated;	/* ZCTRACE_PERF_MULTIPLEX: reads as if on a PMU this fraction of the time; 0: no */
	bool refused;		/* by ZCTRACE_PERF_REFUSE: not opened, as on a machine without it */
	int nfds;
	struct perf_fd fds[MAX_PERF_FDS];
	bool supported;
	char why[96];		/* why not supported */
	bool counted;		/* read succeeded and the counter ran (whole) */
	double value;		/* whole, scaled */
	struct perf_count scope[NR_PERF_SCOPES];
};

struct perf_set {
	struct perf_counter c[NR_PERF_COUNTERS];
	pid_t main_pid;			/* the workload's process; 0 when following a running one */
	bool by_process;		/* the MAIN scope opened for every counter that opened */
	char by_process_why[96];	/* why not */
	char pmus[64];			/* the core PMUs hardware events were opened on: "cpu_core+cpu_atom" */
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
