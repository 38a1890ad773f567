/* The built-in workloads and the copy ledger each one is expected to produce. */
#ifndef WORKLOADS_H
#define WORKLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include "zctrace.h"

/* What a workload's site must show; 0, what a site left out of .site gets, is "no bytes". */
enum expect {
	EXP_ZERO,	/* no bytes at this site */
	EXP_ANY,	/* no claim */
	EXP_SENT,	/* exactly the payload bytes the workload sent */
	EXP_RECEIVED,	/* exactly the payload bytes the workload received */
	EXP_COPIED_OR_CLONED,	/* the payload, unless the filesystem cloned it (reflink): then 0 */
	EXP_SENT_AND_REQUESTS,	/* the payload sent plus the requests the receiver sent for it */
	EXP_RECEIVED_AND_REQUESTS,	/* the payload received plus those requests */
	EXP_READ_BUFFERED,	/* the bytes the workload read, unless with O_DIRECT ("direct"): then 0 */
	EXP_WRITTEN_BUFFERED,	/* the bytes the workload wrote, unless with O_DIRECT: then 0 */
	EXP_DIRECT_RW,		/* with O_DIRECT, the bytes the workload read and wrote; else 0 */
	EXP_SENT_AND_RETRANSMITTED,	/* the payload sent plus the bytes TCP sent again */
};

struct workload_def {
	const char *name;
	const char *summary;
	const char *expected;		/* the expected ledger, in words */
	enum expect site[NR_SITES];	/* by enum site; left out: EXP_ZERO */
	bool zc_notices;		/* reconcile completion notices with the workload's own count */
	bool file;			/* works on a file: cache state, syscalls per chunk, copy verified */
	bool no_threads;		/* takes no --threads: one copy at a time */
	bool no_amount;			/* takes no --messages/--bytes/--duration: the file is the amount */
	bool micro;			/* a microbenchmark: distributions, and assumptions per step */
	bool net;			/* a sender and a receiver: takes --peer, --netns, --rate, --delay */
	unsigned opt_groups;		/* the WL_OPT_* groups it takes, for zctrace to check first; 0: its own parser */
	unsigned long max_size;		/* the largest --size it takes; 0: the workloads' 1G */
};

extern const struct workload_def workload_defs[];
extern const int nr_workload_defs;

const struct workload_def *find_workload(const char *name);
/* A microbenchmark's options as its --help lists them ("--reps N, --direct, ..."); "" for another workload. */
void workload_micro_options(const struct workload_def *d, char *buf, size_t size);

#endif
