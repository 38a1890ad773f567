/* zctrace: where the bytes of an I/O path are really copied. The CLI: which command runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/errqueue.h>
#include <linux/io_uring.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/libbpf.h>
#include "os/cli.h"
#include "cmd/floor.h"
#include "cmd/listing.h"
#include "cmd/probes.h"
#include "cmd/export.h"
#include "report/output.h"
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

/* The commands, each in a file of its own in cmd/. */
static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
} commands[] = {
	{ "run", cmd_run }, { "list", cmd_list }, { "probes", cmd_probes }, { "sweep", cmd_sweep },
	{ "top", cmd_top }, { "floor", cmd_floor }, { "export", cmd_export },
};

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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	return usage_error("unknown command '%s' (try 'zctrace --help')", argv[1]);
}
