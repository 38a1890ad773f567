/* The built-in workloads and their options as 'zctrace list' prints them: text, man or Markdown. */
#ifndef LISTING_H
#define LISTING_H

#include <stdio.h>

enum list_format { LIST_TEXT, LIST_MAN, LIST_MARKDOWN };

/* "text", "man" or "markdown": 0, or -1 for any other word. */
int parse_list_format(const char *s, enum list_format *f);
/*
 * The workload table in @f's format. Man and Markdown come as named blocks between
 * "BEGIN GENERATED NAME" and "END GENERATED NAME" comment lines, which tools/docblocks.py puts in
 * the manual page and docs/ in place of the blocks of the same names.
 */
void print_workloads(FILE *out, enum list_format f);
/* zctrace list [--names | --format text|man|markdown]: the workload table. */
int cmd_list(int argc, char **argv);

#endif
