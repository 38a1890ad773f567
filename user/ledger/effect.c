/* The tracer's effect on the workload's timing figures (effect.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ledger/effect.h"
#include "contract/report.h"

static void add_row(struct effect *e, const char *name, const char *unit, double traced, double untraced,
		    bool higher_better)
{
	struct effect_row *r;

	if (e->nrows >= MAX_EFFECT_ROWS || !(traced > 0) || !(untraced > 0))
		return;
	r = &e->rows[e->nrows++];
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->unit, sizeof(r->unit), "%s", unit);
	r->traced = traced;
	r->untraced = untraced;
	r->higher_better = higher_better;
}

/* The payload a report moved per second, in MiB/s; 0 if it does not say. */
static double throughput(const struct wl_report *rep)
{
	double el = rep->elapsed_s;
	__u64 bytes = rep->bytes.v;

	return el > 0 && bytes ? bytes / el / (1 << 20) : 0;
}

static void compare_latency(struct effect *e, const struct wl_report *traced, const struct wl_report *untraced)
{
	add_row(e, "latency p50", "ns", traced->p50.v, untraced->p50.v, false);
	add_row(e, "latency p99", "ns", traced->p99.v, untraced->p99.v, false);
}

/* Each measurement's median, matched by name. A rate's unit ends in "/s": higher is better. */
static void compare_results(struct effect *e, const struct wl_report *traced, const struct wl_report *untraced)
{
	for (size_t i = 0; i < traced->nresults; i++) {
		const struct wl_result *r = &traced->results[i];
		const char *unit = r->unit ?: "";
		size_t len = strlen(unit);

		for (size_t j = 0; r->name && j < untraced->nresults; j++) {
			const struct wl_result *u = &untraced->results[j];

			if (!u->name || strcmp(r->name, u->name))
				continue;
			add_row(e, r->name, unit, r->median, u->median, len > 2 && !strcmp(unit + len - 2, "/s"));
			break;
		}
	}
}

/* Student's t at 0.975 for @df degrees of freedom (the nearest tabled df below). */
static double t975(int df)
{
	static const struct { int df; double t; } table[] = {
		{ 30, 2.042 }, { 20, 2.086 }, { 15, 2.131 }, { 12, 2.179 }, { 10, 2.228 }, { 9, 2.262 },
		{ 8, 2.306 }, { 7, 2.365 }, { 6, 2.447 }, { 5, 2.571 }, { 4, 2.776 }, { 3, 3.182 },
	};

	if (df > 60)
		return 1.96;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (df >= table[i].df)
			return table[i].t;
	return 12.706;
}

/*
 * The rate of each slice of a pass's progress: its mean and its squared coefficient of variation
 * over the slices, divided by their count (the relative variance of the mean). How many slices.
 */
static int slice_spread(const struct wl_progress *p, double *rel_var)
{
	double sum = 0, sq = 0, mean;
	int n = (int)p->n;

	for (int i = 0; i < n; i++) {
		uint64_t t0 = i ? p->at_ns[i - 1] : 0, b0 = i ? p->sent[i - 1] : 0;
		double rate = (double)(p->sent[i] - b0) / (p->at_ns[i] - t0);

		sum += rate;
		sq += rate * rate;
	}
	if (n < 2 || !(sum > 0))
		return n;
	mean = sum / n;
	/* rounding can take a spread of nothing below zero */
	*rel_var = fmax(0, (sq - n * mean * mean) / (n - 1)) / (mean * mean) / n;
	return n;
}

/*
 * Throughput's 95% interval: the delta method on the log of the ratio of the two passes' mean slice
 * rates, centred on the ratio of their whole-phase throughputs. Slices next to each other are not
 * independent draws, so it is the least the noise could be, not the most.
 */
static void throughput_interval(struct effect *e, struct effect_row *r, const struct wl_report *traced,
				const struct wl_report *untraced)
{
	double vt = 0, vu = 0, half;
	int nt, nu;

	if (!traced->has_progress || !untraced->has_progress) {
		snprintf(e->unresolved, sizeof(e->unresolved), "the workload reports no progress to take a spread from");
		return;
	}
	nt = slice_spread(&traced->progress, &vt);
	nu = slice_spread(&untraced->progress, &vu);
	if (nt < EFFECT_MIN_SLICES || nu < EFFECT_MIN_SLICES) {
		snprintf(e->unresolved, sizeof(e->unresolved), "too short to resolve: %d and %d slices of %.1f s, "
			 "fewer than %d", nt, nu, untraced->progress.slice_ns / 1e9, EFFECT_MIN_SLICES);
		return;
	}
	half = t975((nt < nu ? nt : nu) - 1) * sqrt(vt + vu);
	r->has_interval = true;
	r->lo = r->traced / r->untraced * exp(-half);
	r->hi = r->traced / r->untraced * exp(half);
}

void effect_compare(struct effect *e, const struct wl_report *traced, const struct wl_report *untraced)
{
	e->nrows = 0;
	e->unresolved[0] = '\0';
	if (!traced || !untraced) {
		snprintf(e->why, sizeof(e->why), "%s pass wrote no report", traced ? "the untraced" : "the traced");
		return;
	}
	e->measured = true;
	add_row(e, "throughput", "MiB/s", throughput(traced), throughput(untraced), true);
	if (e->nrows)
		throughput_interval(e, &e->rows[0], traced, untraced);
	compare_latency(e, traced, untraced);
	compare_results(e, traced, untraced);
}

json_object *effect_json(const struct effect *e, json_object *untraced)
{
	json_object *o, *rows;

	if (!e->measured && !(e->wall_untraced > 0))
		return NULL;
	o = json_object_new_object();
	rows = json_object_new_array();
	for (int i = 0; i < e->nrows; i++) {
		const struct effect_row *r = &e->rows[i];
		json_object *row = json_object_new_object();

		json_object_object_add(row, "figure", json_object_new_string(r->name));
		json_object_object_add(row, "unit", json_object_new_string(r->unit));
		json_object_object_add(row, "traced", json_object_new_double(r->traced));
		json_object_object_add(row, "untraced", json_object_new_double(r->untraced));
		json_object_object_add(row, "ratio", json_object_new_double(r->traced / r->untraced));
		json_object_object_add(row, "higher_is_better", json_object_new_boolean(r->higher_better));
		json_object_object_add(row, "ratio_low", r->has_interval ? json_object_new_double(r->lo) : NULL);
		json_object_object_add(row, "ratio_high", r->has_interval ? json_object_new_double(r->hi) : NULL);
		json_object_array_add(rows, row);
	}
	json_object_object_add(o, "figures", rows);
	json_object_object_add(o, "unresolved", e->unresolved[0] ? json_object_new_string(e->unresolved) : NULL);
	json_object_object_add(o, "untraced_report", untraced ? json_object_get(untraced) : NULL);
	if (e->wall_untraced > 0) {
		json_object_object_add(o, "wall_s_traced", json_object_new_double(e->wall_traced));
		json_object_object_add(o, "wall_s_untraced", json_object_new_double(e->wall_untraced));
	}
	return o;
}
