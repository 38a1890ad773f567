/* The ledger as JSON (report_json.h): every figure, null where it was not measured. */
#include <stdio.h>
#include <stdlib.h>
#include "ledger/findings.h"
#include "ledger/effect.h"
#include "ledger/checks.h"
#include "report/hist.h"
#include "os/jsonpath.h"
#include "os/utf8.h"
#include "report/report_micro.h"
#include "report/report_json.h"
#include "report/report_cost.h"
#include "report/report_perf.h"
#include "os/sysnames.h"
#include "contract/opts.h"

static json_object *hist_json(const __u64 *vals, int nslots)
{
	json_object *a = json_object_new_array();
	int last = -1;

	for (int i = 0; i < nslots; i++)
		if (vals[i])
			last = i;
	for (int i = 0; i <= last; i++) {
		json_object *b = json_object_new_object();

		json_object_object_add(b, "lo", json_object_new_uint64(i ? 1ULL << i : 0));
		json_object_object_add(b, "hi", json_object_new_uint64(log2_slot_hi(i)));
		json_object_object_add(b, "count", json_object_new_uint64(vals[i]));
		json_object_array_add(a, b);
	}
	return a;
}

/* The path the bytes took: loopback, or veth between the namespaces zctrace made. */
static json_object *network_json(const struct ledger *l)
{
	json_object *o, *link;
	const char *path = l->rep.path;

	if (!path)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "path", json_object_new_string(path));
	json_object_object_add(o, "peer", json_object_new_string(l->rep.peer ?: "?"));
	if (ledger_on_veth(l)) {
		json_object *ns = json_object_new_object(), *dev = json_object_new_object();

		json_object_object_add(ns, "sender", json_object_new_string(l->net->sender));
		json_object_object_add(ns, "receiver", json_object_new_string(l->net->receiver));
		json_object_object_add(ns, "sender_inode", json_object_new_uint64(l->net->sender_ino));
		json_object_object_add(ns, "receiver_inode", json_object_new_uint64(l->net->receiver_ino));
		json_object_object_add(o, "namespaces", ns);
		json_object_object_add(dev, "sender", json_object_new_string(l->net->sender_dev));
		json_object_object_add(dev, "receiver", json_object_new_string(l->net->receiver_dev));
		json_object_object_add(o, "veth", dev);
		json_object_object_add(o, "sender_addr", json_object_new_string(WL_NETNS_SENDER_ADDR));
		json_object_object_add(o, "receiver_addr", json_object_new_string(WL_NETNS_RECEIVER_ADDR));
	} else {
		json_object_object_add(o, "namespaces", NULL);
		json_object_object_add(o, "veth", NULL);
	}
	link = json_object_new_object();
	json_object_object_add(link, "rate", ledger_on_veth(l) && l->net->rate ? json_object_new_string(l->net->rate) : NULL);
	json_object_object_add(link, "delay", ledger_on_veth(l) && l->net->delay ? json_object_new_string(l->net->delay) : NULL);
	json_object_object_add(o, "link", link);
	return o;
}

static json_object *by_process_json(const struct ledger *l)
{
	json_object *a = json_object_new_array();

	for (int i = 0; i < l->k.nproc_sites; i++) {
		const struct proc_sites *p = &l->k.procs[i];
		const char *role = proc_role(l, p->tgid);
		json_object *o = json_object_new_object(), *sites = json_object_new_object();
		char ns[48];

		json_object_object_add(o, "pid", json_object_new_int(p->tgid));
		json_object_object_add(o, "comm", p->comm[0] ? json_utf8_string(p->comm) : NULL);
		json_object_object_add(o, "role", json_object_new_string(role));
		json_object_object_add(o, "netns", json_object_new_string(proc_netns(l, p, ns, sizeof(ns))));
		for (int s = 0; s < NR_SITES; s++) {
			json_object *st;

			if (l->method[s] == METHOD_NONE)
				continue;
			st = json_object_new_object();
			json_object_object_add(st, "count", json_object_new_uint64(p->count[s]));
			json_object_object_add(st, "bytes", json_object_new_uint64(p->bytes[s]));
			json_object_object_add(sites, site_name(s), st);
		}
		json_object_object_add(o, "sites", sites);
		json_object_array_add(a, o);
	}
	return a;
}

static json_object *zc_path_json(const struct ledger *l)
{
	json_object *a;
	char ns[48];

	if (!ledger_has(l, PROBE_ZC_PATH))
		return NULL;
	a = json_object_new_array();
	for (int i = 0; i < l->k.nzp; i++) {
		const struct zc_path_key *k = &l->k.zp_key[i];
		const struct zc_path_stats *v = &l->k.zp[i];
		const char *role = netns_role(l->net, k->netns);
		json_object *o = json_object_new_object();

		json_object_object_add(o, "stage", json_object_new_string(k->stage == ZC_STAGE_XMIT ? "xmit" : "receive"));
		json_object_object_add(o, "sender_pid", json_object_new_int(k->tgid));
		json_object_object_add(o, "dev", json_object_new_string(v->dev));
		json_object_object_add(o, "ifindex", json_object_new_int(k->ifindex));
		json_object_object_add(o, "netns", json_object_new_string(netns_label(l, k->netns, ns, sizeof(ns))));
		json_object_object_add(o, "netns_role", role ? json_object_new_string(role) : NULL);
		json_object_object_add(o, "skbs", json_object_new_uint64(v->skbs));
		json_object_object_add(o, "bytes", json_object_new_uint64(v->bytes));
		json_object_object_add(o, "dont_orphan", json_object_new_uint64(v->dont_orphan));
		json_object_array_add(a, o);
	}
	return a;
}

#define add json_object_object_add
#define u64 json_object_new_uint64

static json_object *sites_json(const struct ledger *l, bool have_payload, double payload)
{
	json_object *sites = json_object_new_object();

	for (int s = 0; s < NR_SITES; s++) {
		json_object *o;

		if (l->method[s] == METHOD_NONE) {
			add(sites, site_name(s), NULL);
			continue;
		}
		o = json_object_new_object();
		add(o, "count", u64(l->k.site[s].count));
		add(o, "bytes", u64(l->k.site[s].bytes));
		add(o, "per_payload_byte", have_payload && payload > 0
		    ? json_object_new_double(l->k.site[s].bytes / payload) : NULL);
		add(o, "cpu_copy", json_object_new_boolean(is_cpu_copy(s)));
		cost_site_json(o, l, s);
		add(o, "hist", hist_json(l->k.site[s].hist, MAX_SLOTS));
		add(sites, site_name(s), o);
	}
	return sites;
}

/* The boundary account, row by row, and each group against its sites; null if not measured. */
static json_object *boundary_json(const struct ledger *l)
{
	json_object *o, *rows = json_object_new_array(), *groups = json_object_new_array();
	char call[40];

	if (!l->bnd.measured) {
		json_object_put(rows);
		json_object_put(groups);
		return NULL;
	}
	for (int i = 0; i < l->k.nacct; i++) {
		json_object *r = json_object_new_object();

		add(r, "call", json_object_new_string(account_call_name(l->k.acct_key[i].call, call, sizeof(call))));
		add(r, "file", json_object_new_string(fd_type_name(l->k.acct_key[i].fd_type)));
		add(r, "group", json_object_new_string(boundary_groups[boundary_group_of(&l->k.acct_key[i])].name));
		add(r, "calls", u64(l->k.acct[i].calls));
		add(r, "bytes", u64(l->k.acct[i].bytes));
		add(r, "unsized_calls", u64(l->k.acct[i].unsized));
		json_object_array_add(rows, r);
	}
	for (int g = 0; g < nr_boundary_groups; g++) {
		const struct boundary_fig *fig = &l->bnd.g[g];
		json_object *sites = json_object_new_array(), *r;

		if (!fig->account && !fig->sites)
			continue;
		for (int s = 0; s < boundary_groups[g].nsites; s++)
			json_object_array_add(sites, json_object_new_string(site_name(boundary_groups[g].sites[s])));
		r = json_object_new_object();
		add(r, "group", json_object_new_string(boundary_groups[g].name));
		add(r, "sites", sites);
		add(r, "account_bytes", u64(fig->account));
		add(r, "site_bytes", u64(fig->sites));
		add(r, "unattributed", u64(fig->unattributed));
		add(r, "sites_beyond_calls", u64(fig->over));
		add(r, "site_missing", json_object_new_boolean(fig->site_missing));
		json_object_array_add(groups, r);
	}
	o = json_object_new_object();
	add(o, "calls", rows);
	add(o, "groups", groups);
	add(o, "unattributed", u64(l->bnd.unattributed));
	add(o, "unsized_calls", u64(l->bnd.unsized));
	return o;
}

static json_object *sched_json(const struct ledger *l)
{
	const struct sched_stats *sc = &l->k.sched;
	json_object *o;

	if (!ledger_has(l, PROBE_SCHED))
		return NULL;
	o = json_object_new_object();
	add(o, "switches", u64(sc->voluntary + sc->involuntary));
	add(o, "voluntary", u64(sc->voluntary));
	add(o, "involuntary", u64(sc->involuntary));
	add(o, "offcpu_ns", u64(sc->offcpu_ns));
	add(o, "offcpu_us_hist", hist_json(sc->offcpu_hist, MAX_SLOTS));
	return o;
}

/* Syscalls by name, whole run and measured phase; null where they were not traced. */
static void add_syscalls(json_object *root, const struct ledger *l, bool have_payload, double payload)
{
	json_object *sys = NULL, *ph = NULL;
	__u64 total = 0, phase_total = 0;

	if (ledger_has(l, PROBE_SYSCALLS)) {
		sys = json_object_new_object();
		for (int nr = 0; nr < MAX_SYSCALLS; nr++) {
			char unk[24];
			const char *name = syscall_name(nr);

			if (!l->k.syscalls[nr])
				continue;
			if (!name) {
				snprintf(unk, sizeof(unk), "syscall_%d", nr);
				name = unk;
			}
			total += l->k.syscalls[nr];
			add(sys, name, u64(l->k.syscalls[nr]));
		}
		add(root, "syscalls_total", u64(total));
	}
	add(root, "syscalls", sys);
	if (ledger_has(l, PROBE_SYSCALLS) && l->phase_gated) {
		ph = json_object_new_object();
		for (int nr = 0; nr < MAX_SYSCALLS; nr++) {
			if (!l->k.phase_syscalls[nr] || !syscall_name(nr))
				continue;
			phase_total += l->k.phase_syscalls[nr];
			add(ph, syscall_name(nr), u64(l->k.phase_syscalls[nr]));
		}
	}
	add(root, "phase_syscalls", ph);
	if (ph)
		add(root, "phase_syscalls_per_mib", have_payload && payload > 0
		    ? json_object_new_double(phase_total / (payload / (1 << 20))) : NULL);
}

static json_object *page_cache_json(const struct ledger *l)
{
	json_object *pc;
	__u64 all = 0, pages;

	if (!ledger_has(l, PROBE_PAGE_CACHE))
		return NULL;
	pc = json_object_new_object();
	for (int i = 0; i < l->k.npc; i++)
		all += l->k.pc_pages[i];
	add(pc, "pages_added", u64(all));
	add(pc, "source_pages_added", file_pages_added(l, &l->rep.source, &pages) ? u64(pages) : NULL);
	add(pc, "dest_pages_added", file_pages_added(l, &l->rep.dest, &pages) ? u64(pages) : NULL);
	return pc;
}

static json_object *page_faults_json(const struct ledger *l)
{
	json_object *pf;

	if (!ledger_has(l, PROBE_PAGE_FAULTS))
		return NULL;
	pf = json_object_new_object();
	add(pf, "user", u64(l->k.misc.page_faults_user));
	add(pf, "kernel", u64(l->k.misc.page_faults_kernel));
	return pf;
}

static json_object *notices_json(const struct ledger *l)
{
	const struct misc_stats *m = &l->k.misc;
	json_object *zc;

	if (!ledger_has(l, PROBE_ZC_NOTICES))
		return NULL;
	zc = json_object_new_object();
	add(zc, "notices", u64(m->zc_notices));
	add(zc, "notices_copied", u64(m->zc_notices_copied));
	add(zc, "calls_completed", u64(m->zc_calls_completed));
	add(zc, "calls_unmatched", u64(m->zc_calls_unmatched));
	add(zc, "bytes_copied_notice", u64(m->zc_bytes_copied_notice));
	add(zc, "notices_copied_linked", u64(m->zc_notices_copied_linked));
	/* pins the ledger could not take off their send's udp_send_copy (the check says so too) */
	add(zc, "udp_pins_late_bytes", u64(m->udp_pins_late));
	return zc;
}

static json_object *perf_json(const struct ledger *l)
{
	json_object *perf = json_object_new_object();

	for (int i = 0; l->perf && i < NR_PERF_COUNTERS; i++) {
		const struct perf_counter *c = &l->perf->c[i];

		add(perf, c->name, c->counted ? json_object_new_double(c->value) : NULL);
	}
	return perf;
}

/* Each probe site's method; with @refused, why each that attached nothing was refused instead. */
static json_object *probes_json(const struct ledger *l, bool refused)
{
	json_object *o = json_object_new_object();

	for (int s = 0; s < NR_PROBES; s++) {
		int c = l->choice[s].chosen;
		/* the last candidate's refusal: the most likely to have worked */
		const char *why = probe_refusal(l->choice, s);

		if (!refused)
			add(o, probe_name(s), json_object_new_string(c >= 0 ? method_name(probe_sites[s].cands[c].method)
									   : "none"));
		else if (why)
			add(o, probe_name(s), json_object_new_string(why));
	}
	/* how the I/O syscalls were followed: their own functions, or the raw syscall tracepoints */
	if (!refused)
		add(o, "io_syscalls", json_object_new_string(l->choice[PROBE_SYSCALLS].io == IO_HOOKS_FENTRY ?
							    "fentry" : "tracepoint"));
	else if (l->choice[PROBE_SYSCALLS].io_why[0])
		add(o, "io_syscalls", json_object_new_string(l->choice[PROBE_SYSCALLS].io_why));
	return o;
}

static json_object *dropped_json(const struct ledger *l)
{
	json_object *o = json_object_new_object();

	for (int i = 0; i < nr_dropped_counters; i++)
		add(o, dropped_counters[i].map, u64(dropped_of(l, i)));
	return o;
}

/* {"total": runs, "by_program": {name: runs}, "uncounted": why} (kfigures_read_skips()) */
static json_object *skips_json(const struct ledger *l)
{
	json_object *o = json_object_new_object(), *by = json_object_new_object();

	add(o, "total", u64(l->k.skipped));
	for (int i = 0; i < l->k.nskips; i++)
		add(by, l->k.skips[i].name, u64(l->k.skips[i].runs));
	add(o, "by_program", by);
	add(o, "uncounted", l->k.skips_uncounted[0] ? json_object_new_string(l->k.skips_uncounted) : NULL);
	return o;
}

static json_object *checks_json(const struct ledger *l)
{
	json_object *checks = json_object_new_array();

	for (int i = 0; i < l->nchecks; i++) {
		json_object *c = json_object_new_object();

		add(c, "name", json_object_new_string(l->checks[i].name));
		add(c, "ok", json_object_new_boolean(l->checks[i].ok));
		add(c, "detail", json_object_new_string(l->checks[i].detail));
		json_object_array_add(checks, c);
	}
	return checks;
}

/* What the kernel did with the payload, in plain words: the sentences the text report prints. */
static json_object *findings_json(const struct ledger *l, double payload)
{
	json_object *a = json_object_new_array();
	struct findings o;

	ledger_findings(l, payload, &o);
	for (int i = 0; i < o.n; i++)
		json_object_array_add(a, json_object_new_string(o.line[i]));
	return a;
}

json_object *ledger_json(const struct ledger *l, const struct micro *m)
{
	json_object *root = json_object_new_object();
	bool have_payload = false;
	double payload = ledger_payload_of(l, &have_payload);

	add(root, "target", json_utf8_string(l->target));
	add(root, "workload", l->workload ? json_object_get(l->workload) : NULL);
	add(root, "tracer_effect", l->effect ? effect_json(l->effect, l->untraced) : NULL);
	add(root, "phase_gated", json_object_new_boolean(l->phase_gated));
	add(root, "processes", json_object_new_int(l->k.nprocs));
	add(root, "tasks_forked", u64(l->k.misc.forks));
	add(root, "tasks_exited", u64(l->k.misc.exits));
	if (l->exit_status >= 0)
		add(root, "exit_status", json_object_new_int(l->exit_status));
	add(root, "sites", sites_json(l, have_payload, payload));
	add(root, "cost", cost_json(l));
	add(root, "timed_copies", copy_time_json(l));
	add(root, "boundary", boundary_json(l));
	add(root, "unattributed", l->bnd.measured ? u64(l->bnd.unattributed) : NULL);
	add(root, "sched", sched_json(l));
	add_syscalls(root, l, have_payload, payload);
	add(root, "page_cache", page_cache_json(l));
	/* both come from following file syscalls, which only the file sites do */
	add(root, "file_bytes_unseen", l->method[SITE_KERNEL_COPY] != METHOD_NONE
	    ? u64(l->k.misc.file_bytes_unseen) : NULL);
	add(root, "write_bytes_by_return", l->method[SITE_FILE_WRITE_COPY] != METHOD_NONE
	    ? u64(l->k.misc.write_bytes_by_return) : NULL);
	add(root, "page_faults", page_faults_json(l));
	add(root, "zerocopy_notices", notices_json(l));
	add(root, "network", network_json(l));
	add(root, "by_process", by_process_json(l));
	add(root, "zerocopy_path", zc_path_json(l));
	add(root, "perf", perf_json(l));
	add(root, "counters", perf_counters_json(l, have_payload ? payload : 0));
	add(root, "probes", probes_json(l, false));
	add(root, "probes_refused", probes_json(l, true));
	add(root, "map_updates_dropped", dropped_json(l));
	add(root, "program_runs_skipped", skips_json(l));
	add(root, "checks", checks_json(l));
	add(root, "findings", findings_json(l, have_payload ? payload : 0));
	if (m)
		micro_json(root, m, l);
	add(root, "ok", json_object_new_boolean(ledger_ok(l)));
	return root;
}
