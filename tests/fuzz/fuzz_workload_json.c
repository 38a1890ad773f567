/*
 * libFuzzer target: the workload's JSON report on its way through zctrace. The input is what a
 * workload writes to ZCTRACE_RESULT_FD; it is read as zctrace reads it (report_pipe_read), and put
 * in a ledger with the workload it names (its "workload" key; otherwise one picked by the input),
 * beside kernel figures made up from the input's hash, as ledger_collect would leave them. Then
 * ledger_check, ledger_print and ledger_json run on it, as after a real run: they must not crash,
 * leak or misbehave, and the JSON ledger must be valid JSON that holds the workload's report.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ledger/checks.h"
#include "os/cli.h"
#include "os/jsonpath.h"
#include "ledger/ledger.h"
#include "ledger/micro.h"
#include "report/report_json.h"
#include "report/report_text.h"

static FILE *devnull;

static void fail(const char *what) __attribute__((noreturn));
static void fail(const char *what)
{
	fprintf(stderr, "fuzz_workload_json: %s\n", what);
	abort();
}

/* splitmix64: the made-up kernel figures, a function of the input */
static uint64_t next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Small, large, or one of the workload's own figures: every comparison can go both ways. */
static __u64 figure(uint64_t *st, json_object *wl)
{
	static const char *const keys[] = { "bytes", "bytes_received", "request_bytes", "file_size",
					    "zerocopy.notices", "zerocopy.completed", "source.pages" };
	uint64_t r = next(st);

	switch (r % 4) {
	case 0: return 0;
	case 1: return (r >> 8) % 1000;
	case 2: return json_u64(wl, keys[(r >> 8) % (sizeof(keys) / sizeof(keys[0]))], NULL);
	default: return r >> (r % 64);
	}
}

static void fill_probes(struct probe_choice *choice, uint64_t *st)
{
	for (int s = 0; s < NR_PROBES; s++) {
		int n = 0;

		while (n < MAX_CANDIDATES && probe_sites[s].cands[n].label)
			n++;
		choice[s].chosen = (int)(next(st) % (n + 1)) - 1;	/* -1: none attached */
		for (int c = 0; c < MAX_CANDIDATES; c++)
			snprintf(choice[s].why_not[c], sizeof(choice[s].why_not[c]), "refused (fuzz)");
	}
}

/* Half the inputs: a --netns run, its namespaces named and their inodes known. */
static void fill_netns(struct netns_pair *np, uint64_t *st)
{
	if (!(next(st) % 2))
		return;
	snprintf(np->sender, sizeof(np->sender), "zctrace-1-tx");
	snprintf(np->receiver, sizeof(np->receiver), "zctrace-1-rx");
	snprintf(np->sender_dev, sizeof(np->sender_dev), "zct-1-tx");
	snprintf(np->receiver_dev, sizeof(np->receiver_dev), "zct-1-rx");
	np->sender_ino = 4026532001U;
	np->receiver_ino = 4026532002U;
	np->rate = next(st) % 2 ? "1gbit" : NULL;
	np->delay = next(st) % 2 ? "1ms" : NULL;
}

/* A microbenchmark's figures per step. */
static void fill_steps(struct micro *m, json_object *wl, uint64_t *st)
{
	for (int s = 0; s < MAX_STEPS; s++) {
		__u64 *fig = (__u64 *)&m->steps.stats[s];

		for (size_t i = 0; i < sizeof(m->steps.stats[s]) / sizeof(__u64); i++)
			fig[i] = next(st) % 4 ? 0 : figure(st, wl);
		for (uint64_t k = next(st) % 4; k; k--)
			m->steps.syscalls[s][next(st) % MAX_SYSCALLS] = figure(st, wl);
	}
}

/* Three inputs in four: perf counters, some counted. */
static void fill_perf(struct ledger *l, struct perf_set *perf, json_object *wl, uint64_t *st)
{
	if (!(next(st) % 4))
		return;
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		perf->c[i].name = perf_counter_name(i);
		perf->c[i].counted = next(st) % 4;
		perf->c[i].supported = perf->c[i].counted;
		perf->c[i].value = (double)figure(st, wl);
		snprintf(perf->c[i].why, sizeof(perf->c[i].why), "not counted (fuzz)");
	}
	l->perf = perf;
}

static void fill_ledger(struct ledger *l, struct micro *m, json_object *wl, uint64_t *st,
			struct perf_set *perf, struct netns_pair *np)
{
	__u64 sender = json_u64(wl, "sender_pid", NULL), receiver = json_u64(wl, "receiver_pid", NULL);

	for (int s = 0; s < NR_SITES; s++) {
		l->method[s] = site_method_of(l->choice, s, &l->method_label[s]);
		l->k.site[s].count = figure(st, wl);
		l->k.site[s].bytes = figure(st, wl);
		for (uint64_t k = next(st) % 4; k; k--)	/* a few slots: each used one is a JSON object */
			l->k.site[s].hist[next(st) % MAX_SLOTS] = figure(st, wl);
	}
	l->k.sched.voluntary = figure(st, wl);
	l->k.sched.involuntary = figure(st, wl);
	l->k.sched.offcpu_ns = figure(st, wl);
	for (uint64_t k = next(st) % 4; k; k--)
		l->k.sched.offcpu_hist[next(st) % MAX_SLOTS] = figure(st, wl);
	for (uint64_t k = next(st) % 32; k; k--) {
		l->k.syscalls[next(st) % MAX_SYSCALLS] = figure(st, wl);
		l->k.phase_syscalls[next(st) % MAX_SYSCALLS] = figure(st, wl);
	}
	l->k.npc = next(st) % 4 ? next(st) % 4 : next(st) % (MAX_PC_FILES + 1);
	for (int i = 0; i < l->k.npc; i++) {
		l->k.pc_key[i] = (struct pc_key){ .ino = next(st) % 2 ? json_u64(wl, "source.ino", NULL) : next(st),
						.dev = (__u32)(json_u64(wl, "source.dev_major", NULL) << 20 |
							       json_u64(wl, "source.dev_minor", NULL)) };
		l->k.pc_pages[i] = figure(st, wl);
	}
	{
		__u64 *misc = (__u64 *)&l->k.misc;

		for (size_t i = 0; i < sizeof(l->k.misc) / sizeof(__u64); i++)
			misc[i] = figure(st, wl);
	}
	l->k.nprocs = next(st) % 8;
	l->k.nproc_sites = next(st) % 4 ? next(st) % 4 : next(st) % (MAX_PROC_SITES + 1);
	for (int i = 0; i < l->k.nproc_sites; i++) {
		uint64_t r = next(st);

		l->k.procs[i].tgid = r % 3 == 0 ? (__u32)sender : r % 3 == 1 ? (__u32)receiver : (__u32)(r >> 32);
		for (int s = 0; s < NR_SITES; s++) {
			l->k.procs[i].count[s] = figure(st, wl);
			l->k.procs[i].bytes[s] = figure(st, wl);
		}
	}
	l->k.nzp = next(st) % 4 ? next(st) % 4 : next(st) % (MAX_ZC_PATHS + 1);
	for (int i = 0; i < l->k.nzp; i++) {
		uint64_t r = next(st);
		const __u32 ns[] = { np->host_ino, np->sender_ino, np->receiver_ino, (__u32)r };

		l->k.zp_key[i] = (struct zc_path_key){ .tgid = (__u32)sender, .netns = ns[r % 4],
						     .ifindex = (r >> 8) % 16, .stage = (r >> 16) % NR_ZC_STAGES };
		l->k.zp[i] = (struct zc_path_stats){ figure(st, wl), figure(st, wl), figure(st, wl) };
		snprintf(l->k.zp[i].dev, sizeof(l->k.zp[i].dev), "%s", r % 2 ? "lo" : np->receiver_dev);
	}
	fill_netns(np, st);
	l->net = np;
	fill_steps(m, wl, st);
	fill_perf(l, perf, wl, st);
	l->phase_gated = next(st) % 2;
	l->exit_status = (int)(next(st) % 4) - 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	devnull = fopen("/dev/null", "w");
	return !devnull;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct probe_choice choice[NR_PROBES];
	static struct perf_set perf;
	static struct ledger *l;
	static struct micro *m;
	struct netns_pair np;
	json_object *wl, *root;
	const char *text;
	uint64_t st = 0xcbf29ce484222325ULL;
	char path[160];
	bool found;
	int fd;

	/* zctrace reads the report from a pipe; a memfd gives the same reads without a writer */
	fd = memfd_create("workload-result", MFD_CLOEXEC);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || lseek(fd, 0, SEEK_SET))
		fail("memfd");
	wl = report_pipe_read(fd);
	close(fd);
	if (!size && wl)
		fail("an empty report parsed as JSON");

	for (size_t i = 0; i < size; i++)
		st = (st ^ data[i]) * 0x100000001b3ULL;

	/* the readers themselves, on a path taken from the input (longer than their buffer, too) */
	snprintf(path, sizeof(path), "%.*s", (int)(size < sizeof(path) - 1 ? size : sizeof(path) - 1),
		 (const char *)data);
	if (json_u64(wl, path, &found) && !found)
		fail("json_u64: a value for a path not found");
	if (!json_str(wl, path, NULL) != !(wl && json_object_is_type(json_object_object_get(wl, path),
								     json_type_string)))
		fail("json_str: a string found where there is none, or none where there is one");

	/* as zctrace does, on the heap (it is large); once, and cleared for every input */
	if ((!l && !(l = malloc(sizeof(*l)))) || (!m && !(m = malloc(sizeof(*m)))))
		fail("out of memory");
	memset(l, 0, sizeof(*l));
	memset(m, 0, sizeof(*m));
	memset(&perf, 0, sizeof(perf));
	netns_init(&np);
	fill_probes(choice, &st);
	l->choice = choice;
	l->target = "fuzz";
	ledger_set_report(l, wl);
	l->def = find_workload(json_str(wl, "workload", ""));
	if (!l->def && next(&st) % 4)
		l->def = &workload_defs[next(&st) % nr_workload_defs];
	fill_ledger(l, m, wl, &st, &perf, &np);

	ledger_check(l);
	if (l->def && l->def->micro && wl)
		micro_check(m, l);
	else
		m->nassumptions = 0;
	if (l->nchecks < 0 || l->nchecks > MAX_CHECKS || m->nassumptions < 0 ||
	    m->nassumptions > MAX_ASSUMPTIONS)
		fail("check or assumption count out of range");
	ledger_print(devnull, l, l->def && l->def->micro ? m : NULL, next(&st) % 2, next(&st) % 2);
	root = ledger_json(l, l->def && l->def->micro ? m : NULL);
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	{
		json_object *back = json_tokener_parse(text), *w;

		if (!back)
			fail("ledger_json wrote something that is not JSON");
		if (!json_object_object_get_ex(back, "workload", &w) || !w != !wl)
			fail("the JSON ledger lost the workload's report");
		if (json_object_get_boolean(json_object_object_get(back, "ok")) != ledger_ok(l))
			fail("the JSON ledger's ok differs from the checks");
		json_object_put(back);
	}
	json_object_put(root);
	json_object_put(wl);
	return 0;
}
