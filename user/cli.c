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

json_object *cli_read_result(int fd)
{
	char buf[65536];
	size_t len = 0;
	ssize_t n;

	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	return len ? json_tokener_parse(buf) : NULL;
}
