/*
 * The census as Prometheus metrics (exposition.h). A label pair keeps its series from the read
 * that first saw it to the exporter's end: a series that went away and came back, or whose
 * figures moved into "other", would be counted twice by sum(increase()) over a window. So the
 * bound is kept by admission, the largest newcomers first, and not by eviction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "os/utf8.h"
#include "report/exposition.h"
#include "trace/probes.h"

/* finite buckets: log2 slots 0..EXPO_BUCKETS-1, le up to 1 TiB; larger copies only in +Inf */
#define EXPO_BUCKETS 40

int expo_init(struct expo *e, int max_series)
{
	memset(e, 0, sizeof(*e));
	if (max_series < 1 || max_series > EXPO_MAX_SERIES)
		return -EINVAL;
	e->max_series = max_series;
	/* a power of two at least twice the series: short probe chains */
	for (e->nslots = 64; e->nslots < 2 * (max_series + 1); e->nslots *= 2)
		;
	e->series = calloc(max_series + 1, sizeof(*e->series));
	e->slots = calloc(e->nslots, sizeof(*e->slots));
	if (!e->series || !e->slots) {
		expo_free(e);
		return -ENOMEM;
	}
	snprintf(e->series[max_series].comm, sizeof(e->series[0].comm), EXPO_OTHER);
	snprintf(e->series[max_series].cgroup, sizeof(e->series[0].cgroup), EXPO_OTHER);
	return 0;
}

void expo_free(struct expo *e)
{
	free(e->series);
	free(e->slots);
	e->series = NULL;
	e->slots = NULL;
}

static bool label_escaped(char c)
{
	return c == '\\' || c == '"' || c == '\n';
}

void expo_label_value(char *out, size_t n, const char *s, size_t len)
{
	size_t m, esc = 0;

	if (!n)
		return;
	m = strlen(utf8_scrub(out, n, s, len));
	for (size_t i = 0; i < m; i++)
		esc += label_escaped(out[i]);
	/* too long once escaped: whole characters off the end */
	while (m + esc >= n) {
		do
			m--;
		while (m && ((unsigned char)out[m] & 0xC0) == 0x80);
		esc -= label_escaped(out[m]);
	}
	out[m + esc] = '\0';
	/* from the end: each of \, " and newline as a backslash and itself (newline as 'n') */
	while (m--) {
		if (label_escaped(out[m])) {
			out[m + esc] = out[m] == '\n' ? 'n' : out[m];
			out[m + --esc] = '\\';
		} else {
			out[m + esc] = out[m];
		}
	}
}

void expo_bucket_le(char *out, size_t n, int slot)
{
	if (slot >= EXPO_BUCKETS)
		snprintf(out, n, "+Inf");
	else
		snprintf(out, n, "%llu", (unsigned long long)((2ULL << slot) - 1));
}

static uint32_t label_hash(const char *comm, const char *cgroup)
{
	uint32_t h = 2166136261u;

	for (const char *s = comm; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	h = (h ^ 0xff) * 16777619u;
	for (const char *s = cgroup; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* The series of a label pair, or -1; *@slot: where it is or would go. */
static int find_series(const struct expo *e, const char *comm, const char *cgroup, uint32_t h, int *slot)
{
	int mask = e->nslots - 1;

	for (int i = h & mask;; i = (i + 1) & mask) {
		int s = e->slots[i] - 1;

		if (s < 0) {
			*slot = i;
			return -1;
		}
		if (e->series[s].hash == h && !strcmp(e->series[s].comm, comm) &&
		    !strcmp(e->series[s].cgroup, cgroup)) {
			*slot = i;
			return s;
		}
	}
}

static void add_stats(struct site_stats *to, const struct site_stats *from)
{
	to->count += from->count;
	to->bytes += from->bytes;
	for (int k = 0; k < MAX_SLOTS; k++)
		to->hist[k] += from->hist[k];
}

static void add_figs(struct census_figs *to, const struct census_figs *from)
{
	for (int s = 0; s < NR_SITES; s++)
		add_stats(&to->site[s], &from->site[s]);
	to->from_user += from->from_user;
	to->to_user += from->to_user;
	to->unattributed += from->unattributed;
	for (int s = 0; s < NR_SITES; s++)
		to->cpu_samples[s] += from->cpu_samples[s];
	to->tcp_sent += from->tcp_sent;
	to->tcp_received += from->tcp_received;
}

static void add_to_series(struct expo_series *s, const struct census_figs *f)
{
	add_figs(&s->figs, f);
	s->used = true;
	for (int i = 0; i < NR_SITES; i++)
		if (s->figs.site[i].count || s->figs.site[i].bytes)
			s->seen_sites |= 1ULL << i;
}

/* One process row of a read: its label pair, escaped, and what it weighs in the admission. */
struct row_label {
	char comm[sizeof(((struct expo_series *)0)->comm)];
	char cgroup[sizeof(((struct expo_series *)0)->cgroup)];
	uint32_t hash;
	const struct census_proc *p;
	uint64_t weight;	/* the label pair's copy bytes in this read, over all its rows */
};

static uint64_t copy_bytes(const struct census_figs *f)
{
	uint64_t b = 0;

	for (int s = 0; s < NR_SITES; s++)
		b += f->site[s].bytes;
	return b + f->tcp_sent + f->tcp_received;
}

static int cmp_label(const void *a, const void *b)
{
	const struct row_label *x = a, *y = b;
	int c = strcmp(x->comm, y->comm);

	return c ? c : strcmp(x->cgroup, y->cgroup);
}

/* The heaviest label pair first; ties by name, so that the choice does not depend on row order. */
static int cmp_weight(const void *a, const void *b)
{
	const struct row_label *x = a, *y = b;

	if (x->weight != y->weight)
		return x->weight < y->weight ? 1 : -1;
	return cmp_label(a, b);
}

/* Rows of label pairs with no series yet: the heaviest pairs get series while there is room. */
static void admit(struct expo *e, struct row_label *rows, int n)
{
	int i = 0, j, slot;

	/* rows of one pair next to each other, each carrying the pair's weight */
	qsort(rows, n, sizeof(*rows), cmp_label);
	for (i = 0; i < n; i = j) {
		uint64_t w = 0;

		for (j = i; j < n && !cmp_label(&rows[i], &rows[j]); j++)
			w += copy_bytes(&rows[j].p->delta);
		for (int k = i; k < j; k++)
			rows[k].weight = w;
	}
	qsort(rows, n, sizeof(*rows), cmp_weight);
	for (i = 0; i < n; i = j) {
		int s = find_series(e, rows[i].comm, rows[i].cgroup, rows[i].hash, &slot);

		if (s < 0 && e->nseries < e->max_series) {
			s = e->nseries++;
			snprintf(e->series[s].comm, sizeof(e->series[s].comm), "%s", rows[i].comm);
			snprintf(e->series[s].cgroup, sizeof(e->series[s].cgroup), "%s", rows[i].cgroup);
			e->series[s].hash = rows[i].hash;
			e->slots[slot] = s + 1;
		}
		if (s < 0) {
			s = e->max_series;
			e->folded++;
		}
		for (j = i; j < n && !cmp_label(&rows[i], &rows[j]); j++) {
			if (rows[j].p->tcp_shared)
				e->series[s].tcp_shared_read = e->reads + 1;
			add_to_series(&e->series[s], &rows[j].p->delta);
		}
	}
}

/* Room for one more newcomer row: 0, or -ENOMEM. Grown as they come, since most reads have none. */
static int grow_rows(struct row_label **rows, int n, int *cap)
{
	struct row_label *r;

	if (n < *cap)
		return 0;
	r = realloc(*rows, (*cap ? *cap * 2 : 16) * sizeof(**rows));
	if (!r)
		return -ENOMEM;
	*rows = r;
	*cap = *cap ? *cap * 2 : 16;
	return 0;
}

void expo_add(struct expo *e, const struct census_snap *snap)
{
	struct row_label *rows = NULL;
	int nnew = 0, cap = 0, slot;

	for (int i = 0; i < snap->nprocs; i++) {
		const struct census_proc *p = &snap->procs[i];
		struct row_label r = { .p = p };
		int s;

		add_figs(&e->all, &p->delta);
		expo_label_value(r.comm, sizeof(r.comm), p->comm, sizeof(p->comm));
		expo_label_value(r.cgroup, sizeof(r.cgroup), p->cgroup, sizeof(p->cgroup));
		r.hash = label_hash(r.comm, r.cgroup);
		s = find_series(e, r.comm, r.cgroup, r.hash, &slot);
		if (s >= 0 && p->tcp_shared)
			e->series[s].tcp_shared_read = e->reads + 1;
		if (s >= 0)
			add_to_series(&e->series[s], &p->delta);
		else if (!grow_rows(&rows, nnew, &cap))
			rows[nnew++] = r;
		else	/* no memory to rank the newcomers: their figures still count, in "other" */
			add_to_series(&e->series[e->max_series], &p->delta);
	}
	if (nnew)
		admit(e, rows, nnew);
	free(rows);
	for (int s = 0; s < NR_SITES; s++)
		for (int k = 0; k < MAX_SLOTS; k++)
			e->all.site[s].hist[k] += snap->hist[s][k];
	e->reads++;
	e->evicted = snap->evicted;
	e->dropped = snap->dropped;
	e->skipped = snap->skipped;
	e->keys = snap->keys;
	e->max_keys = snap->max_keys;
	e->sample_ns = snap->sample_ns;
	e->tcp_unowned_sent = snap->tcp_unowned_sent;
	e->tcp_unowned_received = snap->tcp_unowned_received;
}

/* ---- writing ---- */

enum family_type { FAM_COUNTER, FAM_GAUGE, FAM_HISTOGRAM, FAM_INFO };

/*
 * A family's metadata. OpenMetrics names a counter's family without "_total" and an info's
 * without "_info", and has # UNIT; the text format 0.0.4 names the samples' own name and knows
 * neither counter suffixes nor info (a gauge of 1 there).
 */
static void family(FILE *f, enum expo_format fmt, const char *name, enum family_type type, const char *unit,
		   const char *help)
{
	static const char *const om_type[] = { "counter", "gauge", "histogram", "info" };
	static const char *const text_type[] = { "counter", "gauge", "histogram", "gauge" };
	const char *suffix = "";

	if (fmt == EXPO_TEXT)
		suffix = type == FAM_COUNTER ? "_total" : type == FAM_INFO ? "_info" : "";
	fprintf(f, "# HELP %s%s %s\n", name, suffix, help);
	fprintf(f, "# TYPE %s%s %s\n", name, suffix, fmt == EXPO_TEXT ? text_type[type] : om_type[type]);
	if (unit && fmt == EXPO_OPENMETRICS)
		fprintf(f, "# UNIT %s %s\n", name, unit);
}

static void label_sample(FILE *f, const char *name, const char *suffix, const struct expo_series *s,
			 const char *site, uint64_t v)
{
	fprintf(f, "%s%s{", name, suffix);
	if (site)
		fprintf(f, "site=\"%s\",", site);
	fprintf(f, "comm=\"%s\",cgroup=\"%s\"} %llu\n", s->comm, s->cgroup, (unsigned long long)v);
}

/* The written series: those admitted, then "other" once anything was folded into it. */
static const struct expo_series *next_series(const struct expo *e, const struct expo_series *s)
{
	const struct expo_series *other = &e->series[e->max_series];

	s = s ? s + 1 : e->series;
	if (s == e->series + e->nseries)
		s = other;
	if (s > other || (s == other && !other->used))
		return NULL;
	return s;
}

#define for_each_series(e, s) for (const struct expo_series *s = next_series(e, NULL); s; s = next_series(e, s))

/* Whether site @i's bytes come from the TCP sockets' counters, its calls not counted. */
static bool site_derived(const struct expo *e, int i)
{
	return (i == SITE_SEND_COPY && e->tcp_derived & TCP_DERIVED_SEND) ||
	       (i == SITE_RECV_COPY && e->tcp_derived & TCP_DERIVED_RECV);
}

static void write_site_counters(FILE *f, const struct expo *e, enum expo_format fmt)
{
	family(f, fmt, "zctrace_copies", FAM_COUNTER, NULL,
	       "Copies (or pins and page references, see zctrace_site_info's cpu_copy) at each copy site; none "
	       "for a TCP site counted from the sockets' own byte counters, whose calls are not counted");
	for_each_series(e, s)
		for (int i = 0; i < NR_SITES; i++)
			if (s->seen_sites & 1ULL << i && !site_derived(e, i))
				label_sample(f, "zctrace_copies", "_total", s, site_name(i), s->figs.site[i].count);
	family(f, fmt, "zctrace_copy_bytes", FAM_COUNTER, "bytes", "Bytes copied (or pinned, referenced) at each copy site");
	for_each_series(e, s)
		for (int i = 0; i < NR_SITES; i++)
			if (s->seen_sites & 1ULL << i)
				label_sample(f, "zctrace_copy_bytes", "_total", s, site_name(i), s->figs.site[i].bytes);
}

/* --cost: each site's copies' CPU time by label pair, where the sampler found any */
static void write_cpu(FILE *f, const struct expo *e, enum expo_format fmt)
{
	if (!e->sample_ns)
		return;
	family(f, fmt, "zctrace_copy_cpu_seconds", FAM_COUNTER, "seconds",
	       "CPU time in each copy site's copies, from the kernel's stacks sampled on every CPU (--cost)");
	for_each_series(e, s)
		for (int i = 0; i < NR_SITES; i++)
			if (s->figs.cpu_samples[i])
				fprintf(f, "zctrace_copy_cpu_seconds_total{site=\"%s\",comm=\"%s\",cgroup=\"%s\"} %.6f\n",
					site_name(i), s->comm, s->cgroup, s->figs.cpu_samples[i] * (e->sample_ns / 1e9));
	family(f, fmt, "zctrace_cost_sample_seconds", FAM_GAUGE, "seconds",
	       "The CPU time one sample of the sampler stands for (--cost: 1/HZ, cpu-clock)");
	fprintf(f, "zctrace_cost_sample_seconds %.9f\n", e->sample_ns / 1e9);
}

static void write_label_counter(FILE *f, const struct expo *e, enum expo_format fmt, const char *name,
				const char *help, uint64_t (*figure)(const struct census_figs *))
{
	family(f, fmt, name, FAM_COUNTER, "bytes", help);
	for_each_series(e, s)
		label_sample(f, name, "_total", s, NULL, figure(&s->figs));
}

static uint64_t unattributed_of(const struct census_figs *fg)
{
	return fg->unattributed;
}

static uint64_t tcp_sent_of(const struct census_figs *fg)
{
	return fg->tcp_sent;
}

static uint64_t tcp_received_of(const struct census_figs *fg)
{
	return fg->tcp_received;
}

static void scalar(FILE *f, enum expo_format fmt, const char *name, enum family_type type, const char *help,
		   uint64_t v);

/* TCP bytes from the sockets' own counters, where they are measured: no series, not 0, elsewhere */
static void write_tcp(FILE *f, const struct expo *e, enum expo_format fmt)
{
	if (!e->tcp_counters)
		return;
	write_label_counter(f, e, fmt, "zctrace_tcp_sent_bytes",
			    "TCP bytes the processes gave their sockets to send, copied, pinned (MSG_ZEROCOPY) or "
			    "page-referenced (sendfile, splice), from each socket's own counters (write_seq)",
			    tcp_sent_of);
	write_label_counter(f, e, fmt, "zctrace_tcp_received_bytes",
			    "TCP bytes the processes' sockets gave them, read, spliced or mapped, from each socket's own "
			    "counters (copied_seq); bytes read with MSG_PEEK are not in it", tcp_received_of);
	family(f, fmt, "zctrace_tcp_socket_shared", FAM_GAUGE, NULL,
	       "1 where a process of the label pair held a TCP socket that another process held too, at the last "
	       "read: its bytes are counted once, to the process that opened, accepted or first held it");
	for_each_series(e, s)
		if (s->tcp_shared_read == e->reads)
			label_sample(f, "zctrace_tcp_socket_shared", "", s, NULL, 1);
	scalar(f, fmt, "zctrace_tcp_unowned_sent_bytes", FAM_COUNTER,
	       "TCP bytes sent through sockets that ended before any process was found to own them",
	       e->tcp_unowned_sent);
	scalar(f, fmt, "zctrace_tcp_unowned_received_bytes", FAM_COUNTER,
	       "TCP bytes received through sockets that ended before any process was found to own them",
	       e->tcp_unowned_received);
}

/* One histogram per counted site over every process: log2 slots as cumulative buckets. */
static void write_histograms(FILE *f, const struct expo *e, enum expo_format fmt)
{
	char le[32];

	family(f, fmt, "zctrace_copy_size_bytes", FAM_HISTOGRAM, "bytes",
	       "Size of each copy at each copy site, every process (log2 buckets: le = 2^(k+1)-1)");
	for (int i = 0; i < NR_SITES; i++) {
		const struct site_stats *st = &e->all.site[i];
		uint64_t cum = 0, all = 0;

		/* a site counted from the sockets' counters has no calls, so no sizes */
		if (e->site_method[i] == METHOD_NONE || site_derived(e, i))
			continue;
		for (int k = 0; k < MAX_SLOTS; k++)
			all += st->hist[k];
		for (int k = 0; k < EXPO_BUCKETS; k++) {
			cum += st->hist[k];
			expo_bucket_le(le, sizeof(le), k);
			fprintf(f, "zctrace_copy_size_bytes_bucket{site=\"%s\",le=\"%s\"} %llu\n", site_name(i), le,
				(unsigned long long)cum);
		}
		fprintf(f, "zctrace_copy_size_bytes_bucket{site=\"%s\",le=\"+Inf\"} %llu\n", site_name(i),
			(unsigned long long)all);
		fprintf(f, "zctrace_copy_size_bytes_sum{site=\"%s\"} %llu\n", site_name(i),
			(unsigned long long)st->bytes);
		fprintf(f, "zctrace_copy_size_bytes_count{site=\"%s\"} %llu\n", site_name(i), (unsigned long long)all);
	}
}

static void write_sites(FILE *f, const struct expo *e, enum expo_format fmt)
{
	char why[512];
	const char *w;

	family(f, fmt, "zctrace_site", FAM_INFO, NULL,
	       "How each copy site is counted: its attach method (none: not measured, and why) and whether the CPU "
	       "copies there");
	for (int i = 0; i < NR_SITES; i++) {
		w = e->site_method[i] == METHOD_NONE && e->site_why[i] ? e->site_why[i] : "";
		expo_label_value(why, sizeof(why), w, strlen(w));
		fprintf(f, "zctrace_site_info{site=\"%s\",method=\"%s\",cpu_copy=\"%s\",why_not=\"%s\"} 1\n",
			site_name(i), method_name(e->site_method[i]), is_cpu_copy(i) ? "true" : "false", why);
	}
	family(f, fmt, "zctrace_census", FAM_INFO, NULL,
	       "What the census measures beside the sites: unattributed bytes (the boundary account), and why not");
	w = e->account || !e->account_why ? "" : e->account_why;
	expo_label_value(why, sizeof(why), w, strlen(w));
	fprintf(f, "zctrace_census_info{unattributed=\"%s\",why_not=\"%s\"} 1\n", e->account ? "measured" : "none",
		why);
}

static void write_costs(FILE *f, const struct expo *e, enum expo_format fmt)
{
	const struct prog_stats *ps = e->costs;

	if (!ps)
		return;
	family(f, fmt, "zctrace_bpf_run_seconds", FAM_COUNTER, "seconds",
	       "CPU time in the census's BPF programs, every invocation (the kernel's bpf_stats)");
	for (int i = 0; i < ps->n; i++)
		fprintf(f, "zctrace_bpf_run_seconds_total{program=\"%s\"} %.9f\n", ps->p[i].name,
			ps->p[i].run_time_ns / 1e9);
	family(f, fmt, "zctrace_bpf_events", FAM_COUNTER, NULL,
	       "Invocations of the census's BPF programs (the kernel's bpf_stats)");
	for (int i = 0; i < ps->n; i++)
		fprintf(f, "zctrace_bpf_events_total{program=\"%s\"} %llu\n", ps->p[i].name,
			(unsigned long long)ps->p[i].events);
}

static void scalar(FILE *f, enum expo_format fmt, const char *name, enum family_type type, const char *help,
		   uint64_t v)
{
	family(f, fmt, name, type, NULL, help);
	fprintf(f, "%s%s %llu\n", name, type == FAM_COUNTER ? "_total" : "", (unsigned long long)v);
}

static void write_bookkeeping(FILE *f, const struct expo *e, enum expo_format fmt)
{
	scalar(f, fmt, "zctrace_census_evicted", FAM_COUNTER,
	       "(process, site) keys the kernel evicted from the census's map: their counts since the last read are lost",
	       e->evicted);
	scalar(f, fmt, "zctrace_census_dropped", FAM_COUNTER,
	       "Census updates the kernel could not store (no room): counts lost", e->dropped);
	scalar(f, fmt, "zctrace_census_program_runs_skipped", FAM_COUNTER,
	       "Runs of the census's BPF programs the kernel skipped (another held the CPU, or it was preempted "
	       "inside itself): counts lost", e->skipped);
	scalar(f, fmt, "zctrace_census_keys", FAM_GAUGE, "(process, site) keys the census's map holds now", e->keys);
	scalar(f, fmt, "zctrace_census_max_keys", FAM_GAUGE, "(process, site) keys the census's map can hold",
	       e->max_keys);
	scalar(f, fmt, "zctrace_census_reads", FAM_COUNTER, "Reads of the census's maps", e->reads);
	scalar(f, fmt, "zctrace_series", FAM_GAUGE, "(comm, cgroup) label pairs with series of their own (--max-series)",
	       e->nseries);
	scalar(f, fmt, "zctrace_series_folded", FAM_COUNTER,
	       "(comm, cgroup) label pairs folded into comm=\"other\",cgroup=\"other\" past --max-series, once per read "
	       "that saw them", e->folded);
}

int expo_write(FILE *f, const struct expo *e, enum expo_format fmt)
{
	write_site_counters(f, e, fmt);
	write_label_counter(f, e, fmt, "zctrace_payload_bytes",
			    "Payload: the most bytes moved one way (to or from user memory, page references, kernel copies)",
			    census_payload);
	/* without the boundary account nothing says what no site explained: no series, not 0 */
	if (e->account)
		write_label_counter(f, e, fmt, "zctrace_unattributed_bytes",
				    "Bytes that crossed to or from user memory that no copy site explains",
				    unattributed_of);
	write_tcp(f, e, fmt);
	write_cpu(f, e, fmt);
	write_histograms(f, e, fmt);
	write_sites(f, e, fmt);
	write_costs(f, e, fmt);
	write_bookkeeping(f, e, fmt);
	if (fmt == EXPO_OPENMETRICS)
		fprintf(f, "# EOF\n");
	return fflush(f) || ferror(f) ? -EIO : 0;
}

/* OpenMetrics only when the client names it: a scraper that does not gets the older format. */
enum expo_format expo_negotiate(const char *accept)
{
	return accept && strstr(accept, "application/openmetrics-text") ? EXPO_OPENMETRICS : EXPO_TEXT;
}

const char *expo_content_type(enum expo_format fmt)
{
	return fmt == EXPO_OPENMETRICS ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
					 "text/plain; version=0.0.4; charset=utf-8";
}
