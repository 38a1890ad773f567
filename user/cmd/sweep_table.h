/* The sweep's table: columns, rows from a run's JSON ledger, CSV or JSON output (sweep_table.c). */
#ifndef SWEEP_TABLE_H
#define SWEEP_TABLE_H

#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>
#include "os/perfcnt.h"

struct utsname;
struct machine;
struct axis;

/* The columns of a row, in order. Fixed before the first run, so the header never depends on it. */
struct columns {
	char **name;
	int n;
	const char *perf_counter[NR_PERF_COUNTERS];
};

struct sweep_output {
	const char *path;		/* NULL: stdout */
	FILE *csv;
	json_object *doc;		/* JSON: { "meta", "rows" }, rewritten after every run */
	json_object *rows;
	char *tmp_path;
	bool failed;
};

/* A stream sweep's columns, or (@micro) a microbenchmark sweep's, with a column per axis. */
void build_columns(struct columns *c, bool micro, const struct axis *axes, int naxes);
void free_columns(struct columns *c);
/* A row with every column; a NULL value leaves a cell empty (not measured). */
json_object *new_row(const struct columns *c);
void row_put(json_object *row, const char *col, json_object *v);
/* The row's figures from a run's JSON ledger @led. */
void fill_from_ledger(json_object *row, json_object *led, const struct columns *c);
/*
 * A microbenchmark's measurements (m_* lists) and assumptions (counts, verdicts) from @led, which
 * may be NULL; with @json also the "measurements" and "assumptions" arrays, verdicts included.
 */
void fill_micro(json_object *row, json_object *led, bool json);
/* The JSON document's "meta": host, kernel, start time, command line, the machine. */
json_object *meta_json(int argc, char **argv, const struct utsname *u, const struct machine *m);
/* To @path (NULL or "-": stdout), as CSV or (@json) JSON; takes @meta. 0 or -errno. */
int output_open(struct sweep_output *out, const char *path, bool json, const struct columns *c, json_object *meta);
/* Writes the row and takes it. */
void output_row(struct sweep_output *out, const struct columns *c, json_object *row);
void output_close(struct sweep_output *out);

#endif
