/* Unit tests of zctrace's pure pieces: size parsing, histograms, lookups, the probe table. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/hist.h"
#include "ledger/checks.h"
#include "ledger/costs.h"
#include "os/jsonpath.h"
#include "ledger/ledger.h"
#include "trace/probes.h"
#include "os/sysnames.h"
#include "os/utf8.h"
#include "workloads/lib/wl.h"
#include "trace/workloads.h"

static int passed, failed;

#define EXPECT(cond, ...)                                                                        \
	do {                                                                                     \
		if (cond) {                                                                      \
			passed++;                                                                \
		} else {                                                                         \
			failed++;                                                                \
			printf("FAIL unit %s:%d: %s: ", __FILE__, __LINE__, #cond);              \
			printf(__VA_ARGS__);                                                     \
			printf("\n");                                                            \
		}                                                                                \
	} while (0)

static void test_parse_size(void)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "1", 1 }, { "1K", 1024 }, { "64K", 65536 }, { "1M", 1 << 20 }, { "2G", 2ULL << 30 },
		{ "4KiB", 4096 }, { "16k", 16384 }, { "9223372036854775807", INT64_MAX }, { "8589934591G", 8589934591ULL << 30 },
	};
	/* 2^63 and beyond do not fit the signed 64-bit figures the sizes become */
	static const char *const bad[] = { "", "K", "-1", "1X", "1KK", "12 ", "99999999999999999999G", "1e99", "12Q",
					   " -1", "+1", " 1", "1i", "1iB", "1KiBB",
					   "9223372036854775808", "18446744073709551616", "16777216T", "99999999999G",
					   "8589934592G" };
	uint64_t v;

	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		EXPECT(wl_parse_size(ok[i].s, &v) == 0 && v == ok[i].v, "'%s'", ok[i].s);
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT(wl_parse_size(bad[i], &v) != 0, "'%s' accepted", bad[i]);
}

static void test_parse_seconds(void)
{
	static const char *const bad[] = { "", "0", "-1", " 1", "+1", "nan", "inf", "0x10", "1e", "1s",
					   "86401", "1e-400" };
	double d;

	EXPECT(wl_parse_seconds("1.5", 86400, &d) == 0 && d == 1.5, "1.5");
	EXPECT(wl_parse_seconds(".25", 86400, &d) == 0 && d == 0.25, ".25");
	EXPECT(wl_parse_seconds("1e3", 86400, &d) == 0 && d == 1000, "1e3");
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		EXPECT(wl_parse_seconds(bad[i], 86400, &d) != 0, "'%s' accepted", bad[i]);
	/* tc's rates: NaN passed every bound and was then converted to an integer */
	uint64_t v;

	EXPECT(wl_parse_rate("nanbit", &v) != 0 && wl_parse_rate(" 1gbit", &v) != 0, "nan rate accepted");
	EXPECT(wl_parse_rate("1.5gbit", &v) == 0 && v == 1500000000, "1.5gbit");
}

static void test_latency_hist(void)
{
	static struct lat_hist h;

	for (uint64_t ns = 1; ns <= 1000; ns++)
		lat_record(&h, ns * 1000);
	EXPECT(h.count == 1000 && h.min_ns == 1000 && h.max_ns == 1000000, "count/min/max");
	/* 16 sub-buckets per power of two: within 1/16 below the exact value */
	EXPECT(lat_percentile(&h, 50) <= 500000 && lat_percentile(&h, 50) >= 500000 * 15 / 16,
	       "p50 %llu", (unsigned long long)lat_percentile(&h, 50));
	EXPECT(lat_percentile(&h, 99) <= 990000 && lat_percentile(&h, 99) >= 990000 * 15 / 16,
	       "p99 %llu", (unsigned long long)lat_percentile(&h, 99));
	EXPECT(lat_percentile(&h, 100) == 1000000, "p100");
}

static void test_log2_hist_print(void)
{
	__u64 vals[MAX_SLOTS] = { [10] = 4, [12] = 2 };
	char buf[4096] = "";
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	print_log2_hist(f, vals, MAX_SLOTS, "bytes");
	fclose(f);
	EXPECT(strstr(buf, "1024 -> 2047       : 4") != NULL, "%s", buf);
	EXPECT(strstr(buf, "4096 -> 8191       : 2") != NULL, "%s", buf);
	EXPECT(strstr(buf, "512 ->") == NULL, "starts at the first used slot: %s", buf);
	EXPECT(strstr(buf, "8192 ->") == NULL, "stops at the last used slot: %s", buf);
}

static void test_lookups(void)
{
	enum method m;
	json_object *o = json_tokener_parse("{\"a\":{\"b\":42},\"c\":7}");
	bool found;

	EXPECT(find_workload("tcp-twocopy") != NULL, "tcp-twocopy");
	EXPECT(find_workload("tcp-2copy") == NULL, "unknown workload");
	EXPECT(parse_method("tracepoint", &m) == 0 && m == METHOD_TP_BTF, "tracepoint");
	EXPECT(parse_method("fentry", &m) == 0 && m == METHOD_FENTRY, "fentry");
	EXPECT(parse_method("bogus", &m) != 0, "bogus method");
	EXPECT(json_u64(o, "a.b", &found) == 42 && found, "a.b");
	EXPECT(json_u64(o, "a.x", &found) == 0 && !found, "a.x");
	EXPECT(syscall_name(-1) == NULL && syscall_name(MAX_SYSCALLS) == NULL, "out of range");
	json_object_put(o);
}

/*
 * Every site offers a tracepoint-class path (what works where fentry/kprobes do not), and its
 * candidates come best first: those that follow the I/O call from its entry, then the standalone
 * ones (the census's, without the syscall tracepoints), each best first. The census's own row
 * (an iterator) has none: without it the census counts in the sites hash; nor has tx_copy; the
 * sampler's perf event works on every kernel zctrace loads on; timed copies are fentry's alone,
 * asked for as a cross-check of the sampler; the TCP counters are tracepoints and an iterator
 * already, and where they are refused the copy sites count TCP per call.
 */
static void test_probe_table(void)
{
	for (int s = 0; s < NR_PROBES; s++) {
		const struct probe_site *ps = &probe_sites[s];

		EXPECT(ps->name && ps->cands[0].label, "probe site %d has no row", s);
		if (!ps->name)
			continue;
		/* the census's iterator; the copy on transmit, which no tracepoint marks (counted where
		 * fentry or kprobes are allowed, "not supported" with the reason elsewhere) */
		bool fallback = s == PROBE_CENSUS || s == SITE_TX_COPY || s == PROBE_COST || s == PROBE_COPY_TIME ||
				s == PROBE_TCP_COUNTERS;

		for (int c = 0; c < MAX_CANDIDATES && ps->cands[c].label; c++) {
			const struct candidate *cand = &ps->cands[c], *prev = c ? &ps->cands[c - 1] : NULL;

			if (cand->method == METHOD_TP_BTF || cand->method == METHOD_RAW_TP || cand->method == METHOD_USDT)
				fallback = true;
			EXPECT(!prev || cand->standalone >= prev->standalone, "%s: a standalone candidate before another",
			       ps->name);
			if (prev && cand->standalone == prev->standalone)
				EXPECT(cand->method >= prev->method, "%s: candidates not best first", ps->name);
		}
		EXPECT(fallback, "%s has no tracepoint path", ps->name);
	}
}

/* The workload's report, read as zctrace reads it: typed, its kind declared, bad types refused. */
static void test_report_parse(void)
{
	json_object *o = json_tokener_parse("{\"kind\":\"file-serve\",\"bytes\":65536,\"sender_pid\":7,"
					    "\"chunks\":2.5,\"source\":{\"ino\":12,\"pages\":16},"
					    "\"latency_ns\":{\"p99\":900},\"verified\":true,\"fs\":3}");
	struct wl_report r;

	wl_report_parse(o, &r);
	EXPECT(r.kind == WL_KIND_FILE_SERVE, "kind %d", r.kind);
	EXPECT(r.bytes.found && r.bytes.v == 65536 && !r.bytes_received.found, "bytes");
	EXPECT(r.sender_pid.v == 7 && !r.receiver_pid.found, "pids");
	EXPECT(!r.chunks.found, "a count of chunks that is not a whole number is not one");
	EXPECT(r.source.ino.v == 12 && r.source.pages.v == 16 && !r.dest.ino.found, "files");
	EXPECT(r.has_latency && r.p99.v == 900 && !r.p50.found, "latency");
	EXPECT(r.verified == 1 && r.fs == NULL, "verified, and fs that is not a string");
	json_object_put(o);
	o = json_tokener_parse("{\"kind\":\"tcp\"}");
	wl_report_parse(o, &r);
	EXPECT(r.kind == WL_KIND_UNKNOWN && r.verified == -1, "an unknown kind");
	EXPECT(r.zc_usage_reports == -1, "usage reports not reported");
	json_object_put(o);
	/* io_uring's notifications without usage reports: the copied count is null, not 0 */
	o = json_tokener_parse("{\"zerocopy\":{\"notices\":3,\"notices_copied\":null,\"usage_reports\":false}}");
	wl_report_parse(o, &r);
	EXPECT(r.zc_notices.v == 3 && !r.zc_notices_copied.found && r.zc_usage_reports == 0, "usage reports off");
	json_object_put(o);
	wl_report_parse(NULL, &r);
	EXPECT(r.kind == WL_KIND_UNKNOWN && !r.bytes.found, "no report");
	/* every kind a workload declares reads back as itself */
	for (int k = 0; k < NR_WL_KINDS; k++) {
		char text[64];

		snprintf(text, sizeof(text), "{\"kind\":\"%s\"}", wl_kind_name(k) ? wl_kind_name(k) : "");
		o = json_tokener_parse(text);
		wl_report_parse(o, &r);
		EXPECT(wl_kind_name(k) && r.kind == (enum wl_kind)k, "kind %d: '%s' reads back as %d", k, text, r.kind);
		json_object_put(o);
	}
}

/* A report's lists read into the struct: a microbenchmark's, a file workload's calls, and a list
 * longer than zctrace reads, whose reported length is kept. */
static void test_report_lists(void)
{
	json_object *o = json_tokener_parse(
		"{\"kind\":\"micro\",\"cpu\":1,\"steps\":[{\"step\":1,\"name\":\"a\"},{\"step\":2}],"
		"\"assumptions\":[{\"claim\":\"c\",\"step\":2,\"measure\":\"syscalls\",\"expected\":4,"
		"\"min\":3,\"max\":5},{\"step\":\"x\"}],\"notes\":[\"n\",7,null],"
		"\"results\":[{\"name\":\"r\",\"unit\":\"ns\",\"samples\":9,\"median\":2.5,"
		"\"hist\":[{\"lo\":1,\"hi\":2,\"count\":4}]},{\"unit\":3}],"
		"\"calls\":{\"read\":10,\"write\":11},\"per_chunk\":{\"read\":1}}");
	struct wl_report *r = calloc(1, sizeof(*r));
	json_object *as = json_object_new_array();

	if (!o || !r || !as)
		abort();
	wl_report_parse(o, r);
	EXPECT(r->cpu == 1 && r->nsteps == 2 && r->nsteps_listed == 2 && r->steps[0].id == 1 &&
	       !strcmp(r->steps[0].name, "a") && r->steps[1].id == 2 && !r->steps[1].name, "steps");
	EXPECT(r->has_assumptions && r->nassumptions == 2 && r->assumptions[0].step == 2 &&
	       !strcmp(r->assumptions[0].claim, "c") && !strcmp(r->assumptions[0].measure, "syscalls") &&
	       r->assumptions[0].expected == 4 && r->assumptions[0].min == 3 && r->assumptions[0].max == 5 &&
	       !r->assumptions[1].claim, "assumptions");
	EXPECT(r->nnotes == 3 && !strcmp(r->notes[0], "n") && !r->notes[1] && !r->notes[2], "notes: strings only");
	EXPECT(r->nresults == 2 && !strcmp(r->results[0].name, "r") && r->results[0].samples == 9 &&
	       r->results[0].median == 2.5 && isnan(r->results[0].min) && r->results[0].nhist == 1 &&
	       r->results[0].hist[0].count == 4 && r->results[0].hist[0].hi == 2, "a result and its histogram");
	EXPECT(!r->results[1].name && !r->results[1].unit && r->results[1].nhist == -1, "a result without its figures");
	EXPECT(r->has_calls && r->ncalls == 2 && !strcmp(r->calls[0].name, "read") && r->calls[0].calls == 10 &&
	       r->calls[0].per_chunk == 1 && r->calls[1].calls == 11 && r->calls[1].per_chunk == 0 &&
	       r->ncalls_listed == 2, "calls");
	json_object_put(o);
	o = json_object_new_object();
	for (int i = 0; i < WL_MAX_ASSUMPTIONS + 44; i++)
		json_object_array_add(as, json_object_new_object());
	json_object_object_add(o, "assumptions", as);
	json_object_object_add(o, "calls", json_object_new_object());
	wl_report_parse(o, r);
	EXPECT(r->nassumptions == WL_MAX_ASSUMPTIONS && r->nassumptions_listed == WL_MAX_ASSUMPTIONS + 44,
	       "a long list: %zu read of %zu", r->nassumptions, r->nassumptions_listed);
	EXPECT(!r->has_calls && r->cpu == -1 && !r->nsteps && !r->nresults, "calls without per_chunk, no lists");
	json_object_put(o);
	free(r);
}

/* The check of the runs the kernel skipped, on the figures kfigures_read_skips() leaves. */
static void test_skips_check(void)
{
	static struct probe_choice choice[NR_PROBES];
	static struct ledger l;
	const struct check *c = NULL;

	for (int i = 0; i < NR_PROBES; i++)
		choice[i].chosen = -1;
	l.target = "cmd";
	l.exit_status = -1;
	l.choice = choice;
	l.k.skipped = 7;
	l.k.nskips = 2;
	snprintf(l.k.skips[0].name, sizeof(l.k.skips[0].name), "skb_segment_kprobe");
	l.k.skips[0].runs = 5;
	snprintf(l.k.skips[1].name, sizeof(l.k.skips[1].name), "tcp_sendmsg_kprobe");
	l.k.skips[1].runs = 2;
	ledger_check(&l);
	for (int i = 0; i < l.nchecks; i++)
		if (!strcmp(l.checks[i].name, "no program run skipped"))
			c = &l.checks[i];
	EXPECT(c && !c->ok && strstr(c->detail, "skipped 7 runs") &&
	       strstr(c->detail, "skb_segment_kprobe 5, tcp_sendmsg_kprobe 2"), "%s", c ? c->detail : "no check");
	EXPECT(!ledger_ok(&l), "a skipped run fails the run");
	l.k.skipped = 0;
	l.k.nskips = 0;
	snprintf(l.k.skips_uncounted, sizeof(l.k.skips_uncounted), "not counted before 6.7");
	ledger_check(&l);
	EXPECT(ledger_ok(&l) && l.nchecks >= 1 &&
	       strstr(l.checks[l.nchecks - 1].detail, "whose skips it counts; not counted before 6.7"),
	       "%s", l.nchecks ? l.checks[l.nchecks - 1].detail : "no check");
}

/* The program's own copies: the user-mode samples whose file went unread widen user_copy's interval. */
static void test_user_copy_interval(void)
{
	static struct ledger l;
	struct cost_span plain, wide;
	double v, lo, hi, lo_wide, hi_wide;

	l.cost.measured = true;
	l.cost.period_ns = 1000000;
	l.cost.user_fns = 4;
	l.cost.user_measured = true;
	l.cost.phase[SITE_USER_COPY] = 40;
	l.cost.phase[COST_USER] = 60;
	l.k.site[SITE_USER_COPY].bytes = 1 << 30;
	plain = cost_span_of(&l, SITE_USER_COPY);
	EXPECT(cost_copy_share(&l, &v, &lo, &hi) && fabs(v - 0.4) < 1e-9, "share %f", v);
	l.cost.user_unread = 20;
	l.cost.user_phase = 80;
	wide = cost_span_of(&l, SITE_USER_COPY);
	EXPECT(wide.samples == 40 && wide.ns == plain.ns && wide.lo == plain.lo, "the count and low end stay");
	EXPECT(wide.hi > plain.hi && wide.hi >= 60 * 1e6, "the high end holds the 20 unread: %f", wide.hi);
	EXPECT(cost_copy_share(&l, &v, &lo_wide, &hi_wide) && lo_wide == lo && hi_wide > hi && hi_wide >= 0.6,
	       "the share's high end too: %f", hi_wide);
	/* not measured (cost_read() gives its samples back to user): no class, no figure */
	l.cost.user_measured = false;
	EXPECT(cost_class_of_site(&l, SITE_USER_COPY) < 0 && !cost_ns_per_byte(&l, SITE_USER_COPY, &v, &lo, &hi),
	       "user_copy unmeasured has no time");
}

/* Any bytes in, UTF-8 out: each byte of an invalid sequence (a lone 0xff, a surrogate) as '?'. */
static void test_utf8_scrub(void)
{
	char out[16];

	EXPECT(!strcmp(utf8_scrub(out, sizeof(out), "x\xff\xc3\xa9\xed\xa0\x80y", 8), "x?\xc3\xa9???y"), "%s", out);
	EXPECT(!strcmp(utf8_scrub(out, sizeof(out), "q\"b\\s\n", 6), "q\"b\\s\n"), "%s", out);
	/* a sequence cut short by the end is each of its bytes as '?'; one that does not fit is left out */
	EXPECT(!strcmp(utf8_scrub(out, sizeof(out), "ab\xe2\x82", 4), "ab??"), "%s", out);
	EXPECT(!strcmp(utf8_scrub(out, 4, "ab\xe2\x82\xac", 5), "ab"), "%s", out);
	EXPECT(!strcmp(utf8_scrub(out, sizeof(out), "", 0), ""), "%s", out);
}

int main(void)
{
	test_parse_size();
	test_parse_seconds();
	test_latency_hist();
	test_log2_hist_print();
	test_lookups();
	test_probe_table();
	test_report_parse();
	test_report_lists();
	test_skips_check();
	test_user_copy_interval();
	test_utf8_scrub();
	printf("unit: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
