/* Small pieces shared by the CLI's subcommands: usage errors, parsing, the workload's result. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cli.h"

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

int cli_drain_result(int fd, struct cli_result *r)
{
	ssize_t n;

	for (;;) {
		if (r->cap - r->len < 4096) {
			size_t cap = r->cap ? r->cap * 2 : 65536;
			char *t = cap <= CLI_MAX_RESULT ? realloc(r->text, cap) : NULL;

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

json_object *cli_parse_result(struct cli_result *r)
{
	if (!r->len)
		return NULL;
	r->text[r->len] = '\0';
	return json_tokener_parse(r->text);
}

json_object *cli_read_result(int fd)
{
	struct cli_result r = {};
	json_object *o = cli_drain_result(fd, &r) ? NULL : cli_parse_result(&r);

	free(r.text);
	return o;
}
