/* What each copy cost, as text and JSON (report_cost.h): the figures ledger/costs.c draws. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "ledger/costs.h"
#include "report/report_cost.h"
#include "trace/ktable.h"

#define add json_object_object_add

/* The kinds in the order the report lists them, the displaced last. */
static int by_samples_desc(const struct ledger *l, int *order)
{
	int n = 0;

	for (int c = NR_SITES; c < NR_COST_CLASSES; c++)
		if (c != COST_DISPLACED)
			order[n++] = c;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && l->cost.phase[order[j]] > l->cost.phase[order[j - 1]]; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	return n;
}

static void print_row(FILE *f, const struct ledger *l, int cls, __u64 total)
{
	struct cost_span sp = cost_span_of(l, cls);
	double v, lo, hi;
	char npb[48] = "-", gbs[16] = "-";

	if (cls < NR_SITES && cost_ns_per_byte(l, cls, &v, &lo, &hi)) {
		snprintf(npb, sizeof(npb), "%.3f (%.3f-%.3f)", v, lo, hi);
		if (v > 0)
			snprintf(gbs, sizeof(gbs), "%.1f", 1 / v);
	}
	fprintf(f, "  %-16s %8" PRIu64 " %9.1f %6.1f%%   %-24s %6s\n", cost_class_name(cls), (uint64_t)sp.samples,
		sp.ns / 1e6, total ? 100.0 * sp.samples / total : 0, npb, gbs);
}

static void print_trade(FILE *f, const struct ledger *l, const struct cost_trade *t, const char *what)
{
	if (!t->measured)
		return;
	fprintf(f, "  %s: %.2f us a call (%.2f-%.2f) over %" PRIu64 " calls of %.1f KiB; copying those bytes at "
		"this run's %s rate would take %.2f us\n", what, t->ns_per_call / 1e3, t->lo / 1e3, t->hi / 1e3,
		(uint64_t)t->calls, t->bytes_per_call / 1024, site_name(t->avoided_at), t->copy_ns_per_call / 1e3);
}

void cost_print(FILE *f, const struct ledger *l, bool full)
{
	__u64 total = cost_phase_samples(l);
	char why[200];
	bool ok;
	struct cost_trade zc, ref;
	int order[NR_COST_CLASSES], n, shown = 0;
	double v, lo, hi;

	if (!l->cost.measured) {
		fprintf(f, "\nCPU time by site: %s\n", l->cost.why);
		return;
	}
	fprintf(f, "\nCPU time by site (%s samples, %u Hz a CPU; %s; 95%% intervals)\n", l->cost.event, l->cost.hz,
		l->phase_gated ? "measured phase" : "whole run");
	fprintf(f, "  %-16s %8s %9s %7s   %-24s %6s\n", "SITE/KIND", "SAMPLES", "CPU ms", "SHARE", "NS/BYTE (95%)",
		"GB/s");
	/* every site that copied, sampled or not; the program's own where its copy routines are known */
	for (int s = 0; s < NR_SITES; s++)
		if (is_cpu_copy(s) && cost_class_of_site(l, s) == s && (l->cost.phase[s] || l->k.site[s].bytes))
			print_row(f, l, s, total);
	if (l->k.site[SITE_USER_COPY].bytes && cost_class_of_site(l, SITE_USER_COPY) < 0)
		fprintf(f, "  %-16s %s\n", site_name(SITE_USER_COPY), l->cost.user_why);
	else if (l->cost.user_unread && (l->k.site[SITE_USER_COPY].bytes || l->cost.phase[SITE_USER_COPY]))
		fprintf(f, "  user_copy: %" PRIu64 " of %" PRIu64 " user-mode samples unread (their file could not be "
			"read): in user, and in user_copy's interval\n", (uint64_t)l->cost.user_unread,
			(uint64_t)l->cost.user_phase);
	n = by_samples_desc(l, order);
	for (int i = 0; i < n && full; i++)
		print_row(f, l, order[i], total);
	if (full)
		print_row(f, l, COST_DISPLACED, total);
	if (cost_copy_share(l, &v, &lo, &hi))
		fprintf(f, "  copying: %.1f%% (%.1f-%.1f%%) of the traced tasks' %" PRIu64 " samples; displaced: %.1f%% "
			"(landed where interrupts came back on)\n", v * 100, lo * 100, hi * 100, (uint64_t)total,
			100.0 * l->cost.phase[COST_DISPLACED] / total);
	else
		fprintf(f, "  copying: not measured: no sample of the traced tasks (they ran for less than a sampling "
			"period)\n");
	if (!full) {
		fprintf(f, "  the rest:");
		for (int i = 0; i < n && shown < 6; i++) {
			if (!l->cost.phase[order[i]])
				break;
			fprintf(f, "%s %s %.1f%%", shown ? "," : "", cost_class_name(order[i]),
				100.0 * l->cost.phase[order[i]] / total);
			shown++;
		}
		fprintf(f, "%s\n", shown ? "" : " nothing");
	}
	cost_trades(l, &zc, &ref);
	print_trade(f, l, &zc, "zerocopy: pinning and notices");
	print_trade(f, l, &ref, "page references");
	if (!cost_total_check(l, &ok, why, sizeof(why)) && why[0])
		fprintf(f, "  the sampled time against task-clock: %s\n", why);
}

void cost_site_json(json_object *site, const struct ledger *l, int s)
{
	int cls = cost_class_of_site(l, s);
	double v, lo, hi;

	if (!l->cost.measured || cls < 0) {
		add(site, "cpu_ns", NULL);
		add(site, "cpu_samples", NULL);
		add(site, "ns_per_byte", NULL);
		return;
	}
	/* a site that does not copy: the time of its path (pinning and notices, page references) */
	add(site, "cpu_ns", json_object_new_uint64(l->cost.phase[cls] * l->cost.period_ns));
	add(site, "cpu_samples", json_object_new_uint64(l->cost.phase[cls]));
	add(site, "memcpy_gb_s", l->copy_bound[s] > 0 ? json_object_new_double(l->copy_bound[s]) : NULL);
	if (cost_ns_per_byte(l, s, &v, &lo, &hi)) {
		json_object *o = json_object_new_object();

		add(o, "value", json_object_new_double(v));
		add(o, "lo", json_object_new_double(lo));
		add(o, "hi", json_object_new_double(hi));
		add(site, "ns_per_byte", o);
	} else {
		add(site, "ns_per_byte", NULL);
	}
}

static json_object *trade_json(const struct cost_trade *t)
{
	json_object *o;

	if (!t->measured)
		return NULL;
	o = json_object_new_object();
	add(o, "calls", json_object_new_uint64(t->calls));
	add(o, "bytes_per_call", json_object_new_double(t->bytes_per_call));
	add(o, "ns_per_call", json_object_new_double(t->ns_per_call));
	add(o, "ns_per_call_lo", json_object_new_double(t->lo));
	add(o, "ns_per_call_hi", json_object_new_double(t->hi));
	add(o, "copy_rate_site", json_object_new_string(site_name(t->avoided_at)));
	add(o, "copy_ns_per_call", json_object_new_double(t->copy_ns_per_call));
	return o;
}

json_object *cost_json(const struct ledger *l)
{
	const struct perf_counter *tc = l->perf ? perf_find(l->perf, "task-clock") : NULL;
	json_object *o, *kinds, *run;
	struct cost_trade zc, ref;
	double v, lo, hi;

	if (!l->cost.measured) {
		o = json_object_new_object();
		add(o, "measured", json_object_new_boolean(false));
		add(o, "why", json_object_new_string(l->cost.why));
		return o;
	}
	o = json_object_new_object();
	add(o, "measured", json_object_new_boolean(true));
	add(o, "event", json_object_new_string(l->cost.event));
	add(o, "hz", json_object_new_uint64(l->cost.hz));
	add(o, "period_ns", json_object_new_uint64(l->cost.period_ns));
	add(o, "phase_gated", json_object_new_boolean(l->phase_gated));
	add(o, "samples", json_object_new_uint64(cost_phase_samples(l)));
	add(o, "cpu_ns", json_object_new_uint64(cost_phase_samples(l) * l->cost.period_ns));
	add(o, "run_samples", json_object_new_uint64(cost_run_samples(l)));
	add(o, "run_cpu_ns", json_object_new_uint64(cost_run_samples(l) * l->cost.period_ns));
	add(o, "task_clock_ns", tc && tc->counted ? json_object_new_uint64((uint64_t)tc->value) : NULL);
	add(o, "displaced_samples", json_object_new_uint64(l->cost.phase[COST_DISPLACED]));
	add(o, "stack_errors", json_object_new_uint64(l->cost.stack_errors));
	add(o, "exiting_samples", json_object_new_uint64(l->cost.exiting));
	add(o, "functions_known", json_object_new_uint64(l->cost.nfuncs));
	add(o, "bpf_functions_known", l->cost.nfuncs_bpf == KTABLE_BPF_UNLISTED ? NULL
				      : json_object_new_uint64(l->cost.nfuncs_bpf));
	add(o, "functions_from", l->cost.funcs_from ? json_object_new_string(l->cost.funcs_from) : NULL);
	add(o, "user_copy_functions_known", json_object_new_uint64(l->cost.user_fns));
	add(o, "user_copy_why", l->cost.user_measured ? NULL : json_object_new_string(l->cost.user_why));
	/* counted only where the sampler knew the routines to look for */
	add(o, "user_samples", l->cost.user_fns ? json_object_new_uint64(l->cost.user_phase) : NULL);
	add(o, "user_unread_samples", l->cost.user_fns ? json_object_new_uint64(l->cost.user_unread) : NULL);
	add(o, "copy_share", cost_copy_share(l, &v, &lo, &hi) ? json_object_new_double(v) : NULL);
	{
		char why[200];
		bool ok;

		/* why the check against task-clock was not made, where there is a reason to give */
		add(o, "task_clock_check_why", !cost_total_check(l, &ok, why, sizeof(why)) && why[0]
		    ? json_object_new_string(why) : NULL);
	}
	kinds = json_object_new_object();
	run = json_object_new_object();
	for (int c = 0; c < NR_COST_CLASSES; c++) {
		json_object *k;

		/* the program's own copies, not measured: their samples are in user */
		if (c == SITE_USER_COPY && !l->cost.user_measured) {
			add(run, cost_class_name(c), NULL);
			continue;
		}
		k = json_object_new_object();
		add(k, "samples", json_object_new_uint64(l->cost.phase[c]));
		add(k, "cpu_ns", json_object_new_uint64(l->cost.phase[c] * l->cost.period_ns));
		add(c < NR_SITES ? run : kinds, cost_class_name(c), k);
	}
	add(o, "by_kind", kinds);
	add(o, "by_site", run);
	cost_trades(l, &zc, &ref);
	add(o, "zerocopy_per_call", trade_json(&zc));
	add(o, "page_refs_per_call", trade_json(&ref));
	return o;
}

/* The classes a timed copy can be placed in: the copy sites, then other_copies. */
static bool timed_class(const struct ledger *l, int cls)
{
	return l->timed.calls[cls] && (cls < NR_SITES || cls == COST_COPY_OTHER);
}

void copy_time_print(FILE *f, const struct ledger *l)
{
	const struct copy_time_figures *t = &l->timed;

	if (!t->asked)
		return;
	if (!t->measured) {
		fprintf(f, "\nTimed copies: %s\n", t->why);
		return;
	}
	fprintf(f, "\nTimed copies (fentry/fexit skb_copy_datagram_iter and skb_copy_ubufs, less the copies timed "
		"inside; calls the CPU left before they returned, not timed: %" PRIu64 ")\n", (uint64_t)t->switched);
	fprintf(f, "  %-16s %10s %9s %10s %12s\n", "SITE", "CALLS", "CPU ms", "NS/BYTE", "SAMPLED ms");
	for (int c = 0; c < NR_COST_CLASSES; c++) {
		char npb[16] = "-", sampled[16] = "-";

		if (!timed_class(l, c))
			continue;
		if (c < NR_SITES && l->k.site[c].bytes)
			snprintf(npb, sizeof(npb), "%.3f", (double)t->ns[c] / l->k.site[c].bytes);
		if (l->cost.measured)
			snprintf(sampled, sizeof(sampled), "%.1f", cost_span_of(l, c).ns / 1e6);
		fprintf(f, "  %-16s %10" PRIu64 " %9.1f %10s %12s\n", cost_class_name(c), (uint64_t)t->calls[c],
			t->ns[c] / 1e6, npb, sampled);
	}
	if (t->unmatched || t->too_deep)
		fprintf(f, "  not timed either: %" PRIu64 " returns without their entry, %" PRIu64 " calls nested too "
			"deep\n", (uint64_t)t->unmatched, (uint64_t)t->too_deep);
}

json_object *copy_time_json(const struct ledger *l)
{
	const struct copy_time_figures *t = &l->timed;
	json_object *o = json_object_new_object(), *by;

	add(o, "measured", json_object_new_boolean(t->measured));
	if (!t->measured) {
		add(o, "why", json_object_new_string(t->asked ? t->why : "not measured: not asked for (--time-copies)"));
		return o;
	}
	add(o, "switched", json_object_new_uint64(t->switched));
	add(o, "unmatched", json_object_new_uint64(t->unmatched));
	add(o, "too_deep", json_object_new_uint64(t->too_deep));
	by = json_object_new_object();
	for (int c = 0; c < NR_COST_CLASSES; c++) {
		json_object *k;

		if (!timed_class(l, c))
			continue;
		k = json_object_new_object();
		add(k, "calls", json_object_new_uint64(t->calls[c]));
		add(k, "cpu_ns", json_object_new_uint64(t->ns[c]));
		add(k, "ns_per_byte", c < NR_SITES && l->k.site[c].bytes
		    ? json_object_new_double((double)t->ns[c] / l->k.site[c].bytes) : NULL);
		add(by, cost_class_name(c), k);
	}
	add(o, "by_site", by);
	return o;
}
