/*
 * A microbenchmark's part of the ledger, as text and as JSON: the workload's measurements and
 * distributions, the kernel's figures per step, the assumptions and their verdicts (micro.c).
 */
#include <inttypes.h>
#include <math.h>
#include "report/hist.h"
#include "report/report_micro.h"

static void print_value(FILE *f, double v)
{
	if (isnan(v))
		fprintf(f, " %10s", "-");
	else if (fabs(v) >= 1e6)
		fprintf(f, " %10.4g", v);
	else
		fprintf(f, " %10.*f", fabs(v) >= 100 ? 1 : fabs(v) >= 10 ? 2 : 3, v);
}

/* A measurement's distribution, in the workload's own buckets (the last one above its p99). */
static void print_sample_hist(FILE *f, const struct wl_result *r)
{
	static const struct hist_look look = { .width = 40, .real = true };
	struct hist_bucket b[WL_MAX_HIST_BINS];
	int n = r->nhist;

	if (n < 0)
		return;
	for (int i = 0; i < n; i++)
		b[i] = (struct hist_bucket){ .flo = r->hist[i].lo, .fhi = r->hist[i].hi, .count = r->hist[i].count,
					     .note = i == n - 1 && n > 12 ? " (above p99)" : NULL };
	fprintf(f, "\n%s: %s per iteration, %" PRIu64 " samples\n", r->name ?: "?", r->unit ?: "?",
		(uint64_t)r->samples);
	hist_print(f, b, n, &look);
}

/* The workload's measurements, one line each, its notes and its distributions. */
static void print_results(FILE *f, const struct ledger *l, bool histograms)
{
	const struct wl_report *rep = &l->rep;

	if (rep->nresults) {
		fprintf(f, "  %-40s %-6s %14s %10s %10s %10s %10s %10s\n", "MEASUREMENT", "UNIT",
			"SAMPLES x ITER", "MIN", "MEDIAN", "MEAN", "P99", "MAX");
		for (size_t i = 0; i < rep->nresults; i++) {
			const struct wl_result *r = &rep->results[i];
			const double figures[] = { r->min, r->median, r->mean, r->p99, r->max };
			char n[32];

			snprintf(n, sizeof(n), "%" PRIu64 " x %" PRIu64, (uint64_t)r->samples,
				 (uint64_t)r->iters_per_sample);
			fprintf(f, "  %-40.40s %-6s %14s", r->name ?: "?", r->unit ?: "?", n);
			for (size_t k = 0; k < sizeof(figures) / sizeof(figures[0]); k++)
				print_value(f, figures[k]);
			fprintf(f, "\n");
		}
		fprintf(f, "  warm-up: %" PRIu64 " samples run first and dropped; values are per iteration\n",
			(uint64_t)rep->results[0].warmup);
	}
	for (size_t i = 0; i < rep->nnotes; i++)
		fprintf(f, "  %s\n", rep->notes[i] ?: "null");
	if (histograms)
		for (size_t i = 0; i < rep->nresults; i++)
			print_sample_hist(f, &rep->results[i]);
}

/* The kernel's figures of each numbered step, "n/s" where the probe behind one did not attach. */
static void print_steps(FILE *f, const struct micro *m, const struct ledger *l)
{
	bool unsupported = false;
	const char *probe;

	if (!l->rep.nsteps)
		return;
	fprintf(f, "\nkernel figures per step (targets only)\n  %-4s %-40s", "STEP", "NAME");
	for (size_t k = 0; k < nr_step_measures; k++)
		if (step_measures[k].column)
			fprintf(f, " %9s", step_measures[k].column);
	fprintf(f, "\n");
	for (size_t i = 0; i < l->rep.nsteps; i++) {
		const struct wl_step *s = &l->rep.steps[i];

		if (s->id < 1 || s->id >= MAX_STEPS)
			continue;
		fprintf(f, "  %-4" PRIu64 " %-40.40s", (uint64_t)s->id, s->name ?: "?");
		for (size_t k = 0; k < nr_step_measures; k++) {
			const struct step_measure *sm = &step_measures[k];

			if (!sm->column)
				continue;
			if (step_need_met(l, sm->need, &probe))
				fprintf(f, " %9" PRIu64, (uint64_t)sm->value(&m->steps.stats[s->id]));
			else
				fprintf(f, " %9s", "n/s"), unsupported = true;
		}
		fprintf(f, "\n");
	}
	if (unsupported)
		fprintf(f, "  n/s: not supported on this kernel (the probe did not attach)\n");
}

static void print_assumptions(FILE *f, const struct micro *m)
{
	fprintf(f, "\nassumptions, each checked against the kernel's count\n");
	if (!m->nassumptions)
		fprintf(f, "  (none stated)\n");
	for (int i = 0; i < m->nassumptions; i++) {
		const struct assumption *a = &m->assumptions[i];

		fprintf(f, "  assumption: %s — ", a->claim);
		if (!a->known)
			fprintf(f, "NOT CHECKED (%s)\n", a->why);
		else if (a->expected == 0 && a->min == a->max)
			fprintf(f, "%s (%" PRIu64 " seen, %s)\n", a->holds ? "holds" : "FAILS",
				(uint64_t)a->measured, a->measure);
		else if (a->min == a->max)
			fprintf(f, "%s (%" PRIu64 " of %" PRIu64 ", %s)\n", a->holds ? "holds" : "FAILS",
				(uint64_t)a->measured, (uint64_t)a->expected, a->measure);
		else
			fprintf(f, "%s (%" PRIu64 " of %" PRIu64 ", %s, allowed %" PRIu64 "..%" PRIu64 ")\n",
				a->holds ? "holds" : "FAILS", (uint64_t)a->measured, (uint64_t)a->expected,
				a->measure, (uint64_t)a->min, (uint64_t)a->max);
	}
}

void micro_print(FILE *f, const struct micro *m, const struct ledger *l, bool histograms)
{
	int cpu = l->rep.cpu;

	fprintf(f, "workload: %s microbenchmark, ", l->rep.workload ?: "?");
	if (cpu >= 0)
		fprintf(f, "pinned to CPU %d", cpu);
	else
		fprintf(f, "not pinned");
	/* a network microbenchmark's server: where it ran, and the way to it */
	if (l->rep.peer)
		fprintf(f, "; peer: %s, over %s", l->rep.peer, l->rep.path ?: "?");
	fprintf(f, "\n");
	print_results(f, l, histograms);
	print_steps(f, m, l);
	print_assumptions(f, m);
}

void micro_json(json_object *root, const struct micro *m, const struct ledger *l)
{
	json_object *as = json_object_new_array(), *steps = json_object_new_array();

	for (int i = 0; i < m->nassumptions; i++) {
		const struct assumption *a = &m->assumptions[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "claim", json_object_new_string(a->claim));
		json_object_object_add(o, "step", json_object_new_int(a->step));
		json_object_object_add(o, "measure", json_object_new_string(a->measure));
		json_object_object_add(o, "expected", json_object_new_uint64(a->expected));
		json_object_object_add(o, "min", json_object_new_uint64(a->min));
		json_object_object_add(o, "max", json_object_new_uint64(a->max));
		json_object_object_add(o, "measured", a->known ? json_object_new_uint64(a->measured) : NULL);
		json_object_object_add(o, "holds", json_object_new_boolean(a->holds));
		if (!a->known)
			json_object_object_add(o, "why", json_object_new_string(a->why));
		json_object_array_add(as, o);
	}
	json_object_object_add(root, "assumptions", as);
	for (size_t i = 0; i < l->rep.nsteps; i++) {
		__u64 id = l->rep.steps[i].id;
		json_object *o;

		if (id < 1 || id >= MAX_STEPS)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "step", json_object_new_int(id));
		json_object_object_add(o, "name", json_object_new_string(l->rep.steps[i].name ?: "?"));
		for (size_t k = 0; k < nr_step_measures; k++) {
			const struct step_measure *sm = &step_measures[k];
			const char *probe;

			json_object_object_add(o, sm->name, step_need_met(l, sm->need, &probe)
					       ? json_object_new_uint64(sm->value(&m->steps.stats[id])) : NULL);
		}
		json_object_array_add(steps, o);
	}
	json_object_object_add(root, "steps", steps);
}
