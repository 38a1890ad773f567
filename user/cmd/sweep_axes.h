/*
 * A microbenchmark sweep's parameter axes (--param NAME=LIST): each name mapped onto the options
 * the workload really takes, each value checked by the workload's own option parser (sweep_axes.c).
 */
#ifndef SWEEP_AXES_H
#define SWEEP_AXES_H

#include <json-c/json.h>
#include "trace/workloads.h"

#define MAX_AXES 8
#define MAX_AXIS_OPTIONS 2	/* memlat's size sets --min-size and --max-size */

struct axis {
	char *name;		/* as given: "size", "file-size" */
	char **values;		/* values[0] owns the text */
	int nvalues;
	char column[64];	/* the row's column: "param_size", "param_file_size" */
};

enum axis_kind {
	AXIS_NUMBER,		/* BYTES or N: the cell holds the number */
	AXIS_CPU,		/* a CPU, -1 for none */
	AXIS_WORD,		/* a choice or a path: the cell holds the word */
	AXIS_FLAG,		/* an option without a value: on or off */
};

/* How one workload takes one axis: the options a value sets. */
struct axis_map {
	char options[MAX_AXIS_OPTIONS][32];	/* "--min-size" */
	int noptions;
	enum axis_kind kind;
};

/* "NAME=V1,V2,...": 0, or a one-line usage error printed and EXIT_USAGE. */
int axis_parse(const char *arg, struct axis *ax);
void axis_free(struct axis *ax);
/*
 * Maps @ax onto @def's options (its own name, or a name the table below gives it) and runs the
 * workload's option parser on every value: 0, or a one-line usage error printed and EXIT_USAGE.
 */
int axis_resolve(const struct workload_def *def, const struct axis *ax, struct axis_map *map);
/* Appends to @argv the options value @v sets (a flag's "off" sets none); the new count. */
int axis_argv(const struct axis_map *map, const char *v, const char **argv, int n);
/* The row's cell for value @v: a number for sizes, counts and CPUs, else the word. */
json_object *axis_cell(const struct axis_map *map, const char *v);

#endif
