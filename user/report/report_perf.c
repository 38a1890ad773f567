/*
 * The perf counters' part of the ledger: each counter for the whole run and, where sender and
 * receiver are separate processes, for each; "not supported" with the kernel's reason, never 0;
 * multiplexed counters scaled and said so; then cycles per byte, IPC and misses per KiB.
 */
#include <stdio.h>
#include <string.h>
#include "ledger/ledger.h"
#include "ledger/perfroles.h"
#include "report/report_perf.h"

#define COL 14

static int nroles(const struct perf_roles *r)
{
	return r->separated ? NR_PERF_ROLES : 1;
}

static void print_value(FILE *f, const struct perf_counter *c, const struct perf_count *pc)
{
	char buf[32];

	if (!pc)
		snprintf(buf, sizeof(buf), "-");
	else if (!strcmp(c->name, "task-clock"))
		snprintf(buf, sizeof(buf), "%.3f ms", pc->value / 1e6);
	else
		snprintf(buf, sizeof(buf), "%.0f", pc->value);
	fprintf(f, " %*s", COL, buf);
}

static void print_counter(FILE *f, const struct perf_counter *c, const struct perf_roles *r)
{
	char name[64];
	double running = 1;

	if (c->standin)
		snprintf(name, sizeof(name), "%s [stand-in: %s]", c->name, c->standin);
	else
		snprintf(name, sizeof(name), "%s", c->name);
	if (!c->counted) {
		fprintf(f, "  %-30s not supported (%s)\n", name, c->why);
		return;
	}
	fprintf(f, "  %-30s", name);
	for (int role = 0; role < nroles(r); role++) {
		const struct perf_count *pc = perf_role_count(c, r, role);

		print_value(f, c, pc);
		if (pc && pc->running < running)
			running = pc->running;
	}
	if (running < 1)
		fprintf(f, "  multiplexed: on a PMU %.1f%% of its enabled time, scaled x%.2f%s", running * 100,
			1 / running, c->simulated ? " (simulated, ZCTRACE_PERF_MULTIPLEX)" : "");
	fprintf(f, "\n");
}

static void print_derived(FILE *f, const struct ledger *l, const struct perf_roles *r, int d, double payload)
{
	const struct perf_derived_def *def = &perf_derived_defs[d];
	const struct perf_counter *num = perf_find(l->perf, def->num), *den = def->den ? perf_find(l->perf, def->den) : NULL;
	bool fallback = !strcmp(def->key, "task_clock_ns_per_byte") && perf_cycles_missing(l);
	char label[96];
	double v;

	snprintf(label, sizeof(label), "%s%s", def->label, fallback ? " (fallback)" : "");
	if (!perf_derived(l, r, d, ROLE_WHOLE, payload, &v)) {
		const struct perf_counter *why = num && !num->counted ? num : den && !den->counted ? den : NULL;

		if (why)
			fprintf(f, "  %-30s not supported (%s: %s)\n", label, why->name, why->why);
		else
			fprintf(f, "  %-30s -\n", label);
		return;
	}
	fprintf(f, "  %-30s", label);
	for (int role = 0; role < nroles(r); role++) {
		char buf[32] = "-";

		if (perf_derived(l, r, d, role, payload, &v))
			snprintf(buf, sizeof(buf), "%.4g", v);
		fprintf(f, " %*s", COL, buf);
	}
	fprintf(f, "\n");
}

static void print_head(FILE *f, const struct perf_roles *r, const char *what)
{
	fprintf(f, "  %-30s", what);
	for (int role = 0; role < nroles(r); role++)
		fprintf(f, " %*s", COL, role ? perf_role_names[role] : "WHOLE");
	fprintf(f, "\n");
}

/*
 * The same in two or three lines: the counters counted, for the whole run; the derived figures that
 * have a value; and the names of the others with their one reason, as perf prints <not supported>.
 */
static void perf_print_brief(FILE *f, const struct ledger *l, double payload)
{
	const char *why = NULL;
	bool same_why = true, any = false;
	struct perf_roles r;
	double v;

	perf_roles_of(l, &r);
	fprintf(f, "perf (whole run):");
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		const struct perf_counter *c = &l->perf->c[i];
		const struct perf_count *pc = perf_role_count(c, &r, ROLE_WHOLE);

		if (!c->counted || !pc)
			continue;
		if (!strcmp(c->name, "task-clock"))
			fprintf(f, "%s task-clock %.3f ms", any ? "," : "", pc->value / 1e6);
		else
			fprintf(f, "%s %s %.0f%s", any ? "," : "", c->name, pc->value, pc->running < 1 ? " (scaled)" : "");
		any = true;
	}
	for (int d = 0; payload > 0 && d < NR_PERF_DERIVED; d++)
		if (perf_derived(l, &r, d, ROLE_WHOLE, payload, &v)) {
			fprintf(f, "%s %s %.4g", any ? "," : "", perf_derived_defs[d].label, v);
			any = true;
		}
	fprintf(f, "%s\n", any ? "" : " none counted");
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		const struct perf_counter *c = &l->perf->c[i];

		if (c->counted)
			continue;
		same_why &= !why || !strcmp(why, c->why);
		why = c->why;
	}
	if (!why)
		return;
	fprintf(f, "  not supported here:");
	any = false;
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		const struct perf_counter *c = &l->perf->c[i];

		if (c->counted)
			continue;
		fprintf(f, "%s %s", any ? "," : "", c->name);
		if (!same_why)
			fprintf(f, " (%s)", c->why);
		any = true;
	}
	if (same_why)
		fprintf(f, " (%s)", why);
	fprintf(f, "\n");
}

void perf_print(FILE *f, const struct ledger *l, double payload, bool full)
{
	struct perf_roles r;

	if (!l->perf)
		return;
	if (!full) {
		perf_print_brief(f, l, payload);
		return;
	}
	perf_roles_of(l, &r);
	fprintf(f, "\nperf counters (whole run%s%s%s)\n", l->perf->pmus[0] ? "; summed over core PMUs " : "",
		l->perf->pmus, r.separated ? "; sender and receiver by process" : "");
	if (r.why[0])
		fprintf(f, "  roles: %s\n", r.why);
	print_head(f, &r, "COUNTER");
	for (int i = 0; i < NR_PERF_COUNTERS; i++)
		print_counter(f, &l->perf->c[i], &r);
	if (payload <= 0)
		return;
	print_head(f, &r, "PER PAYLOAD BYTE");
	for (int d = 0; d < NR_PERF_DERIVED; d++)
		print_derived(f, l, &r, d, payload);
	if (perf_cycles_missing(l))
		fprintf(f, "  (no cycle counter: the fallback, task-clock ns/byte, is CPU time per byte, not cycles)\n");
}

static json_object *count_json(const struct perf_count *pc)
{
	json_object *o;

	if (!pc)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "value", json_object_new_double(pc->value));
	json_object_object_add(o, "running_fraction", json_object_new_double(pc->running));
	return o;
}

static json_object *counter_json(const struct perf_counter *c, const struct perf_roles *r)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "supported", json_object_new_boolean(c->counted));
	json_object_object_add(o, "why", c->counted ? NULL : json_object_new_string(c->why));
	json_object_object_add(o, "standin", c->standin ? json_object_new_string(c->standin) : NULL);
	json_object_object_add(o, "simulated_running", c->simulated ? json_object_new_double(c->simulated) : NULL);
	for (int role = 0; role < NR_PERF_ROLES; role++)
		json_object_object_add(o, perf_role_names[role], count_json(perf_role_count(c, r, role)));
	return o;
}

static json_object *derived_json(const struct ledger *l, const struct perf_roles *r, int role, double payload)
{
	json_object *o = json_object_new_object();
	double v;

	for (int d = 0; d < NR_PERF_DERIVED; d++)
		json_object_object_add(o, perf_derived_defs[d].key, perf_derived(l, r, d, role, payload, &v)
				       ? json_object_new_double(v) : NULL);
	return o;
}

json_object *perf_counters_json(const struct ledger *l, double payload)
{
	json_object *o, *events, *derived;
	struct perf_roles r;

	if (!l->perf)
		return NULL;
	perf_roles_of(l, &r);
	o = json_object_new_object();
	events = json_object_new_object();
	derived = json_object_new_object();
	json_object_object_add(o, "roles", json_object_new_string(r.separated ? "process" : "whole"));
	json_object_object_add(o, "roles_why", r.why[0] ? json_object_new_string(r.why) : NULL);
	json_object_object_add(o, "core_pmus", l->perf->pmus[0] ? json_object_new_string(l->perf->pmus) : NULL);
	for (int i = 0; i < NR_PERF_COUNTERS; i++)
		json_object_object_add(events, l->perf->c[i].name, counter_json(&l->perf->c[i], &r));
	json_object_object_add(o, "events", events);
	for (int role = 0; role < NR_PERF_ROLES; role++)
		json_object_object_add(derived, perf_role_names[role],
				       role == ROLE_WHOLE || r.separated ? derived_json(l, &r, role, payload) : NULL);
	json_object_object_add(o, "derived", derived);
	json_object_object_add(o, "cycles_fallback", perf_cycles_missing(l)
			       ? json_object_new_string("task_clock_ns_per_byte") : NULL);
	return o;
}
