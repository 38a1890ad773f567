/* The tracer's effect as text: each figure traced and untraced, their ratio, and what the tracer did. */
#include <math.h>
#include <stdio.h>
#include "report/report_effect.h"

/* "the tracer added 56%" (a time) or "the tracer took 30% of it" (a rate). */
static void effect_words(const struct effect_row *r, char *buf, size_t n)
{
	double ratio = r->traced / r->untraced;

	if (r->higher_better)
		snprintf(buf, n, ratio <= 1 ? "the tracer took %.0f%% of it" : "%.0f%% more traced (noise)",
			 fabs(1 - ratio) * 100);
	else
		snprintf(buf, n, ratio >= 1 ? "the tracer added %.0f%%" : "%.0f%% less traced (noise)",
			 fabs(ratio - 1) * 100);
}

/* One line: each figure's ratio, traced to untraced (the first few). */
static void effect_print_brief(FILE *f, const struct effect *e)
{
	enum { SHOWN = 4 };

	fprintf(f, "tracer effect (traced / untraced, the same run with no BPF program):");
	if (!e->nrows)
		fprintf(f, " the workload reported no timing figure");
	for (int i = 0; i < e->nrows && i < SHOWN; i++) {
		const struct effect_row *r = &e->rows[i];

		fprintf(f, "%s %.40s %.2f", i ? "," : "", r->name, r->traced / r->untraced);
		if (r->has_interval)
			fprintf(f, " (95%%: %.2f-%.2f)", r->lo, r->hi);
		else if (i == 0 && e->unresolved[0])
			fprintf(f, " (%s)", e->unresolved);
	}
	if (e->nrows > SHOWN)
		fprintf(f, " and %d more", e->nrows - SHOWN);
	fprintf(f, "\n");
}

void effect_print(FILE *f, const struct effect *e, bool full)
{
	char words[64];

	if (e->wall_untraced > 0)
		fprintf(f, "%stracer effect (--baseline: the command run once more, untraced)\n"
			"  wall time: traced %.3f s, untraced %.3f s, ratio %.2f\n", full ? "\n" : "",
			e->wall_traced, e->wall_untraced, e->wall_traced / e->wall_untraced);
	if (!e->measured) {
		if (e->why[0])
			fprintf(f, "%stracer effect: not measured (%s)\n", full ? "\n" : "", e->why);
		return;
	}
	if (!full) {
		effect_print_brief(f, e);
		return;
	}
	fprintf(f, "\ntracer effect (the same run once more after the traced one, with no BPF program loaded)\n");
	if (!e->nrows) {
		fprintf(f, "  the workload reported no timing figure\n");
		return;
	}
	fprintf(f, "  %-40s %-6s %14s %14s %7s\n", "FIGURE", "UNIT", "TRACED", "UNTRACED", "RATIO");
	for (int i = 0; i < e->nrows; i++) {
		const struct effect_row *r = &e->rows[i];

		effect_words(r, words, sizeof(words));
		fprintf(f, "  %-40.40s %-6s %14.2f %14.2f %7.2f  %s\n", r->name, r->unit, r->traced, r->untraced,
			r->traced / r->untraced, words);
		if (r->has_interval)
			fprintf(f, "  %-40s %-6s %29s %7s  95%% interval %.2f-%.2f, from the rate's spread in each pass\n",
				"", "", "", "", r->lo, r->hi);
		else if (i == 0 && e->unresolved[0])
			fprintf(f, "  %-40s %-6s %29s %7s  no interval: %s\n", "", "", "", "", e->unresolved);
	}
}
