/*
 * The census as Prometheus metrics: every read folded into one aggregate per (comm, cgroup) label
 * pair, at most a bounded number of them, and written out in the OpenMetrics text format or in
 * Prometheus's text format 0.0.4. Pure: no kernel, no sockets; `zctrace export` serves what it
 * writes.
 */
#ifndef EXPOSITION_H
#define EXPOSITION_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "trace/census.h"
#include "trace/progstats.h"

#define EXPO_DEFAULT_SERIES 200
#define EXPO_MAX_SERIES 5000
/* the comm and cgroup of every label pair past the bound */
#define EXPO_OTHER "other"

/* One label pair's figures since the exporter started: the sum of every read's deltas. */
struct expo_series {
	char comm[4 * CENSUS_COMM_LEN];		/* escaped for a label value: up to 4 bytes a byte */
	char cgroup[4 * CENSUS_CGROUP_LEN];
	uint32_t hash;
	struct census_figs figs;
	uint64_t seen_sites;			/* bit per site: had a copy once, so its series stay */
	bool used;				/* had a process row: its series are written */
	uint64_t tcp_shared_read;		/* the last read at which one of its processes shared a TCP socket */
};

struct expo {
	int max_series;
	int nseries;
	struct expo_series *series;		/* max_series of them, then "other" */
	int *slots;				/* open addressing over series: index + 1, 0 = empty */
	int nslots;
	struct census_figs all;			/* every process: the size histograms per site */
	uint64_t folded;			/* label pairs folded into "other", one per read that saw them */
	uint64_t reads;
	/* the census's own bookkeeping at the last read */
	uint64_t evicted, dropped, skipped, keys, max_keys;
	enum method site_method[NR_SITES];	/* how each copy site counts: METHOD_NONE = not at all */
	const char *site_why[NR_SITES];		/* ... and why not, where it does not */
	bool account;				/* the boundary account is kept: unattributed bytes are measured */
	const char *account_why;		/* ... and why not, where it is not */
	bool tcp_counters;			/* TCP bytes from the sockets' own counters are measured */
	unsigned tcp_derived;			/* TCP_DERIVED_*: sites whose bytes come from those, calls not counted */
	uint64_t tcp_unowned_sent, tcp_unowned_received;	/* ... of sockets no process was found to own */
	const struct prog_stats *costs;		/* the BPF programs' costs, or NULL when not measured */
	uint64_t sample_ns;			/* --cost: the CPU time of one sample; 0: no CPU time series */
};

enum expo_format {
	EXPO_OPENMETRICS,	/* application/openmetrics-text; version=1.0.0 */
	EXPO_TEXT,		/* text/plain; version=0.0.4 */
};

/* 0, or -ENOMEM. At most @max_series label pairs (1 to EXPO_MAX_SERIES) have series of their own. */
int expo_init(struct expo *e, int max_series);
void expo_free(struct expo *e);
/* Adds one read's deltas, and keeps its bookkeeping. */
void expo_add(struct expo *e, const struct census_snap *snap);
/* Every metric, in @format. 0, or -EIO when @f failed. */
int expo_write(FILE *f, const struct expo *e, enum expo_format format);
/* The format an HTTP Accept header asks for: OpenMetrics only when it names it. */
enum expo_format expo_negotiate(const char *accept);
const char *expo_content_type(enum expo_format format);
/* @s as a label value: \, " and newline escaped, bytes that are not UTF-8 as '?'. */
void expo_label_value(char *out, size_t n, const char *s, size_t len);
/* The upper bound of log2 slot @slot as the le label of its bucket, "+Inf" for the last. */
void expo_bucket_le(char *out, size_t n, int slot);

#endif
