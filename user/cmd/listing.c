/*
 * The built-in workloads and their options, printed from the one table (workloads.c) and the
 * workloads' option lines (wl_opt_docs): 'zctrace list', and the blocks of the manual page and of
 * docs/ that are made from them.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include "cmd/listing.h"
#include "os/cli.h"
#include "contract/mbdocs.h"
#include "contract/opts.h"
#include "trace/workloads.h"

#define MICRO_TITLE "MICROBENCHMARKS"
#define MICRO_ABOUT "a distribution per measurement; each assumption checked by the kernel"
#define OPTIONS_TITLE "OPTIONS OF THE NETWORK AND FILE WORKLOADS"
#define MARKER_NOTE "made by make docs from zctrace list --format"

int parse_list_format(const char *s, enum list_format *f)
{
	static const char *const names[] = { [LIST_TEXT] = "text", [LIST_MAN] = "man", [LIST_MARKDOWN] = "markdown" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*f = i;
			return 0;
		}
	return -1;
}

/* Whether workload @d shows option line @o (a microbenchmark parses its own options). */
static bool takes(const struct workload_def *d, const struct wl_opt_doc *o)
{
	return !d->micro && d->opt_groups && wl_opt_doc_shown(o, d->opt_groups);
}

/* Option row @o as its --help lists it: "--name ARG". */
static void mb_option(const struct mb_opt_doc *o, char *buf, size_t size)
{
	snprintf(buf, size, "--%s%s%s", o->name, *o->arg ? " " : "", o->arg);
}

/* Calls @fn for each option of workload @d, as "--name ARG" (a microbenchmark's: mb_opt_docs). */
static void for_each_option(const struct workload_def *d, void (*fn)(FILE *, const char *, int, int), FILE *out)
{
	int n = 0, total = 0;
	char opt[128];

	if (d->micro) {
		for (int i = 0; i < mb_nr_opt_docs; i++)
			total += !strcmp(mb_opt_docs[i].workload, d->name);
		for (int i = 0; i < mb_nr_opt_docs; i++) {
			if (strcmp(mb_opt_docs[i].workload, d->name))
				continue;
			mb_option(&mb_opt_docs[i], opt, sizeof(opt));
			fn(out, opt, n++, total);
		}
		return;
	}
	for (int i = 0; i < wl_nr_opt_docs; i++)
		total += takes(d, &wl_opt_docs[i]);
	for (int i = 0; i < wl_nr_opt_docs; i++)
		if (takes(d, &wl_opt_docs[i]))
			fn(out, wl_opt_docs[i].opt, n++, total);
}

/* The workloads that take option line @o, comma-separated; "" when every network and file one does. */
static void takers(const struct wl_opt_doc *o, char *buf, size_t size)
{
	int all = 0, n = 0;
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < nr_workload_defs; i++) {
		const struct workload_def *d = &workload_defs[i];

		all += !d->micro;
		if (takes(d, o) && len < size)
			len += snprintf(buf + len, size - len, "%s%s", n++ ? ", " : "", d->name);
	}
	if (n == all)
		buf[0] = '\0';
}

static bool starts_micro(int i)
{
	return workload_defs[i].micro && (i == 0 || !workload_defs[i - 1].micro);
}

/* ---- text ---- */

static void text_option(FILE *out, const char *opt, int i, int n)
{
	fprintf(out, "%s%s%s", i ? "" : "options: ", opt, i + 1 < n ? ", " : "\n");
}

static void print_text(FILE *out)
{
	char names[1024];

	fprintf(out, "%-16s %s\n", "WORKLOAD", "WHAT IT DOES / EXPECTED LEDGER");
	for (int i = 0; i < nr_workload_defs; i++) {
		const struct workload_def *d = &workload_defs[i];

		if (starts_micro(i))
			fprintf(out, "\n%s (%s)\n", MICRO_TITLE, MICRO_ABOUT);
		fprintf(out, "%-16s %s\n%-16s %s: %s\n", d->name, d->summary, "", d->micro ? "checked" : "expected",
			d->expected);
		fprintf(out, "%-16s ", "");
		for_each_option(d, text_option, out);
	}
	fprintf(out, "\n%s\n", OPTIONS_TITLE);
	for (int i = 0; i < wl_nr_opt_docs; i++) {
		const struct wl_opt_doc *o = &wl_opt_docs[i];

		fprintf(out, "  %-16s %s\n", o->opt, o->help);
		takers(o, names, sizeof(names));
		if (names[0])
			fprintf(out, "  %-16s (%s)\n", "", names);
	}
	fprintf(out, "\n'zctrace run WORKLOAD --help' lists a workload's options.\n");
}

/* ---- man ---- */

/* @s as troff text: minus signs, backslashes, and no control character at a line's start. */
static void man_text(FILE *out, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", out);
	for (; *s; s++)
		if (*s == '-')
			fputs("\\-", out);
		else if (*s == '\\')
			fputs("\\e", out);
		else
			fputc(*s, out);
}

/* "--name ARG": the name bold, a placeholder (capitals) italic, a list of values as it is. */
static void man_opt(FILE *out, const char *opt)
{
	size_t len = strcspn(opt, " ");
	const char *arg = opt[len] ? opt + len + 1 : NULL;
	char name[64];

	snprintf(name, sizeof(name), "%.*s", (int)len, opt);
	fputs("\\fB", out);
	man_text(out, name);
	fputs("\\fR", out);
	if (arg) {
		bool placeholder = strspn(arg, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == strlen(arg);

		fputs(placeholder ? " \\fI" : " ", out);
		man_text(out, arg);
		fputs(placeholder ? "\\fR" : "", out);
	}
}

static void man_option(FILE *out, const char *opt, int i, int n)
{
	fputs(i ? "" : "Options: ", out);
	man_opt(out, opt);
	fputs(i + 1 < n ? ", " : ".\n", out);
}

static void print_man(FILE *out)
{
	char names[1024];

	fprintf(out, ".\\\" BEGIN GENERATED workloads (" MARKER_NOTE " man)\n.SS \"Network and files\"\n");
	for (int i = 0; i < nr_workload_defs; i++) {
		const struct workload_def *d = &workload_defs[i];

		if (starts_micro(i))
			fprintf(out, ".SS Microbenchmarks\n%c%s.\n", MICRO_ABOUT[0] - 'a' + 'A', &MICRO_ABOUT[1]);
		fprintf(out, ".TP\n.B ");
		man_text(out, d->name);
		fputc('\n', out);
		man_text(out, d->summary);
		fprintf(out, ".\n.br\n%s: ", d->micro ? "Checked" : "Expected");
		man_text(out, d->expected);
		fprintf(out, ".\n.br\n");
		for_each_option(d, man_option, out);
	}
	fprintf(out, ".\\\" END GENERATED workloads\n");
	fprintf(out, ".\\\" BEGIN GENERATED options (" MARKER_NOTE " man)\n.SS \"Network and files\"\n");
	for (int i = 0; i < wl_nr_opt_docs; i++) {
		const struct wl_opt_doc *o = &wl_opt_docs[i];

		fprintf(out, ".TP\n");
		man_opt(out, o->opt);
		fputc('\n', out);
		man_text(out, o->help);
		fprintf(out, ".\n");
		takers(o, names, sizeof(names));
		if (names[0]) {
			fprintf(out, ".br\nTaken by ");
			man_text(out, names);
			fprintf(out, ".\n");
		}
	}
	fprintf(out, ".SS Microbenchmarks\n");
	for (int i = 0; i < nr_workload_defs; i++) {
		const struct workload_def *d = &workload_defs[i];

		if (!d->micro)
			continue;
		fprintf(out, ".TP\n.B ");
		man_text(out, d->name);
		fputc('\n', out);
		for (int k = 0, first = 1; k < mb_nr_opt_docs; k++) {
			const struct mb_opt_doc *o = &mb_opt_docs[k];
			char opt[128];

			if (strcmp(o->workload, d->name))
				continue;
			fputs(first ? "" : ".br\n", out);
			first = 0;
			mb_option(o, opt, sizeof(opt));
			man_opt(out, opt);
			fputs(": ", out);
			man_text(out, o->help);
			fputs(".\n", out);
		}
	}
	fprintf(out, ".\\\" END GENERATED options\n");
}

/* ---- Markdown ---- */

/* @s in a table cell: its bars and asterisks taken literally. */
static void md_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|' || *s == '*')
			fputc('\\', out);
		fputc(*s, out);
	}
}

/* An option as code; a table takes its bars for cells even there, unless escaped. */
static void md_option(FILE *out, const char *opt, int i, int n)
{
	fputc('`', out);
	for (const char *s = opt; *s; s++) {
		if (*s == '|')
			fputc('\\', out);
		fputc(*s, out);
	}
	fprintf(out, "`%s", i + 1 < n ? ", " : "");
}

/* The table of the network and file workloads (@micro false) or of the microbenchmarks. */
static void md_workloads(FILE *out, bool micro)
{
	const char *name = micro ? "microbenchmarks" : "workloads";

	fprintf(out, "<!-- BEGIN GENERATED %s (" MARKER_NOTE " markdown) -->\n", name);
	fprintf(out, "| workload | what it does | %s | options |\n|---|---|---|---|\n",
		micro ? "the kernel checks" : "expected ledger");
	for (int i = 0; i < nr_workload_defs; i++) {
		const struct workload_def *d = &workload_defs[i];

		if (d->micro != micro)
			continue;
		fprintf(out, "| %s | ", d->name);
		md_text(out, d->summary);
		fprintf(out, " | ");
		md_text(out, d->expected);
		fprintf(out, " | ");
		for_each_option(d, md_option, out);
		fprintf(out, " |\n");
	}
	fprintf(out, "<!-- END GENERATED %s -->\n", name);
}

static void print_markdown(FILE *out)
{
	char names[1024];

	md_workloads(out, false);
	fprintf(out, "<!-- BEGIN GENERATED options (" MARKER_NOTE " markdown) -->\n");
	fprintf(out, "| option | meaning | taken by |\n|---|---|---|\n");
	for (int i = 0; i < wl_nr_opt_docs; i++) {
		const struct wl_opt_doc *o = &wl_opt_docs[i];

		takers(o, names, sizeof(names));
		fputs("| ", out);
		md_option(out, o->opt, 0, 1);
		fputs(" | ", out);
		md_text(out, o->help);
		fprintf(out, " | %s |\n", names[0] ? names : "every one");
	}
	fprintf(out, "<!-- END GENERATED options -->\n");
	md_workloads(out, true);
}

void print_workloads(FILE *out, enum list_format f)
{
	if (f == LIST_MAN)
		print_man(out);
	else if (f == LIST_MARKDOWN)
		print_markdown(out);
	else
		print_text(out);
}

#define usage_error(...) cli_usage_error("zctrace", __VA_ARGS__)

static const char list_usage[] =
	"usage: zctrace list [--names]\n"
	"The built-in workloads: what each does, its expected ledger and its options.\n"
	"  --names          the workload names alone, one a line (for scripts and shell completion)\n";

/* --names: nothing but the names, so that scripts need not parse the table */
static int cmd_list_names(void)
{
	for (int i = 0; i < nr_workload_defs; i++)
		printf("%s\n", workload_defs[i].name);
	return 0;
}

/*
 * --format text|man|markdown: the table as it is printed, or as the blocks of the manual page
 * and of docs/ (make docs) made from it.
 */
int cmd_list(int argc, char **argv)
{
	enum list_format format = LIST_TEXT;

	if (argc == 2 && !strcmp(argv[1], "--names"))
		return cmd_list_names();
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(list_usage, stdout);
		return 0;
	}
	const char *joined = argc > 1 ? cli_opt_value(argv[1], "--format") : NULL;

	if (joined || (argc > 1 && !strcmp(argv[1], "--format"))) {
		const char *f = joined ? joined : argv[2];

		if (!f)
			return usage_error("list: --format needs a value (text, man or markdown)");
		if (parse_list_format(f, &format))
			return usage_error("list: unknown --format '%s' (text, man or markdown)", f);
		if (argc > (joined ? 2 : 3))
			return usage_error("list: unexpected argument '%s' after --format", argv[joined ? 2 : 3]);
		argc = 1;
	}
	if (argc > 1)
		return usage_error("list: unknown argument '%s' (only --names)", argv[1]);
	print_workloads(stdout, format);
	return 0;
}
