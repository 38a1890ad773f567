/* Small pieces shared by the CLI's subcommands. */
#ifndef CLI_H
#define CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>
#include <bpf/libbpf.h>

#define EXIT_USAGE 2

/* -v: libbpf's log is shown (cli_libbpf_print()) */
extern bool cli_verbose;
/* libbpf's print callback: its warnings and debug lines only with -v. */
int cli_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args);

/* Why this process cannot load and attach BPF programs (a missing capability), or NULL. */
const char *cli_missing_capability(void);

/* The value of @arg written as "@opt=VALUE" ("--method=kprobe"), else NULL. */
const char *cli_opt_value(const char *arg, const char *opt);
/* Prints "PROG: message" on one line to stderr; returns EXIT_USAGE. */
int cli_usage_error(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Ends the command with "out of memory": for the small tables of a command's arguments. */
void cli_out_of_memory(void) __attribute__((noreturn));
/* realloc(), or cli_out_of_memory(). */
void *cli_xrealloc(void *p, size_t n);

/* The workload's own figures, one JSON object it writes to a pipe, read while it runs. */
struct report_pipe {
	char *text;
	size_t len, cap;
};

#define REPORT_PIPE_MAX (16 << 20)

/* Reads what @fd holds now (to EOF if it blocks); -1 once the report exceeds REPORT_PIPE_MAX. */
int report_pipe_drain(int fd, struct report_pipe *r);
json_object *report_pipe_parse(struct report_pipe *r);
/* The whole report from @fd, or NULL. */
json_object *report_pipe_read(int fd);

#endif
