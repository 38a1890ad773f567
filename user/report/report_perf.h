/* The perf counters' part of the ledger, as text and as JSON (report_perf.c). */
#ifndef REPORT_PERF_H
#define REPORT_PERF_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>

struct ledger;

/*
 * The counters by role, then the figures derived from them per payload byte (@payload 0: none);
 * not @full: the whole run's in a line, and the counters not supported in another.
 */
void perf_print(FILE *f, const struct ledger *l, double payload, bool full);
/* "counters": every counter by role, how it was scaled, and the derived figures. */
json_object *perf_counters_json(const struct ledger *l, double payload);

#endif
