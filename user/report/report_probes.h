/* The probe table and the census's programs as zctrace probes prints them. */
#ifndef REPORT_PROBES_H
#define REPORT_PROBES_H

#include <stdio.h>
#include "trace/probes.h"

/* Each site's method here and the label of its candidate, or none; why each better one was refused. */
void print_probes(FILE *f, const struct probe_choice *choice);
/* One line: how the I/O syscalls are followed, where not by the raw syscall tracepoints as asked; else nothing. */
void print_io_hooks(FILE *f, const struct probe_choice *choice);
/*
 * What the census's programs (loaded in @obj) run on, by how often: each attach point with the
 * sites it serves, and how many programs a plain TCP send or receive runs.
 */
struct zctrace_bpf;
void print_census_runs(FILE *f, struct zctrace_bpf *obj, const struct probe_choice *choice);

#endif
