/*
 * The checks of a ledger: each site against the workload's expected ledger and its own counts,
 * completion notices, cache state, syscalls per chunk, each side's bytes, the scheduler against
 * perf, and the maps' dropped updates. A microbenchmark's assumptions are checked in micro.c.
 */
#ifndef CHECKS_H
#define CHECKS_H

#include <stdbool.h>
#include "ledger/ledger.h"

/* Runs every check that applies to @l, replacing those before. */
void ledger_check(struct ledger *l);
/* Every check held. */
bool ledger_ok(const struct ledger *l);
/* Adds one check: a name, whether it held, and the figures behind it. */
void add_check(struct ledger *l, bool ok, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
