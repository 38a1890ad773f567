/* What zctrace's own BPF programs cost: the kernel's run-time statistics of each program. */
#ifndef PROGSTATS_H
#define PROGSTATS_H

#include <stdio.h>
#include <json-c/json.h>
#include <linux/types.h>

struct bpf_object;

/* every program of the object (130 of them) */
#define MAX_STAT_PROGS 256

struct prog_stat {
	char name[64];
	char attach[64];		/* section: tp_btf/sys_enter, usdt, ... */
	__u64 events;			/* run_cnt: every invocation, of traced processes or not */
	__u64 run_time_ns;
	__u64 misses;			/* recursion_misses: invocations skipped, the program already running */
};

struct prog_stats {
	int stats_fd;			/* BPF_ENABLE_STATS: keeps kernel.bpf_stats_enabled on while open */
	double start, end;		/* CLOCK_MONOTONIC seconds: attached .. target gone */
	int n;
	struct prog_stat p[MAX_STAT_PROGS];
	char why[160];			/* why there are no statistics, when there are none */
};

void prog_stats_init(struct prog_stats *ps);
/* Turns the kernel's statistics on for as long as @ps is open; before attach. 0 or -errno. */
int prog_stats_enable(struct prog_stats *ps);
/* The programs are attached: the run's clock starts (their counts start at their load). */
void prog_stats_begin(struct prog_stats *ps);
/* Reads every loaded program's counts; the run's clock stops. */
void prog_stats_end(struct prog_stats *ps, struct bpf_object *obj);
/* The runs, run time and missed runs of every program, summed. */
void prog_stats_totals(const struct prog_stats *ps, __u64 *events, __u64 *ns, __u64 *misses);
/* @ns per event, 0 for no event. */
static inline double prog_stats_per_event(__u64 ns, __u64 events)
{
	return events ? (double)ns / events : 0;
}
json_object *prog_stats_json(const struct prog_stats *ps);
void prog_stats_close(struct prog_stats *ps);

#endif
