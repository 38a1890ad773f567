/* A microbenchmark's part of the ledger, as text and as JSON (micro.h holds its figures and checks). */
#ifndef REPORT_MICRO_H
#define REPORT_MICRO_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include "ledger/micro.h"

/* The workload's measurements and distributions, the figures per step, the assumptions. */
void micro_print(FILE *f, const struct micro *m, const struct ledger *l, bool histograms);
/* "assumptions" and "steps" of the JSON ledger @root. */
void micro_json(json_object *root, const struct micro *m, const struct ledger *l);

#endif
