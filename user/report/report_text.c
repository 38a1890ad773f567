/* The ledger as text (report_text.h): the table a person reads after a run. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ledger/effect.h"
#include "report/hist.h"
#include "os/jsonpath.h"
#include "report/report_micro.h"
#include "report/report_perf.h"
#include "report/report_text.h"
#include "report/report_effect.h"
#include "report/report_cost.h"
#include "os/sysnames.h"
#include "os/units.h"
#include "ledger/findings.h"

/* ---- printing ---- */
/* What the kernel did with the payload, in plain words (ledger_findings()). */
static void print_findings(FILE *f, const struct ledger *l, double payload)
{
	struct findings o;

	ledger_findings(l, payload, &o);
	for (int i = 0; i < o.n; i++)
		fprintf(f, "  %s\n", o.line[i]);
}

/* The @n (at most 8) busiest syscalls of @counts, with calls per MiB of payload when @payload is known. */
static void print_top_syscalls(FILE *f, const __u64 *counts, double payload, int n)
{
	int top[8] = { -1, -1, -1, -1, -1, -1, -1, -1 };

	for (int nr = 0; nr < MAX_SYSCALLS; nr++) {
		for (int k = 0; k < 8; k++) {
			if (top[k] < 0 || counts[nr] > counts[top[k]]) {
				memmove(&top[k + 1], &top[k], (7 - k) * sizeof(int));
				top[k] = nr;
				break;
			}
		}
	}
	for (int k = 0; k < n && k < 8 && top[k] >= 0 && counts[top[k]]; k++) {
		fprintf(f, " %s %" PRIu64, syscall_name(top[k]) ? syscall_name(top[k]) : "?",
			(uint64_t)counts[top[k]]);
		if (payload > 0)
			fprintf(f, " (%.1f/MiB)", counts[top[k]] / (payload / (1 << 20)));
	}
	fprintf(f, "\n");
}

static void print_latency(FILE *f, const struct ledger *l, const char *what)
{
	if (l->rep.has_latency)
		fprintf(f, "latency per %s (ns): p50 %" PRIu64 "  p90 %" PRIu64 "  p99 %" PRIu64
			"  max %" PRIu64 "\n", what, (uint64_t)l->rep.p50.v, (uint64_t)l->rep.p90.v,
			(uint64_t)l->rep.p99.v, (uint64_t)l->rep.max.v);
}

/* What the device the sending end's bytes left by changes in its expected ledger (checks.c). */
static const char *device_note(const struct ledger *l)
{
	bool udp_zc = l->def->site[SITE_ZC_PIN] == EXP_SENT && l->def->site[SITE_UDP_RECV_COPY] != EXP_ZERO;

	if (!l->rep.remote_dev_kind || strcmp(l->rep.remote_dev_kind, "device"))
		return "";
	if (udp_zc && (l->rep.remote_dev_sg == 0 || l->rep.remote_dev_csum == 0))
		return "; on this device, which lacks scatter-gather or checksum offload, each datagram copied at "
		       "the send (udp_send_copy), nothing pinned";
	if (l->rep.remote_dev_sg == 1)
		return "; on this device nothing copied on delivery or transmit";
	if (l->rep.remote_dev_sg == 0)
		return "; on this device, which lacks scatter-gather, pinned pages and page references copied on "
		       "transmit (tx_copy), not on delivery";
	return "";
}

static void print_tcp_workload(FILE *f, const struct ledger *l, double payload)
{
	double el = l->rep.elapsed_s;
	char b1[32], b2[32], b3[32];

	fprintf(f, "workload: %" PRIu64 " messages of %s x %" PRIu64 " threads, %s sent, %s received",
		(uint64_t)l->rep.messages.v,
		human_bytes(l->rep.size.v, b1, sizeof(b1)),
		(uint64_t)l->rep.threads.v, human_bytes(l->rep.bytes.v, b2, sizeof(b2)),
		human_bytes(l->rep.bytes_received.v, b3, sizeof(b3)));
	if (el > 0)
		fprintf(f, " in %.3f s = %.2f Gbit/s", el, payload * 8 / el / 1e9);
	fprintf(f, "\n");
	if (l->rep.remote_role)
		fprintf(f, "one end: the %s end %s %s (run %s), by %s (%s%s%s)\n", !strcmp(l->rep.remote_role, "sender")
			? "sending" : "receiving", !strcmp(l->rep.remote_role, "sender") ? "to" : "at",
			l->rep.remote_addr ?: "?", l->rep.remote_run ?: "?", l->rep.remote_dev ?: "?",
			l->rep.remote_dev_kind ?: "?", l->rep.remote_dev_sg == 0 ? ", no scatter-gather" : "",
			l->rep.remote_dev_csum == 0 ? ", no checksum offload" : "");
	print_latency(f, l, "message");
}

static void print_file_workload(FILE *f, const struct ledger *l)
{
	double el = l->rep.elapsed_s, moved = l->rep.bytes.v;
	__u64 size = l->rep.size.v;
	const char *method = l->rep.kind == WL_KIND_FILE_COPY ? (l->rep.method ?: "?") : NULL;
	char b1[32], b2[32], b3[32];

	if (l->rep.kind == WL_KIND_REMOTE_READ) {
		fprintf(f, "workload: a %s file read from a TCP file server (%s), %s blocks in %s order; %s "
			"cache, %s", human_bytes(l->rep.file_size.v, b1, sizeof(b1)),
			(l->rep.path ?: "?"), human_bytes(size, b2, sizeof(b2)),
			(l->rep.pattern ?: "?"), (l->rep.cache ?: "?"),
			(l->rep.fs ?: "?"));
		if (el > 0 && moved > 0)
			fprintf(f, "; %.3f s = %.3f ms per MiB", el, el * 1e3 / (moved / (1 << 20)));
		fprintf(f, "\n");
		print_latency(f, l, "request");
		return;
	}
	if (method)
		fprintf(f, "workload: a %s file duplicated with %s", human_bytes(l->rep.file_size.v,
			b1, sizeof(b1)), method);
	else
		fprintf(f, "workload: a %s file served over TCP to %" PRIu64 " connection(s), %s in all",
			human_bytes(l->rep.file_size.v, b1, sizeof(b1)),
			(uint64_t)l->rep.threads.v, human_bytes(moved, b3, sizeof(b3)));
	if (size)
		fprintf(f, ", %s per call", human_bytes(size, b2, sizeof(b2)));
	else
		fprintf(f, ", as much per call as the kernel moves");
	if (l->rep.direct == 1)
		fprintf(f, "; O_DIRECT, %s", (l->rep.fs ?: "?"));
	else
		fprintf(f, "; %s cache, %s", (l->rep.cache ?: "?"), (l->rep.fs ?: "?"));
	if (el > 0)
		fprintf(f, "; %.3f s = %.0f MiB/s", el, moved / el / (1 << 20));
	fprintf(f, "\n");
	if (!method)
		print_latency(f, l, "chunk");
}

/* Each process's own ledger: with the receiver in its own process, the two sides apart. */
static void print_sides(FILE *f, const struct ledger *l, double payload)
{
	if (!ledger_two_sides(l) && l->k.nproc_sites < 2)
		return;
	fprintf(f, "\nby process (%s)\n", l->phase_gated ? "measured phase" : "whole run");
	fprintf(f, "  %-16s %8s  %-16s %-15s %12s %16s %10s\n", "PROCESS", "PID", "NETNS", "SITE", "COPIES",
		"BYTES", "PER BYTE");
	for (int i = 0; i < l->k.nproc_sites; i++) {
		const struct proc_sites *p = &l->k.procs[i];
		bool first = true;
		char ns[48];

		for (int s = 0; s < NR_SITES; s++) {
			if (!p->bytes[s] && !p->count[s])
				continue;
			if (first)
				fprintf(f, "  %-16s %8u  %-16s ", proc_label(l, p), p->tgid, proc_netns(l, p, ns, sizeof(ns)));
			else
				fprintf(f, "  %-16s %8s  %-16s ", "", "", "");
			fprintf(f, "%-15s %12" PRIu64 " %16" PRIu64, site_name(s), (uint64_t)p->count[s],
				(uint64_t)p->bytes[s]);
			if (payload > 0)
				fprintf(f, " %10.3f", p->bytes[s] / payload);
			/* counted for the process that pinned the pages, wherever the copy ran */
			if (s == SITE_DEFERRED_COPY && ledger_has(l, PROBE_ZC_PATH))
				fprintf(f, "  (its pinned pages, copied where they were delivered: below)");
			fprintf(f, "\n");
			first = false;
		}
	}
}

/* The zerocopy skbs' path: which device, in which namespace, still holding the pinned pages. */
static void print_zc_path(FILE *f, const struct ledger *l)
{
	char ns[48], b1[32];
	__u64 crossed = 0, dont_orphan = 0, skbs = 0;

	if (!l->k.nzp)
		return;
	fprintf(f, "\nzerocopy skbs on their way (%s; still holding the sender's pinned pages)\n",
		l->phase_gated ? "measured phase" : "whole run");
	fprintf(f, "  %-8s %-16s %-22s %10s %16s %12s\n", "STAGE", "DEVICE", "NETNS", "SKBS", "BYTES",
		"DONT_ORPHAN");
	for (int i = 0; i < l->k.nzp; i++) {
		const struct zc_path_key *k = &l->k.zp_key[i];
		const struct zc_path_stats *v = &l->k.zp[i];
		const char *role = netns_role(l->net, k->netns);

		fprintf(f, "  %-8s %-16s %-22s %10" PRIu64 " %16" PRIu64 " %12" PRIu64 "%s\n",
			k->stage == ZC_STAGE_XMIT ? "xmit" : "receive", v->dev,
			netns_label(l, k->netns, ns, sizeof(ns)), (uint64_t)v->skbs, (uint64_t)v->bytes,
			(uint64_t)v->dont_orphan,
			k->stage == ZC_STAGE_RECEIVE ? "  -> copied here on delivery if the notices say COPIED" : "");
		if (k->stage == ZC_STAGE_RECEIVE && role && !strcmp(role, "receiver")) {
			crossed += v->bytes;
			skbs += v->skbs;
			dont_orphan += v->dont_orphan;
		}
	}
	{
		__u64 rx = 0;
		bool have = l->rep.bytes.found;
		double sent = l->rep.bytes.v;

		for (int i = 0; i < l->k.nzp; i++)
			if (l->k.zp_key[i].stage == ZC_STAGE_RECEIVE)
				rx += l->k.zp[i].bytes;
		if (have && rx > sent)
			fprintf(f, "  %s more than the payload reached delivery: TCP sent some segments again, and "
				"every delivery of a zerocopy skb copies it; the notices count each send call once.\n",
				human_bytes(rx - sent, b1, sizeof(b1)));
	}
	if (crossed)
		fprintf(f, "  %s arrived in the receiver's namespace still in the sender's pinned pages (%" PRIu64
			" of %" PRIu64 " skbs marked SKBFL_DONT_ORPHAN): crossing the veth pair did not copy them;"
			" local delivery there (skb_orphan_frags_rx) does.\n",
			human_bytes(crossed, b1, sizeof(b1)), (uint64_t)dont_orphan, (uint64_t)skbs);
}

/* The workload's own figures, as it reported them. */
static void print_workload(FILE *f, const struct ledger *l, const struct micro *m, bool histograms,
			   double payload)
{
	if (!l->workload)
		return;
	if (m)
		micro_print(f, m, l, histograms);
	else if (l->rep.kind == WL_KIND_STREAM)
		print_tcp_workload(f, l, payload);
	else if (l->rep.kind == WL_KIND_FILE_COPY || l->rep.kind == WL_KIND_FILE_SERVE ||
		 l->rep.kind == WL_KIND_REMOTE_READ)
		print_file_workload(f, l);
	else
		fprintf(f, "workload: a report of kind '%s', not one zctrace knows\n", wl_kind_name(l->rep.kind));
}

/* Whether a failed check names site @s: its row stays in the brief ledger, 0 or not. */
static bool site_failed(const struct ledger *l, int s)
{
	size_t n = strlen(site_name(s));

	for (int i = 0; i < l->nchecks; i++)
		if (!l->checks[i].ok && !strncmp(l->checks[i].name, site_name(s), n) && l->checks[i].name[n] == ' ')
			return true;
	return false;
}

/* Whether site @s was left out on purpose (the run wants nothing of it), not refused. */
static bool site_unwanted(const struct ledger *l, int s)
{
	return l->choice && l->choice[s].skip;
}

/* The brief ledger's rows: the sites that counted something, or that a failed check names. */
static bool site_shown(const struct ledger *l, int s, bool full)
{
	return full || l->k.site[s].count || l->k.site[s].bytes || site_failed(l, s);
}

/* The line for the sites the brief ledger leaves out: all 0 (and not supported, said apart). */
static void print_sites_left_out(FILE *f, const struct ledger *l)
{
	int zero = 0, unsupported = 0;

	for (int s = 0; s < NR_SITES; s++) {
		if (site_shown(l, s, false) || (l->method[s] == METHOD_NONE && site_unwanted(l, s)))
			continue;
		if (l->method[s] == METHOD_NONE)
			unsupported++;
		else
			zero++;
	}
	if (zero == NR_SITES)
		fprintf(f, "  no site moved a byte (%d sites, all 0)", zero);
	else if (zero)
		fprintf(f, "  %d other site%s: 0 bytes", zero, zero == 1 ? "" : "s");
	if (zero && l->def && ledger_ok(l))
		fprintf(f, ", as expected");
	if (l->bnd.measured && !l->bnd.unattributed)
		fprintf(f, "%snothing unattributed", zero ? "; " : "  ");
	if (zero || (l->bnd.measured && !l->bnd.unattributed))
		fprintf(f, "\n");
	if (unsupported)
		fprintf(f, "  %d site%s not supported here (below)\n", unsupported, unsupported == 1 ? "" : "s");
}

/* The copy ledger itself: each site's copies, bytes, copies per payload byte and mean size. */
static void print_sites(FILE *f, const struct ledger *l, bool have_payload, double payload, bool full)
{
	double cpu_bytes = 0;
	bool unsupported = false;
	char b1[32];

	int shown = 0;

	for (int s = 0; s < NR_SITES; s++)
		shown += site_shown(l, s, full);
	fprintf(f, "\ncopy ledger (%s; %d process%s traced)\n",
		l->phase_gated ? "measured phase only, between the workload's USDT markers" : "whole run",
		l->k.nprocs, l->k.nprocs == 1 ? "" : "es");
	if (shown)
		fprintf(f, "  %-16s %-7s %12s %16s %10s %11s\n", "SITE", "METHOD", "COPIES", "BYTES", "PER BYTE",
			"MEAN SIZE");
	for (int s = 0; s < NR_SITES; s++) {
		const struct site_stats *st = &l->k.site[s];
		char per[16];

		if (is_cpu_copy(s))
			cpu_bytes += st->bytes;
		if (l->method[s] == METHOD_NONE)
			unsupported = true;
		if (!site_shown(l, s, full))
			continue;
		if (l->method[s] == METHOD_NONE) {
			fprintf(f, "  %-16s %-7s %12s %16s %10s %11s\n", site_name(s), "-", "not supported",
				"not supported", "-", "-");
			continue;
		}
		if (have_payload && payload > 0)
			snprintf(per, sizeof(per), "%.3f", st->bytes / payload);
		else
			snprintf(per, sizeof(per), "-");
		fprintf(f, "  %-16s %-7s %12" PRIu64 " %16" PRIu64 " %10s %11s\n", site_name(s),
			method_name(l->method[s]), (uint64_t)st->count, (uint64_t)st->bytes, per,
			st->count ? human_bytes((double)st->bytes / st->count, b1, sizeof(b1)) : "-");
	}
	if (!full)
		print_sites_left_out(f, l);	/* it says "nothing unattributed" where so */
	if (l->bnd.measured && (full || l->bnd.unattributed)) {
		snprintf(b1, sizeof(b1), "%.3f", have_payload && payload > 0 ? l->bnd.unattributed / payload : 0);
		fprintf(f, "  %-16s %-7s %12s %16" PRIu64 " %10s %11s\n", "unattributed", "-", "-",
			(uint64_t)l->bnd.unattributed, have_payload && payload > 0 ? b1 : "-", "-");
	} else if (!l->bnd.measured) {
		fprintf(f, "  %-16s %-7s %12s %16s %10s %11s\n", "unattributed", "-", "-", "not supported", "-", "-");
	}
	for (int s = 0; unsupported && l->choice && s < NR_SITES; s++) {
		const char *why = probe_refusal(l->choice, s);

		if (why && (full || !site_unwanted(l, s)))
			fprintf(f, "  %s not supported: %s\n", site_name(s), why);
	}
	if (have_payload && payload > 0)
		fprintf(f, "  CPU copies per payload byte: %.3f (all sites but pins and page references, which "
			"are not copies)\n", cpu_bytes / payload);
}

/* What of the boundary account no site explains, by group. */
static void print_unattributed(FILE *f, const struct ledger *l)
{
	for (int g = 0; g < nr_boundary_groups; g++)
		if (l->bnd.g[g].unattributed)
			fprintf(f, "  unattributed %s: %" PRIu64 " B of %" PRIu64 " B the calls moved (its sites: %" PRIu64
				" B)%s\n", boundary_groups[g].name, (uint64_t)l->bnd.g[g].unattributed,
				(uint64_t)l->bnd.g[g].account, (uint64_t)l->bnd.g[g].sites,
				l->bnd.g[g].site_missing ? "; a site of it is not supported here" : "");
}

/* The boundary account, by call and file type, and what of it no site explains (not @full: that alone). */
static void print_boundary(FILE *f, const struct ledger *l, bool full)
{
	char call[40];

	if (!l->bnd.measured) {
		fprintf(f, "%sbytes across the user/kernel boundary: not supported (%s)\n", full ? "\n" : "  ",
			refusal_of(l, PROBE_BOUNDARY));
		return;
	}
	if (!l->k.nacct)
		return;
	if (!full) {
		print_unattributed(f, l);
		return;
	}
	fprintf(f, "\nbytes across the user/kernel boundary (each I/O call's return, apart from the sites)\n");
	fprintf(f, "  %-18s %-22s %10s %16s  %s\n", "CALL", "FILE", "CALLS", "BYTES", "EXPLAINED BY");
	for (int i = 0; i < l->k.nacct; i++) {
		const struct account_key *key = &l->k.acct_key[i];
		int g = boundary_group_of(key);
		const struct boundary_fig *fig = &l->bnd.g[g];

		fprintf(f, "  %-18s %-22s %10" PRIu64 " %16" PRIu64 "  %s%s\n",
			account_call_name(key->call, call, sizeof(call)), fd_type_name(key->fd_type),
			(uint64_t)l->k.acct[i].calls, (uint64_t)l->k.acct[i].bytes,
			!boundary_groups[g].nsites ? "no site: unattributed" :
			fig->unattributed ? "sites short: part unattributed" : "sites",
			l->k.acct[i].unsized ? " (some calls unsized: MSG_TRUNC)" : "");
	}
	print_unattributed(f, l);
}

static void print_size_hists(FILE *f, const struct ledger *l)
{
	for (int s = 0; s < NR_SITES; s++) {
		if (!l->k.site[s].count)
			continue;
		fprintf(f, "\n%s: copy sizes\n", site_name(s));
		print_log2_hist(f, l->k.site[s].hist, MAX_SLOTS, "bytes");
	}
}

/* The syscalls line: why there is none, or the measured phase's (else the whole run's) busiest. */
static void print_syscalls_brief(FILE *f, const struct ledger *l, bool have_payload, double payload)
{
	const __u64 *counts = l->phase_gated ? l->k.phase_syscalls : l->k.syscalls;
	__u64 total = 0;

	if (!ledger_has(l, PROBE_SYSCALLS)) {
		const char *why = refusal_of(l, PROBE_SYSCALLS);

		fprintf(f, strncmp(why, "not measured", strlen("not measured")) ? "syscalls: not supported (%s)\n" :
			"syscalls: %s\n", why);
		return;
	}
	for (int nr = 0; nr < MAX_SYSCALLS; nr++)
		total += counts[nr];
	fprintf(f, "syscalls (%s): %" PRIu64 " total", l->phase_gated ? "measured phase" : "whole run", (uint64_t)total);
	if (have_payload && payload > 0)
		fprintf(f, ", %.1f per MiB of payload", total / (payload / (1 << 20)));
	fprintf(f, ";");
	print_top_syscalls(f, counts, 0, 4);
}

/* Context switches, page faults and the page cache in one line. */
static void print_kernel_brief(FILE *f, const struct ledger *l, bool have_payload, double payload)
{
	fprintf(f, "\nkernel (whole run): ");
	if (ledger_has(l, PROBE_SCHED))
		fprintf(f, "%" PRIu64 " context switches (%" PRIu64 " voluntary), off-CPU %.1f ms",
			(uint64_t)(l->k.sched.voluntary + l->k.sched.involuntary), (uint64_t)l->k.sched.voluntary,
			l->k.sched.offcpu_ns / 1e6);
	else
		fprintf(f, "context switches not supported (%s)", refusal_of(l, PROBE_SCHED));
	if (ledger_has(l, PROBE_PAGE_FAULTS))
		fprintf(f, "; page faults %" PRIu64 " user, %" PRIu64 " kernel", (uint64_t)l->k.misc.page_faults_user,
			(uint64_t)l->k.misc.page_faults_kernel);
	else
		fprintf(f, "; page faults not supported (%s)", refusal_of(l, PROBE_PAGE_FAULTS));
	if (ledger_has(l, PROBE_PAGE_CACHE) && l->k.npc) {
		__u64 all = 0;

		for (int i = 0; i < l->k.npc; i++)
			all += l->k.pc_pages[i];
		fprintf(f, "; %" PRIu64 " pages into the page cache", (uint64_t)all);
	}
	fprintf(f, "\n");
	print_syscalls_brief(f, l, have_payload, payload);
}

/* What is not a copy: context switches, page faults, page-cache insertions, syscalls. */
static void print_kernel(FILE *f, const struct ledger *l, bool histograms, bool have_payload, double payload)
{
	fprintf(f, "\nscheduler (whole run): ");
	if (ledger_has(l, PROBE_SCHED)) {
		fprintf(f, "%" PRIu64 " context switches (%" PRIu64 " voluntary, %" PRIu64
			" involuntary), off-CPU %.3f ms\n",
			(uint64_t)(l->k.sched.voluntary + l->k.sched.involuntary), (uint64_t)l->k.sched.voluntary,
			(uint64_t)l->k.sched.involuntary, l->k.sched.offcpu_ns / 1e6);
		if (histograms && l->k.sched.voluntary + l->k.sched.involuntary) {
			fprintf(f, "off-CPU time per switch\n");
			print_log2_hist(f, l->k.sched.offcpu_hist, MAX_SLOTS, "usecs");
		}
	} else {
		fprintf(f, "not supported (%s)\n", refusal_of(l, PROBE_SCHED));
	}
	if (ledger_has(l, PROBE_PAGE_FAULTS))
		fprintf(f, "page faults (whole run): %" PRIu64 " user, %" PRIu64 " kernel\n",
			(uint64_t)l->k.misc.page_faults_user, (uint64_t)l->k.misc.page_faults_kernel);
	else
		fprintf(f, "page faults: not supported (%s)\n", refusal_of(l, PROBE_PAGE_FAULTS));
	if (ledger_has(l, PROBE_PAGE_CACHE) && l->k.npc) {
		__u64 src = 0, dst = 0, all = 0;
		bool has_src = file_pages_added(l, &l->rep.source, &src);
		bool has_dst = file_pages_added(l, &l->rep.dest, &dst);

		for (int i = 0; i < l->k.npc; i++)
			all += l->k.pc_pages[i];
		fprintf(f, "page cache (%s): %" PRIu64 " pages brought in", l->phase_gated ? "measured phase" : "whole run",
			(uint64_t)all);
		if (has_src)
			fprintf(f, ", %" PRIu64 " of them the source file's (%" PRIu64 " pages)", (uint64_t)src,
				(uint64_t)l->rep.source.pages.v);
		if (has_dst)
			fprintf(f, ", %" PRIu64 " the new file's", (uint64_t)dst);
		fprintf(f, "\n");
	}
	if (ledger_has(l, PROBE_SYSCALLS) && l->phase_gated) {
		__u64 total = 0;

		for (int nr = 0; nr < MAX_SYSCALLS; nr++)
			total += l->k.phase_syscalls[nr];
		fprintf(f, "syscalls (measured phase): %" PRIu64 " total", (uint64_t)total);
		if (have_payload && payload > 0)
			fprintf(f, ", %.1f per MiB of payload", total / (payload / (1 << 20)));
		fprintf(f, ";");
		print_top_syscalls(f, l->k.phase_syscalls, have_payload ? payload : 0, 8);
	}
	if (ledger_has(l, PROBE_SYSCALLS)) {
		__u64 total = 0;

		for (int nr = 0; nr < MAX_SYSCALLS; nr++)
			total += l->k.syscalls[nr];
		fprintf(f, "syscalls (whole run): %" PRIu64 " total;", (uint64_t)total);
		print_top_syscalls(f, l->k.syscalls, 0, 8);
	} else {
		const char *why = refusal_of(l, PROBE_SYSCALLS);

		if (!strncmp(why, "not measured", strlen("not measured")))
			fprintf(f, "syscalls: %s\n", why);
		else
			fprintf(f, "syscalls: not supported (%s)\n", why);
	}
}

/* Every check (not @full: the failed ones, and how many held). */
static void print_checks(FILE *f, const struct ledger *l, bool full)
{
	int held = 0;

	for (int i = 0; i < l->nchecks; i++)
		held += l->checks[i].ok;
	if (full)
		fprintf(f, "\nchecks\n");
	else if (l->nchecks)
		fprintf(f, "\nchecks: %d of %d held%s\n", held, l->nchecks, held < l->nchecks ? "; failed:" : "");
	if (!l->nchecks)
		fprintf(f, "%s(none for this target)\n", full ? "  " : "\nchecks: ");
	for (int i = 0; i < l->nchecks; i++)
		if (full || !l->checks[i].ok)
			fprintf(f, "  [%s] %s: %s\n", l->checks[i].ok ? " ok " : "FAIL", l->checks[i].name,
				l->checks[i].detail);
	if (l->def && l->rep.remote_role && !strcmp(l->rep.remote_role, "receiver"))
		fprintf(f, "expected (the receiving end alone): its receive site (%s) = bytes received; the send "
			"sites are the other end's\n", l->def->site[SITE_UDP_RECV_COPY] == EXP_RECEIVED ? "udp_recv_copy"
			: "recv_copy");
	else if (l->def && l->rep.remote_role)
		fprintf(f, "expected (the sending end alone, the receive site being the other end's): %s%s\n",
			l->def->expected, device_note(l));
	else if (l->def)
		fprintf(f, "expected: %s\n", l->def->expected);
	if (l->nchecks)
		fprintf(f, "verdict: %s\n", ledger_ok(l) ? "the ledger matches the expectation"
							 : "CHECK FAILED (see above)");
}

void ledger_print(FILE *f, const struct ledger *l, const struct micro *m, bool histograms, bool full)
{
	bool have_payload = false;
	double payload = ledger_payload_of(l, &have_payload);

	fprintf(f, "\n=== zctrace: %s ===\n", l->target);
	print_workload(f, l, m, histograms, payload);
	if (l->effect && full)
		effect_print(f, l->effect, true);
	print_sites(f, l, have_payload, payload, full);
	print_boundary(f, l, full);
	print_findings(f, l, have_payload ? payload : 0);
	print_sides(f, l, have_payload ? payload : 0);
	print_zc_path(f, l);
	cost_print(f, l, full);
	copy_time_print(f, l);
	if (histograms)
		print_size_hists(f, l);
	if (full) {
		print_kernel(f, l, histograms, have_payload, payload);
		perf_print(f, l, have_payload ? payload : 0, true);
	} else {
		print_kernel_brief(f, l, have_payload, payload);
		perf_print(f, l, have_payload ? payload : 0, false);
		if (l->effect)
			effect_print(f, l->effect, false);
	}
	print_checks(f, l, full);
}
