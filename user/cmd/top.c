/*
 * zctrace top: the whole machine's copies, live, a table per interval in the manner of tcptop:
 * for each process (or cgroup, or command name), its bytes per second by site, its CPU copies per
 * byte it moved, the zerocopy bytes it pinned and those copied later, and the bytes no site explains.
 */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <json-c/json.h>
#include <bpf/libbpf.h>
#include "trace/census.h"
#include "os/cli.h"
#include "os/clock.h"
#include "os/utf8.h"
#include "trace/probes.h"
#include "trace/progstats.h"
#include "cmd/top.h"
#include "zctrace.skel.h"

enum top_by { BY_PROCESS, BY_CGROUP, BY_COMM };

struct top_args {
	double interval;
	long count;		/* intervals; 0 = until stopped */
	enum top_by by;
	int rows;		/* 0 = the terminal's height, or 20 */
	bool json, noclear;
	enum method cap;
	unsigned max_keys;
	bool complete;		/* --complete: also what needs the raw syscall tracepoints */
	bool bpf_stats;		/* --bpf-stats: the census's own BPF cost in each table */
	unsigned cost_hz;	/* --cost: the sampler's rate; 0: off */
	bool per_call;		/* --per-call: TCP's copies at each call, not from the sockets' counters */
};

enum { TOP_OPT_COMPLETE = 0x100, TOP_OPT_BPF_STATS, TOP_OPT_COST, TOP_OPT_PER_CALL };

/* One line of the table: a process, or the processes of one cgroup or command name. */
struct top_row {
	const char *key;	/* cgroup or comm; NULL by process */
	const struct census_proc *proc;	/* by process */
	int nprocs;
	struct census_figs d;
	uint64_t copied;	/* CPU-copy bytes in the interval: the sort key */
	bool tcp_shared;	/* a process of it held a TCP socket another process held too */
};

static const struct argp_option top_options[] = {
	{ "interval", 'i', "SECS", 0, "Seconds between tables (default 1)", 0 },
	{ "count", 'n', "COUNT", 0, "Stop after COUNT tables (default: until interrupted)", 0 },
	{ "by", 'b', "WHAT", 0, "process (default), cgroup or comm", 0 },
	{ "rows", 'r', "N", 0, "Rows per table (default: the terminal's height, or 20)", 0 },
	{ "json", 'j', NULL, 0, "One JSON object per interval, one per line", 0 },
	{ "noclear", 'C', NULL, 0, "Do not clear the screen between tables", 0 },
	{ "method", 'm', "METHOD", 0, "fentry, kprobe or tracepoint: nothing better than it", 0 },
	{ "max-keys", 'k', "N", 0, "(process, site) keys the kernel keeps, LRU (default 16384)", 0 },
	CENSUS_COMPLETE_OPTION(TOP_OPT_COMPLETE),
	CENSUS_BPF_STATS_OPTION(TOP_OPT_BPF_STATS, "in each table"),
	CENSUS_COST_OPTION(TOP_OPT_COST, "(COPY CPU: the share of one CPU)"),
	CENSUS_PER_CALL_OPTION(TOP_OPT_PER_CALL),
	{ 0 }
};

static const char top_doc[] =
	"Every process's copies, live: bytes per second by site, CPU copies per byte moved, zerocopy "
	"bytes pinned and copied later, and bytes no site explains.\v"
	"The bytes a process moved are the most it moved one way: out of or into its memory through I/O "
	"calls, by page reference (sendfile, splice) or by a kernel copy (copy_file_range). Processes "
	"that exited during an interval show their last figures once, marked '*'. The kernel keeps "
	"(process, site) keys in a bounded LRU map: keys evicted before they were read lost their counts, "
	"and the header says how many.\n\n"
	"EXAMPLES:\n"
	"    zctrace top\n"
	"    zctrace top -i 5 --by cgroup\n"
	"    zctrace top --cost                # and the CPU time of each process's copies\n"
	"    zctrace top -n 3 --json > top.jsonl\n";

static int top_parse(int key, char *arg, struct argp_state *state)
{
	struct top_args *a = state->input;
	char *end;

	switch (key) {
	case 'i':
		a->interval = strtod(arg, &end);
		if (*end || !(a->interval >= 0.1 && a->interval <= 3600))
			argp_error(state, "bad --interval '%s' (0.1 to 3600 seconds)", arg);
		break;
	case 'n':
		a->count = strtol(arg, &end, 10);
		if (*end || a->count < 1)
			argp_error(state, "bad --count '%s' (a positive number)", arg);
		break;
	case 'b':
		if (!strcmp(arg, "process"))
			a->by = BY_PROCESS;
		else if (!strcmp(arg, "cgroup"))
			a->by = BY_CGROUP;
		else if (!strcmp(arg, "comm"))
			a->by = BY_COMM;
		else
			argp_error(state, "bad --by '%s' (process, cgroup or comm)", arg);
		break;
	case 'r':
		a->rows = strtol(arg, &end, 10);
		if (*end || a->rows < 1 || a->rows > 100000)
			argp_error(state, "bad --rows '%s' (1 to 100000)", arg);
		break;
	case 'j':
		a->json = true;
		break;
	case 'C':
		a->noclear = true;
		break;
	case 'm':
		if (parse_method(arg, &a->cap))
			argp_error(state, "unknown method '%s' (fentry, kprobe or tracepoint)", arg);
		break;
	case 'k':
		a->max_keys = strtoul(arg, &end, 10);
		if (*end || a->max_keys < 64 || a->max_keys > 1 << 22)
			argp_error(state, "bad --max-keys '%s' (64 to 4194304)", arg);
		break;
	case TOP_OPT_COMPLETE:
		a->complete = true;
		break;
	case TOP_OPT_BPF_STATS:
		a->bpf_stats = true;
		break;
	case TOP_OPT_PER_CALL:
		a->per_call = true;
		break;
	case TOP_OPT_COST:
		if (cost_parse_hz(arg, 1, &a->cost_hz))
			argp_error(state, "bad --cost '%s' (samples a second, 1 to %d)", arg, COST_MAX_HZ);
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static void add_figs(struct census_figs *to, const struct census_figs *f)
{
	for (int s = 0; s < NR_SITES; s++) {
		to->site[s].count += f->site[s].count;
		to->site[s].bytes += f->site[s].bytes;
	}
	to->from_user += f->from_user;
	to->to_user += f->to_user;
	to->unattributed += f->unattributed;
	for (int s = 0; s < NR_SITES; s++)
		to->cpu_samples[s] += f->cpu_samples[s];
	to->tcp_sent += f->tcp_sent;
	to->tcp_received += f->tcp_received;
}

static uint64_t cpu_samples(const struct census_figs *f)
{
	uint64_t n = 0;

	for (int s = 0; s < NR_SITES; s++)
		n += f->cpu_samples[s];
	return n;
}

static bool moved_any(const struct census_figs *f)
{
	for (int s = 0; s < NR_SITES; s++)
		if (f->site[s].count || f->site[s].bytes || f->cpu_samples[s])
			return true;
	return f->from_user || f->to_user || f->unattributed || f->tcp_sent || f->tcp_received;
}

/* The interval's rows: a process each, or summed by cgroup or command name. */
static int make_rows(const struct census_snap *snap, enum top_by by, struct top_row *rows)
{
	int n = 0;

	for (int i = 0; i < snap->nprocs; i++) {
		const struct census_proc *p = &snap->procs[i];
		const char *key = by == BY_CGROUP ? p->cgroup : p->comm;
		struct top_row *r = NULL;

		/* a process that exited shows once with its last figures, even with none new; one that
		 * shares a TCP socket shows, to say so */
		if (!moved_any(&p->delta) && !p->tcp_shared && !(p->exited_now && moved_any(&p->total)))
			continue;
		if (by != BY_PROCESS)
			for (int k = 0; k < n && !r; k++)
				if (!strcmp(rows[k].key, key))
					r = &rows[k];
		if (!r) {
			r = &rows[n++];
			memset(r, 0, sizeof(*r));
			r->key = by == BY_PROCESS ? NULL : key;
			r->proc = p;
		}
		r->nprocs++;
		r->tcp_shared |= p->tcp_shared;
		add_figs(&r->d, &p->delta);
	}
	for (int k = 0; k < n; k++)
		rows[k].copied = census_cpu_copied(&rows[k].d);
	return n;
}

static int by_copied(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;
	uint64_t px = census_payload(&x->d), py = census_payload(&y->d);

	if (x->copied != y->copied)
		return x->copied < y->copied ? 1 : -1;
	return px < py ? 1 : px > py ? -1 : 0;
}

/* "12.3M": a byte rate in a few characters. */
static const char *rate(char *buf, size_t n, uint64_t bytes, double secs)
{
	double v = secs > 0 ? bytes / secs : 0;
	const char *unit = " KMGT";
	int u = 0;

	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	if (u == 0)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%.*f%c", v < 10 ? 2 : v < 100 ? 1 : 0, v, unit[u]);
	return buf;
}

/* The busiest sites of a row, "send_copy 12.3M recv_copy 12.3M", biggest first. */
static void sites_line(const struct census_figs *f, double secs, char *buf, size_t n)
{
	bool used[NR_SITES] = {};
	size_t len = 0;

	buf[0] = 0;
	for (int k = 0; k < 3; k++) {
		int best = -1;
		char r[16];

		for (int s = 0; s < NR_SITES; s++)
			if (!used[s] && f->site[s].bytes && (best < 0 || f->site[s].bytes > f->site[best].bytes))
				best = s;
		if (best < 0 || len >= n)
			break;
		used[best] = true;
		len += snprintf(buf + len, n - len, "%s%s %s", len ? " " : "", site_name(best),
				rate(r, sizeof(r), f->site[best].bytes, secs));
	}
}

/* @s for a terminal: a control byte (a newline in a name, an escape) as '?'. */
static const char *printable(char *out, size_t n, const char *s)
{
	size_t i = 0;

	for (; s[i] && i + 1 < n; i++)
		out[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	out[i] = '\0';
	return out;
}

static int terminal_rows(void)
{
	struct winsize ws;

	return isatty(STDOUT_FILENO) && !ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) && ws.ws_row > 6 ? ws.ws_row - 5 : 20;
}

/* One line per reason: what the census does not measure here, and why. */
static void print_unmeasured(const struct census *c)
{
	const char *names[CENSUS_MAX_UNMEASURED], *whys[CENSUS_MAX_UNMEASURED];
	int n = census_unmeasured(c, names, whys, CENSUS_MAX_UNMEASURED);
	bool done[CENSUS_MAX_UNMEASURED] = {};

	for (int i = 0; i < n; i++) {
		if (done[i])
			continue;
		printf("%s: %s", whys[i], names[i]);
		for (int j = i + 1; j < n; j++)
			if (!done[j] && !strcmp(whys[i], whys[j])) {
				printf(" %s", names[j]);
				done[j] = true;
			}
		printf("\n");
	}
}

/* The census's BPF programs' cost, read at each table with --bpf-stats. */
struct bpf_cost {
	struct prog_stats ps;
	uint64_t run_ns, events;	/* at the last table */
};

static void bpf_cost_delta(struct bpf_cost *b, struct census *c, uint64_t *run_ns, uint64_t *events)
{
	uint64_t ns = 0, ev = 0;

	prog_stats_end(&b->ps, census_object(c)->obj);
	for (int i = 0; i < b->ps.n; i++) {
		ns += b->ps.p[i].run_time_ns;
		ev += b->ps.p[i].events;
	}
	*run_ns = ns - b->run_ns;
	*events = ev - b->events;
	b->run_ns = ns;
	b->events = ev;
}

static void print_table(const struct top_args *a, const struct census *c, const struct census_snap *snap,
			struct top_row *rows, int n, const uint64_t *bpf)
{
	bool account = census_has_account(c);
	static const char *const by_name[] = { "PID", "CGROUP", "COMM" };
	int shown = a->rows ? a->rows : terminal_rows();
	char clock[16], b1[16], b2[16], b3[16], b4[16], b5[16], sites[128];
	double secs = snap->interval_s;
	time_t t = time(NULL);

	strftime(clock, sizeof(clock), "%H:%M:%S", localtime(&t));
	if (!a->noclear && isatty(STDOUT_FILENO))
		printf("\033[H\033[2J");
	printf("%s  %.1f s  %d %s with copies  keys %" PRIu64 "/%" PRIu64 "  evicted %" PRIu64 "  dropped %" PRIu64
	       "\n", clock, secs, n, a->by == BY_PROCESS ? "processes" : a->by == BY_CGROUP ? "cgroups" : "names",
	       snap->keys, snap->max_keys, snap->evicted, snap->dropped);
	if (snap->skipped)
		printf("the kernel skipped %" PRIu64 " runs of the census's programs (%s): the counts they make may be "
		       "short\n", snap->skipped, snap->skipped_what);
	if (snap->unfollowed)
		printf("the census could not follow %" PRIu64 " calls from their entry to their return (no room for "
		       "them in the thread's task storage): the counts they make may be short\n", snap->unfollowed);
	if (bpf)
		printf("census BPF programs: %.2f ms of CPU in %" PRIu64 " events (%.0f ns each)\n", bpf[0] / 1e6, bpf[1],
		       bpf[1] ? (double)bpf[0] / bpf[1] : 0);
	print_unmeasured(c);
	if (snap->sample_ns)
		printf("COPY CPU: the share of one CPU spent copying, from the kernel's stacks sampled at %.0f Hz "
		       "(cpu-clock)\n", 1e9 / snap->sample_ns);
	printf("\n");
	printf("%-8s %-16s %8s %8s %8s %8s %8s %8s%s  %s\n", by_name[a->by], a->by == BY_PROCESS ? "COMM" : "PROCS",
	       "MOVED/s", "COPIED/s", "COPIES/B", "PINNED/s", "LATER/s", "UNATTR/s", snap->sample_ns ? " COPY CPU" : "",
	       "SITES (bytes/s)");
	for (int i = 0; i < n && i < shown; i++) {
		const struct top_row *r = &rows[i];
		double cpb = census_copies_per_byte(&r->d);
		char cpbs[16], who[24], name[CENSUS_CGROUP_LEN];

		if (cpb < 0)
			snprintf(cpbs, sizeof(cpbs), "-");
		else
			snprintf(cpbs, sizeof(cpbs), "%.2f", cpb);
		sites_line(&r->d, secs, sites, sizeof(sites));
		if (a->by == BY_PROCESS) {
			snprintf(who, sizeof(who), "%u%s", r->proc->tgid, r->proc->exited ? "*" : "");
			printf("%-8s %-16s", who, printable(name, sizeof(name), r->proc->comm));
		} else {
			snprintf(who, sizeof(who), "%d", r->nprocs);
			printf("%-25s", printable(name, sizeof(name), r->key));
			printf(" %s", who);
		}
		printf(" %8s %8s %8s %8s %8s %8s", rate(b1, sizeof(b1), census_payload(&r->d), secs),
		       rate(b2, sizeof(b2), r->copied, secs), cpbs,
		       rate(b3, sizeof(b3), r->d.site[SITE_ZC_PIN].bytes, secs),
		       rate(b4, sizeof(b4), r->d.site[SITE_DEFERRED_COPY].bytes, secs),
		       account ? rate(b5, sizeof(b5), r->d.unattributed, secs) : "-");
		if (snap->sample_ns)
			printf(" %7.1f%%", secs > 0 ? 100.0 * cpu_samples(&r->d) * snap->sample_ns / 1e9 / secs : 0);
		printf("  %s\n", sites);
	}
	if (n > shown)
		printf("(%d more)\n", n - shown);
	fflush(stdout);
}

static json_object *row_json(const struct top_args *a, const struct top_row *r, double secs, bool account,
			     bool tcp, unsigned derived, uint64_t sample_ns)
{
	json_object *o = json_object_new_object(), *sites = json_object_new_object();
	double cpb = census_copies_per_byte(&r->d);

	if (a->by == BY_PROCESS) {
		json_object_object_add(o, "pid", json_object_new_int64(r->proc->tgid));
		json_object_object_add(o, "comm", json_utf8_string(r->proc->comm));
		json_object_object_add(o, "cgroup", json_utf8_string(r->proc->cgroup));
		json_object_object_add(o, "exited", json_object_new_boolean(r->proc->exited));
	} else {
		json_object_object_add(o, a->by == BY_CGROUP ? "cgroup" : "comm", json_utf8_string(r->key));
		json_object_object_add(o, "processes", json_object_new_int(r->nprocs));
	}
	for (int s = 0; s < NR_SITES; s++) {
		json_object *js;

		if (!r->d.site[s].count && !r->d.site[s].bytes && !r->d.cpu_samples[s])
			continue;
		js = json_object_new_object();
		/* a TCP site counted from the sockets' counters has no calls counted: null, not 0 */
		json_object_object_add(js, "copies", (s == SITE_SEND_COPY && derived & TCP_DERIVED_SEND) ||
				       (s == SITE_RECV_COPY && derived & TCP_DERIVED_RECV) ? NULL :
				       json_object_new_int64(r->d.site[s].count));
		json_object_object_add(js, "bytes", json_object_new_int64(r->d.site[s].bytes));
		json_object_object_add(js, "bytes_per_s", json_object_new_double(secs > 0 ? r->d.site[s].bytes / secs : 0));
		/* without --cost the copies' CPU time is not measured: no key, not 0 */
		if (sample_ns)
			json_object_object_add(js, "cpu_ns", json_object_new_int64(r->d.cpu_samples[s] * sample_ns));
		json_object_object_add(sites, site_name(s), js);
	}
	json_object_object_add(o, "sites", sites);
	json_object_object_add(o, "moved_bytes", json_object_new_int64(census_payload(&r->d)));
	json_object_object_add(o, "from_user_bytes", json_object_new_int64(r->d.from_user));
	json_object_object_add(o, "to_user_bytes", json_object_new_int64(r->d.to_user));
	json_object_object_add(o, "cpu_copy_bytes", json_object_new_int64(r->copied));
	json_object_object_add(o, "copies_per_byte", cpb < 0 ? NULL : json_object_new_double(cpb));
	json_object_object_add(o, "pinned_bytes", json_object_new_int64(r->d.site[SITE_ZC_PIN].bytes));
	json_object_object_add(o, "copied_later_bytes", json_object_new_int64(r->d.site[SITE_DEFERRED_COPY].bytes));
	/* without the boundary account nothing says what no site explained: null, not 0 */
	json_object_object_add(o, "unattributed_bytes", account ? json_object_new_int64(r->d.unattributed) : NULL);
	/* TCP from the sockets' own counters: null where the kernel does not allow them */
	json_object_object_add(o, "tcp_sent_bytes", tcp ? json_object_new_int64(r->d.tcp_sent) : NULL);
	json_object_object_add(o, "tcp_received_bytes", tcp ? json_object_new_int64(r->d.tcp_received) : NULL);
	json_object_object_add(o, "tcp_socket_shared", tcp ? json_object_new_boolean(r->tcp_shared) : NULL);
	if (sample_ns)
		json_object_object_add(o, "copy_cpu_ns", json_object_new_int64(cpu_samples(&r->d) * sample_ns));
	return o;
}

static int print_json(const struct top_args *a, const struct census *c, const struct census_snap *snap,
		      struct top_row *rows, int n, const uint64_t *bpf)
{
	const char *names[CENSUS_MAX_UNMEASURED], *whys[CENSUS_MAX_UNMEASURED];
	int nun = census_unmeasured(c, names, whys, CENSUS_MAX_UNMEASURED);
	json_object *un = json_object_new_object();
	static const char *const by_name[] = { "process", "cgroup", "comm" };
	json_object *o = json_object_new_object(), *jr = json_object_new_array(), *m = json_object_new_object();
	int shown = a->rows ? a->rows : n;
	int err;

	json_object_object_add(o, "time", json_object_new_int64(time(NULL)));
	json_object_object_add(o, "interval_s", json_object_new_double(snap->interval_s));
	json_object_object_add(o, "by", json_object_new_string(by_name[a->by]));
	json_object_object_add(o, "keys", json_object_new_int64(snap->keys));
	json_object_object_add(o, "max_keys", json_object_new_int64(snap->max_keys));
	json_object_object_add(o, "evicted", json_object_new_int64(snap->evicted));
	json_object_object_add(o, "dropped", json_object_new_int64(snap->dropped));
	json_object_object_add(o, "program_runs_skipped", json_object_new_int64(snap->skipped));
	json_object_object_add(o, "calls_unfollowed", json_object_new_int64(snap->unfollowed));
	json_object_object_add(o, "program_runs_skipped_by", json_object_new_string(snap->skipped_what));
	json_object_object_add(o, "program_runs_skipped_uncounted", snap->skips_uncounted[0] ?
			       json_object_new_string(snap->skips_uncounted) : NULL);
	for (int s = 0; s < NR_SITES; s++) {
		enum method meth = site_method_of(census_choice(c), s, NULL);

		json_object_object_add(m, site_name(s),
				       meth == METHOD_NONE ? NULL : json_object_new_string(method_name(meth)));
	}
	json_object_object_add(o, "methods", m);
	for (int i = 0; i < nun; i++)
		json_object_object_add(un, names[i], json_object_new_string(whys[i]));
	json_object_object_add(o, "not_measured", un);
	if (snap->sample_ns)
		json_object_object_add(o, "sample_ns", json_object_new_int64(snap->sample_ns));
	if (census_has_tcp_counters(c)) {
		json_object_object_add(o, "tcp_unowned_sent_bytes", json_object_new_int64(snap->tcp_unowned_sent));
		json_object_object_add(o, "tcp_unowned_received_bytes", json_object_new_int64(snap->tcp_unowned_received));
	}
	/* without --bpf-stats the census's own cost is not measured: no key, not 0 */
	if (bpf) {
		json_object *b = json_object_new_object();

		json_object_object_add(b, "run_ns", json_object_new_int64(bpf[0]));
		json_object_object_add(b, "events", json_object_new_int64(bpf[1]));
		json_object_object_add(o, "bpf", b);
	}
	for (int i = 0; i < n && i < shown; i++)
		json_object_array_add(jr, row_json(a, &rows[i], snap->interval_s, census_has_account(c),
						   census_has_tcp_counters(c), census_derived(c), snap->sample_ns));
	json_object_object_add(o, "rows", jr);
	json_object_object_add(o, "more_rows", json_object_new_int(n > shown ? n - shown : 0));
	err = puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN)) < 0 || fflush(stdout) ? -EIO : 0;
	json_object_put(o);
	return err;
}

/* Sleeps @secs, or less if a stop signal comes. */
static void wait_interval(double secs)
{
	double end = now_s() + secs;

	while (!stop_signal && now_s() < end) {
		double left = end - now_s();

		sleep_ms(left > 0.1 ? 100 : (int)(left * 1000) + 1);
	}
}

int cmd_top(int argc, char **argv)
{
	static const struct argp argp = { top_options, top_parse, NULL, top_doc };
	struct top_args a = { .interval = 1 };
	struct census_opts co = {};
	struct bpf_cost cost = {};
	struct census *c;
	struct top_row *rows = NULL;
	const char *missing;
	int err, ret = 0;

	argp_err_exit_status = EXIT_USAGE;
	argv[0] = "zctrace top";
	if (argp_parse(&argp, argc, argv, 0, NULL, &a))
		return EXIT_USAGE;
	if ((missing = cli_missing_capability())) {
		fprintf(stderr, "zctrace top: %s\n", missing);
		return 1;
	}
	co.cap = a.cap;
	co.max_keys = a.max_keys;
	co.complete = a.complete;
	co.cost_hz = a.cost_hz;
	co.per_call = a.per_call;
	catch_stop_signals();
	restart_after_stop_signals();
	prog_stats_init(&cost.ps);
	/* on before load, and only when asked: it costs every BPF program of the machine */
	if (a.bpf_stats && prog_stats_enable(&cost.ps)) {
		fprintf(stderr, "zctrace top: --bpf-stats: %s\n", cost.ps.why);
		return 1;
	}
	if ((err = census_open(&c, &co))) {
		fprintf(stderr, "zctrace top: cannot trace the machine: %s\n", strerror(-err));
		prog_stats_close(&cost.ps);
		return 1;
	}
	if (census_cost_refused(c, &co))
		fprintf(stderr, "zctrace top: --cost: not measured: %s\n", census_cost_refused(c, &co));
	prog_stats_begin(&cost.ps);
	for (long i = 0; !stop_signal && (!a.count || i < a.count); i++) {
		struct census_snap snap;
		uint64_t bpf[2];
		int n;

		wait_interval(a.interval);
		if ((err = census_read(c, &snap))) {
			fprintf(stderr, "zctrace top: cannot read the kernel's counters: %s\n", strerror(-err));
			ret = 1;
			break;
		}
		if (a.bpf_stats)
			bpf_cost_delta(&cost, c, &bpf[0], &bpf[1]);
		rows = cli_xrealloc(rows, (snap.nprocs + 1) * sizeof(*rows));
		n = make_rows(&snap, a.by, rows);
		qsort(rows, n, sizeof(*rows), by_copied);
		if (a.json) {
			if (print_json(&a, c, &snap, rows, n, a.bpf_stats ? bpf : NULL)) {
				fprintf(stderr, "zctrace top: cannot write the table: %s\n", strerror(EIO));
				ret = 1;
				break;
			}
		} else {
			print_table(&a, c, &snap, rows, n, a.bpf_stats ? bpf : NULL);
			if (ferror(stdout)) {
				fprintf(stderr, "zctrace top: cannot write the table\n");
				ret = 1;
				break;
			}
		}
	}
	free(rows);
	census_close(c);
	prog_stats_close(&cost.ps);
	return ret;
}
