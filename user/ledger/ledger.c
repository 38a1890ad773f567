/*
 * The copy ledger's model (ledger.h): the kernel's figures read in beside the run's context, and
 * the questions the checks and the reports ask of them.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "os/jsonpath.h"
#include "ledger/ledger.h"
#include "ledger/costs.h"

void ledger_collect(struct ledger *l, struct zctrace_bpf *obj, const struct skip_mark *from,
		    const struct skip_mark *to)
{
	for (int s = 0; s < NR_SITES; s++)
		l->method[s] = site_method_of(l->choice, s, &l->method_label[s]);
	kfigures_read(&l->k, obj);
	cost_read(obj, &l->cost, ledger_has(l, PROBE_COST) ? NULL : refusal_of(l, PROBE_COST));
	/* skipped only where not asked for */
	copy_time_read(obj, &l->timed, !l->choice[PROBE_COPY_TIME].skip,
		       ledger_has(l, PROBE_COPY_TIME) ? NULL : refusal_of(l, PROBE_COPY_TIME));
	cost_bounds(l);
	kfigures_read_skips(&l->k, obj, from, to);
	boundary_explain(&l->k, l->method, ledger_has(l, PROBE_BOUNDARY), &l->bnd);
}

void ledger_set_report(struct ledger *l, json_object *report)
{
	l->workload = report;
	wl_report_parse(report, &l->rep);
}

bool ledger_has(const struct ledger *l, int id)
{
	return probe_attached(l->choice, id);
}

/* A microbenchmark's client and server, where the payload has no one direction (an echo). */
static const char *client_server_role(const struct ledger *l, __u32 tgid)
{
	bool fc = l->rep.client_pid.found, fs = l->rep.server_pid.found;
	__u64 cli = l->rep.client_pid.v, srv = l->rep.server_pid.v;

	if (fc && fs && cli == srv && tgid == cli)
		return "client+server";
	if (fc && tgid == cli)
		return "client";
	if (fs && tgid == srv)
		return "server";
	return "other";
}

/* The role of a traced process, from the pids the workload reported. */
const char *proc_role(const struct ledger *l, __u32 tgid)
{
	bool fs = l->rep.sender_pid.found, fr = l->rep.receiver_pid.found;
	__u64 snd = l->rep.sender_pid.v, rcv = l->rep.receiver_pid.v;

	if (fs && fr && snd == rcv && tgid == snd)
		return "sender+receiver";
	if (fs && tgid == snd)
		return "sender";
	if (fr && tgid == rcv)
		return "receiver";
	return client_server_role(l, tgid);
}

/* Sender and receiver are separate processes: each has its own ledger. */
bool ledger_two_sides(const struct ledger *l)
{
	bool fs = l->rep.sender_pid.found, fr = l->rep.receiver_pid.found;
	__u64 snd = l->rep.sender_pid.v, rcv = l->rep.receiver_pid.v;

	return fs && fr && snd != rcv;
}

bool ledger_on_veth(const struct ledger *l)
{
	return l->net && l->net->sender_ino;
}

/*
 * The namespace a role ran in: the sender's and receiver's with --netns, else the host's. A
 * microbenchmark's client runs as the workload, in the sender's; its server in the receiver's.
 */
const char *role_netns(const struct ledger *l, const char *role)
{
	if (ledger_on_veth(l) && (!strcmp(role, "sender") || !strcmp(role, "client")))
		return l->net->sender;
	if (ledger_on_veth(l) && (!strcmp(role, "receiver") || !strcmp(role, "server")))
		return l->net->receiver;
	return strcmp(role, "other") ? "host" : "?";
}

const char *proc_label(const struct ledger *l, const struct proc_sites *p)
{
	const char *role = proc_role(l, p->tgid);

	return strcmp(role, "other") || !p->comm[0] ? role : p->comm;
}

const char *proc_netns(const struct ledger *l, const struct proc_sites *p, char *buf, size_t n)
{
	const char *role = proc_role(l, p->tgid);
	struct stat st;

	if (strcmp(role, "other"))
		return role_netns(l, role);
	if (!p->netns)
		return "not noted";
	if (netns_role(l->net, p->netns))
		return netns_label(l, p->netns, buf, n);
	if (!stat("/proc/self/ns/net", &st) && st.st_ino == p->netns)
		return "host";
	snprintf(buf, n, "net:[%u]", p->netns);
	return buf;
}

const char *netns_label(const struct ledger *l, __u32 ino, char *buf, size_t n)
{
	const char *role = netns_role(l->net, ino);

	if (!role)
		snprintf(buf, n, "net:[%u]", ino);
	else
		snprintf(buf, n, "%s", role_netns(l, role));
	return buf;
}

const struct proc_sites *ledger_proc_of(const struct ledger *l, const char *role)
{
	for (int i = 0; i < l->k.nproc_sites; i++)
		if (!strcmp(proc_role(l, l->k.procs[i].tgid), role))
			return &l->k.procs[i];
	return NULL;
}

/*
 * Zerocopy bytes that reached delivery (zc_path's receive stage), where the deferred probes count
 * per skb (fentry/kprobe skb_copy_ubufs, tp_btf netif_receive_skb) and so see every delivery: a
 * segment TCP sent again is copied again. False where the path was not followed.
 */
bool zc_redelivered(const struct ledger *l, __u64 *delivered)
{
	*delivered = 0;
	if (l->method[SITE_DEFERRED_COPY] == METHOD_NONE || !ledger_has(l, PROBE_ZC_PATH))
		return false;
	for (int i = 0; i < l->k.nzp; i++)
		if (l->k.zp_key[i].stage == ZC_STAGE_RECEIVE)
			*delivered += l->k.zp[i].bytes;
	return true;
}

/* Pages the targets brought into the page cache for the file the workload names at @path. */
bool file_pages_added(const struct ledger *l, const struct wl_file_fig *file, __u64 *pages)
{
	/* the kernel's MKDEV() */
	__u32 dev = (__u32)(file->dev_major.v << 20 | file->dev_minor.v);
	__u64 ino = file->ino.v;

	if (!file->ino.found)
		return false;
	*pages = 0;
	for (int i = 0; i < l->k.npc; i++)
		if (l->k.pc_key[i].ino == ino && l->k.pc_key[i].dev == dev)
			*pages += l->k.pc_pages[i];
	return true;
}

/* Kernel map updates that failed, by map: each one a figure lost. */
const struct dropped_counter dropped_counters[] = {
	{ "targets", offsetof(struct misc_stats, targets_dropped) },
	{ "sites", offsetof(struct misc_stats, sites_dropped) },
	{ "sched", offsetof(struct misc_stats, sched_dropped) },
	{ "offcpu_start", offsetof(struct misc_stats, offcpu_dropped) },
	{ "io_calls", offsetof(struct misc_stats, io_calls_dropped) },
	{ "pc_adds", offsetof(struct misc_stats, pc_adds_dropped) },
	{ "send_calls", offsetof(struct misc_stats, send_calls_dropped) },
	{ "zc_calls", offsetof(struct misc_stats, zc_calls_dropped) },
	{ "zc_path", offsetof(struct misc_stats, zc_path_dropped) },
	{ "account", offsetof(struct misc_stats, account_dropped) },
};
const int nr_dropped_counters = sizeof(dropped_counters) / sizeof(dropped_counters[0]);

__u64 dropped_of(const struct ledger *l, int i)
{
	return *(const __u64 *)((const char *)&l->k.misc + dropped_counters[i].off);
}

/* "sites 3, sched 1", or "none"; returns the total. */
__u64 dropped_summary(const struct ledger *l, char *buf, size_t n)
{
	__u64 total = 0;
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < nr_dropped_counters; i++) {
		__u64 v = dropped_of(l, i);

		if (!v)
			continue;
		total += v;
		if (len < n)
			len += snprintf(buf + len, n - len, "%s%s %" PRIu64, len ? ", " : "",
					dropped_counters[i].map, (uint64_t)v);
	}
	if (!total)
		snprintf(buf, n, "none");
	return total;
}

double ledger_payload_of(const struct ledger *l, bool *found)
{
	/* the receiving end alone (--listen): what it received */
	if (l->rep.remote_role && !strcmp(l->rep.remote_role, "receiver")) {
		*found = l->rep.bytes_received.found;
		return (double)l->rep.bytes_received.v;
	}
	*found = l->rep.bytes.found;
	return (double)l->rep.bytes.v;
}

const char *refusal_of(const struct ledger *l, int id)
{
	const char *why = l->choice ? probe_refusal(l->choice, id) : NULL;

	return why ? why : "not attached";
}
