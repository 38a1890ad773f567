/* zctrace: where the bytes of an I/O path are really copied. The CLI: its commands, list and probes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/errqueue.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/libbpf.h>
#include "trace/census.h"
#include "os/cli.h"
#include "cmd/floor.h"
#include "cmd/listing.h"
#include "cmd/export.h"
#include "report/output.h"
#include "trace/probes.h"
#include "trace/tracer.h"
#include "cmd/run.h"
#include "cmd/sweep.h"
#include "cmd/top.h"
#include "trace/workloads.h"
#include "zctrace.skel.h"

/* The BPF side cannot include uapi headers next to vmlinux.h; hold its copies to them here. */
_Static_assert(ZCT_EE_ORIGIN_ZEROCOPY == SO_EE_ORIGIN_ZEROCOPY, "errqueue origin");
_Static_assert(ZCT_EE_CODE_ZEROCOPY_COPIED == SO_EE_CODE_ZEROCOPY_COPIED, "errqueue code");
_Static_assert(ZCT_MSG_ZEROCOPY == MSG_ZEROCOPY, "MSG_ZEROCOPY");
_Static_assert(ZCT_IPPROTO_TCP == IPPROTO_TCP, "IPPROTO_TCP");
_Static_assert(ZCT_MSG_TRUNC == MSG_TRUNC && ZCT_MSG_ERRQUEUE == MSG_ERRQUEUE, "MSG_TRUNC, MSG_ERRQUEUE");
_Static_assert(ZCT_IORING_CQE_F_NOTIF == IORING_CQE_F_NOTIF, "IORING_CQE_F_NOTIF");
_Static_assert(ZCT_IORING_NOTIF_USAGE_ZC_COPIED == IORING_NOTIF_USAGE_ZC_COPIED, "IORING_NOTIF_USAGE_ZC_COPIED");

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
static int cmd_list(int argc, char **argv)
{
	enum list_format format = LIST_TEXT;

	if (argc == 2 && !strcmp(argv[1], "--names"))
		return cmd_list_names();
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(list_usage, stdout);
		return 0;
	}
	if (argc > 1 && (!strcmp(argv[1], "--format") || !strncmp(argv[1], "--format=", 9))) {
		bool joined = argv[1][8] == '=';
		const char *f = joined ? argv[1] + 9 : argv[2];

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

static const char probes_usage[] =
	"usage: zctrace probes [--method=METHOD] [--command | --census [--complete]] [-v]\n"
	"Load and attach every probe site's candidates, best first, and print the method chosen for each\n"
	"site and why each better candidate was refused.\n"
	"  --method=METHOD  use no method better than METHOD: fentry, kprobe or tracepoint\n"
	"  --command        what 'zctrace run -- COMMAND' and 'run -p PID' attach (a built-in workload's, else)\n"
	"  --census         what the machine-wide census (zctrace top, zctrace export) attaches\n"
	"  --complete       ... with --complete: the raw syscall tracepoints too\n"
	"  -v               show libbpf's log\n";

static int cmd_probes(int argc, char **argv)
{
	static struct probe_choice choice[NR_PROBES];
	struct census_opts co = { .cap = METHOD_NONE };
	bool census = false, command = false;
	enum method cap = METHOD_NONE;
	const char *missing;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			cli_verbose = true;
		} else if (!strcmp(argv[i], "--census")) {
			census = true;
		} else if (!strcmp(argv[i], "--command")) {
			command = true;
		} else if (!strcmp(argv[i], "--complete")) {
			census = co.complete = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(probes_usage, stdout);
			return 0;
		} else if (!strncmp(argv[i], "--method=", 9)) {
			if (parse_method(argv[i] + 9, &cap))
				return usage_error("unknown method '%s' (fentry, kprobe or tracepoint)", argv[i] + 9);
		} else {
			return usage_error("probes: unknown argument '%s'", argv[i]);
		}
	}
	if ((missing = cli_missing_capability())) {
		fprintf(stderr, "zctrace: %s\n", missing);
		return 1;
	}
	libbpf_set_print(cli_libbpf_print);
	{
		/* what really loads and attaches here, not only what the kernel advertises; without
		 * BTF nothing CO-RE loads, and the candidates' refusals are all there is to show */
		struct tracer_opts to;
		struct zctrace_bpf *obj;
		char why[256];

		if (command && census)
			return usage_error("probes: --command or --census, not both");
		tracer_opts_for(&to, NULL, cap, true, !command);
		co.cap = cap;
		if (census)
			census_tracer_opts(&co, &to);
		if (probes_check_btf(why, sizeof(why))) {
			if (choose_probes(NULL, choice, cap))
				return 1;
		} else {
			if (tracer_start(&obj, choice, &to))
				return 1;
			print_probes(stdout, choice);
			if (census)
				print_census_runs(stdout, obj, choice);
			tracer_stop(obj);
			return 0;
		}
	}
	print_probes(stdout, choice);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zctrace run [OPTIONS] WORKLOAD [ARGS] | -- COMMAND [ARGS] | -p PID -d SECONDS\n"
		"       zctrace list       the built-in workloads and their expected ledgers\n"
		"       zctrace probes     the attach method chosen for each probe site, and why\n"
		"       zctrace sweep WORKLOAD[,WORKLOAD...] [--sizes LIST] [--threads LIST] [--reps N]\n"
		"                          [--duration SECS | --messages N] [-o FILE.csv|FILE.json] [-- ARGS]\n"
		"                          a grid of runs, one CSV or JSON row each\n"
		"       zctrace top [-i SECS] [-n COUNT] [--by process|cgroup|comm] [--json]\n"
		"                          every process's copies on the machine, live\n"
		"       zctrace export [--listen ADDR:PORT] [--max-series N]\n"
		"                          every process's copies as Prometheus metrics, at /metrics\n"
		"       zctrace floor WORKLOAD [ARGS] | -- COMMAND [ARGS]\n"
		"                          the run with empty programs at the tracer's attach points\n"
		"       zctrace run --help, zctrace sweep --help, zctrace top --help, zctrace export --help\n");
}

int main(int argc, char **argv)
{
	check_stdout_at_exit();
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	/* libbpf's warnings (a program the kernel refused, then set aside) only with -v, for every command */
	libbpf_set_print(cli_libbpf_print);
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list"))
		return cmd_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "probes"))
		return cmd_probes(argc - 1, argv + 1);
	if (!strcmp(argv[1], "sweep"))
		return cmd_sweep(argc - 1, argv + 1);
	if (!strcmp(argv[1], "top"))
		return cmd_top(argc - 1, argv + 1);
	if (!strcmp(argv[1], "floor"))
		return cmd_floor(argc - 1, argv + 1);
	if (!strcmp(argv[1], "export"))
		return cmd_export(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	return usage_error("unknown command '%s' (try 'zctrace --help')", argv[1]);
}
