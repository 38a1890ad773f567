/* Small pieces shared by the CLI's subcommands. */
#ifndef CLI_H
#define CLI_H

#include <json-c/json.h>

#define EXIT_USAGE 2

/* Prints "PROG: message" on one line to stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The workload's own figures, one JSON object written to @fd (at most 64 KiB), or NULL. */
json_object *cli_read_result(int fd);

#endif
