/* Small pieces shared by the CLI's subcommands. */
#ifndef CLI_H
#define CLI_H

#define EXIT_USAGE 2

/* Prints "PROG: message" on one line to stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
