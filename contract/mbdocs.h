/* The microbenchmarks' options as their --help and zctrace describe them. */
#ifndef MBDOCS_H
#define MBDOCS_H

/* One option of one microbenchmark; a workload's rows stay together, in its --help's order. */
struct mb_opt_doc {
	const char *workload;
	const char *name;	/* without its dashes */
	const char *arg;	/* N, BYTES, CPU, SECS, PATH, the words of a choice ("cold|warm"), "" for a flag */
	const char *help;	/* its meaning and default, one line */
};

extern const struct mb_opt_doc mb_opt_docs[];
extern const int mb_nr_opt_docs;

/* The row of option @name of @workload, or NULL. */
const struct mb_opt_doc *mb_opt_doc(const char *workload, const char *name);

#endif
