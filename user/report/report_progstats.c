/* What each BPF program cost, as text (--prog-stats). */
#include <stdio.h>
#include "report/report_progstats.h"

void prog_stats_print(FILE *f, const struct prog_stats *ps)
{
	double secs = ps->end - ps->start;
	__u64 events, ns, misses;

	if (ps->stats_fd < 0) {
		fprintf(f, "BPF program costs: not measured: %s\n", ps->why);
		return;
	}
	prog_stats_totals(ps, &events, &ns, &misses);
	fprintf(f, "BPF program costs over %.2f s (kernel run-time statistics; every invocation, traced "
		"processes or not)\n", secs);
	fprintf(f, "  %-30s %-34s %12s %12s %9s %12s %7s\n", "PROGRAM", "ATTACHED TO", "EVENTS",
		"RUN TIME ms", "NS/EVENT", "EVENTS/S", "MISSED");
	for (int i = 0; i < ps->n; i++) {
		const struct prog_stat *st = &ps->p[i];

		fprintf(f, "  %-30s %-34s %12llu %12.3f %9.1f %12.0f %7llu\n", st->name, st->attach,
			(unsigned long long)st->events, st->run_time_ns / 1e6,
			prog_stats_per_event(st->run_time_ns, st->events), secs > 0 ? st->events / secs : 0,
			(unsigned long long)st->misses);
	}
	fprintf(f, "  %-30s %-34s %12llu %12.3f %9.1f %12.0f %7llu\n", "all", "", (unsigned long long)events,
		ns / 1e6, prog_stats_per_event(ns, events), secs > 0 ? events / secs : 0, (unsigned long long)misses);
	fprintf(f, "  CPU time in zctrace's BPF programs: %.2f%% of one CPU over the run\n",
		secs > 0 ? 100.0 * ns / 1e9 / secs : 0);
}
