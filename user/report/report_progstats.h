/* What each BPF program cost (trace/progstats.h), as text. */
#ifndef REPORT_PROGSTATS_H
#define REPORT_PROGSTATS_H

#include <stdio.h>
#include "trace/progstats.h"

/* The programs' table: events, run time, ns per event, events per second, runs missed; the total. */
void prog_stats_print(FILE *f, const struct prog_stats *ps);

#endif
