/* Small pieces shared by the CLI's subcommands: usage errors, parsing, the workload's result. */
#include <stdarg.h>
#include <stdbool.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "os/cli.h"

bool cli_verbose;

int cli_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if ((level == LIBBPF_DEBUG || level == LIBBPF_WARN) && !cli_verbose)
		return 0;
	return vfprintf(stderr, fmt, args);
}

const char *cli_opt_value(const char *arg, const char *opt)
{
	size_t n = strlen(opt);

	return !strncmp(arg, opt, n) && arg[n] == '=' ? arg + n + 1 : NULL;
}

int cli_usage_error(const char *prog, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	return EXIT_USAGE;
}

void cli_out_of_memory(void)
{
	fprintf(stderr, "zctrace: out of memory\n");
	exit(1);
}

void *cli_xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		cli_out_of_memory();
	return p;
}

int report_pipe_drain(int fd, struct report_pipe *r)
{
	ssize_t n;

	for (;;) {
		if (r->cap - r->len < 4096) {
			size_t cap = r->cap ? r->cap * 2 : 65536;
			char *t = cap <= REPORT_PIPE_MAX ? realloc(r->text, cap) : NULL;

			if (!t)
				return -1;
			r->text = t;
			r->cap = cap;
		}
		n = read(fd, r->text + r->len, r->cap - r->len - 1);
		if (n <= 0)
			return 0;
		r->len += n;
	}
}

json_object *report_pipe_parse(struct report_pipe *r)
{
	if (!r->len)
		return NULL;
	r->text[r->len] = '\0';
	return json_tokener_parse(r->text);
}

json_object *report_pipe_read(int fd)
{
	struct report_pipe r = {};
	json_object *o = report_pipe_drain(fd, &r) ? NULL : report_pipe_parse(&r);

	free(r.text);
	return o;
}

/*
 * The capability a run lacks, said in one line, or NULL. Loading programs and making maps needs
 * CAP_BPF; tracing programs, uprobes and perf counters need CAP_PERFMON; CAP_SYS_ADMIN covers
 * both (and is what kernels before 5.8 ask for).
 */
const char *cli_missing_capability(void)
{
	unsigned long long eff = 0;
	bool found = false, admin;
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return NULL;	/* cannot tell: let the kernel answer */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			found = true;
	fclose(f);
	if (!found)
		return NULL;
	admin = eff & (1ULL << CAP_SYS_ADMIN);
	if (!admin && !(eff & (1ULL << CAP_BPF)))
		return "loading BPF programs and maps needs CAP_BPF (or CAP_SYS_ADMIN), which this process "
		       "does not have (run as root)";
	if (!admin && !(eff & (1ULL << CAP_PERFMON)))
		return "attaching tracing programs and opening perf counters needs CAP_PERFMON (or "
		       "CAP_SYS_ADMIN), which this process does not have (run as root)";
	return NULL;
}
