/* The perf counters by role (sender, receiver, whole) and the figures derived from them per payload byte. */
#ifndef PERFROLES_H
#define PERFROLES_H

#include <stdbool.h>
#include "os/perfcnt.h"

struct ledger;

enum perf_role { ROLE_WHOLE, ROLE_SENDER, ROLE_RECEIVER, NR_PERF_ROLES };

struct perf_roles {
	bool separated;			/* sender and receiver counted apart, by process */
	char why[200];			/* why not, when the workload has two sides */
	int scope[NR_PERF_ROLES];	/* the perf_scope each role reads */
};

/* A figure derived from the counters: num / den, or num per payload byte (or KiB). */
struct perf_derived_def {
	const char *key;		/* JSON key and sweep column */
	const char *label;		/* as the text report prints it */
	const char *num, *den;		/* counter names; den NULL: per payload unit */
	double unit;			/* payload bytes per unit: 1 (per byte) or 1024 (per KiB); 0: a ratio */
};

#define NR_PERF_DERIVED 8
extern const struct perf_derived_def perf_derived_defs[NR_PERF_DERIVED];
extern const char *const perf_role_names[NR_PERF_ROLES];

/* Which scope holds each role, from the pids the workload reported; why not where it cannot be said. */
void perf_roles_of(const struct ledger *l, struct perf_roles *r);
/* Counter @c for @role; NULL when not counted (not supported, or the role not separated). */
const struct perf_count *perf_role_count(const struct perf_counter *c, const struct perf_roles *r, int role);
/* Derived figure @d for @role over @payload bytes; false when a counter it needs was not counted. */
bool perf_derived(const struct ledger *l, const struct perf_roles *r, int d, int role, double payload, double *v);
/* The task-clock fallback stands for cycles/byte where the machine counts no cycles. */
bool perf_cycles_missing(const struct ledger *l);

#endif
