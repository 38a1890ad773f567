/*
 * The tracer's effect on what it measures: a built-in workload runs once with no BPF program
 * attached (its timing figures) and once traced (its ledger and checks), with the same parameters;
 * each timing figure is shown from both passes with their ratio.
 */
#ifndef EFFECT_H
#define EFFECT_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include "contract/report.h"

#define MAX_EFFECT_ROWS 64

struct effect_row {
	char name[96];
	char unit[16];
	double traced, untraced;
	bool higher_better;	/* a rate (throughput): the tracer lowers it; else a time it raises */
	bool has_interval;	/* lo .. hi: the ratio's 95% interval, from the rate's spread in each pass */
	double lo, hi;
};

struct effect {
	bool measured;		/* an untraced pass ran and reported */
	char why[160];		/* ... or why not */
	struct effect_row rows[MAX_EFFECT_ROWS];
	int nrows;
	char unresolved[128];	/* why throughput's ratio has no interval, when it has none */
	double wall_traced, wall_untraced;	/* a command's wall time in each pass (--baseline), s */
};

/*
 * The timing figures two reports of one workload share (@traced, @untraced: the reports the
 * workload wrote, read; NULL: none): throughput and latency of a stream or file workload, each
 * measurement's median of a microbenchmark. Rows only where both passes reported the figure.
 * Throughput's ratio gets a 95% interval where both passes reported their progress over at least
 * EFFECT_MIN_SLICES slices: the spread of the rate through each pass, which one pair of passes
 * would otherwise hide.
 */
#define EFFECT_MIN_SLICES 5
void effect_compare(struct effect *e, const struct wl_report *traced, const struct wl_report *untraced);
/* { "untraced": the untraced report, "rows": [...], ... } or null when no untraced pass ran. */
json_object *effect_json(const struct effect *e, json_object *untraced);

#endif
