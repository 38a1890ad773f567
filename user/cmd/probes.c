/* zctrace probes: the method each probe site takes on this kernel, and why each better candidate was refused. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "cmd/probes.h"
#include "os/cli.h"
#include "report/report_probes.h"
#include "trace/census.h"
#include "trace/probes.h"
#include "trace/tracer.h"
#include "zctrace.skel.h"

#define usage_error(...) cli_usage_error("zctrace", __VA_ARGS__)

static const char probes_usage[] =
	"usage: zctrace probes [--method=METHOD] [--command | --census [--complete]] [-v]\n"
	"Load and attach every probe site's candidates, best first, and print the method chosen for each\n"
	"site and why each better candidate was refused.\n"
	"  --method=METHOD  use no method better than METHOD: fentry, kprobe or tracepoint\n"
	"  --command        what 'zctrace run -- COMMAND' and 'run -p PID' attach (a built-in workload's, else)\n"
	"  --census         what the machine-wide census (zctrace top, zctrace export) attaches\n"
	"  --complete       ... with --complete: the raw syscall tracepoints too\n"
	"  -v               show libbpf's log\n";

int cmd_probes(int argc, char **argv)
{
	static struct probe_choice choice[NR_PROBES];
	struct census_opts co = { .cap = METHOD_NONE };
	bool census = false, command = false;
	enum method cap = METHOD_NONE;
	const char *missing;

	for (int i = 1; i < argc; i++) {
		const char *m = cli_opt_value(argv[i], "--method");

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
		} else if (m) {
			if (parse_method(m, &cap))
				return usage_error("unknown method '%s' (fentry, kprobe or tracepoint)", m);
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
			/* the table is out: a child of this process waits out the detach */
			tracer_stop_background(obj, NULL, 0);
			return 0;
		}
	}
	print_probes(stdout, choice);
	return 0;
}
