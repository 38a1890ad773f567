/*
 * The exposition over hand-built census reads: label pairs past the bound folded into "other",
 * totals kept across a process's exit, label values escaped. Checks the aggregate, then writes
 * the metrics in the format its argument names ("openmetrics" or "text") for promtool and an
 * OpenMetrics parser to judge (tests/run.py: export_exposition_format).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/exposition.h"

#define MAX_SERIES 4

static int failed;

#define EXPECT(cond, ...)                                                                        \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			failed++;                                                                \
			fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
			fprintf(stderr, __VA_ARGS__);                                            \
			fprintf(stderr, "\n");                                                   \
		}                                                                                \
	} while (0)

static struct census_proc procs[8];

/* A row of @n copies of @size bytes each at @site. */
static struct census_proc *row(int i, uint32_t tgid, const char *comm, const char *cgroup, int site,
			       uint64_t n, uint64_t size)
{
	struct census_proc *p = &procs[i];
	int slot = 0;

	memset(p, 0, sizeof(*p));
	p->tgid = tgid;
	memcpy(p->comm, comm, strnlen(comm, CENSUS_COMM_LEN - 1));
	snprintf(p->cgroup, sizeof(p->cgroup), "%s", cgroup);
	while (slot < MAX_SLOTS - 1 && size >> (slot + 1))
		slot++;
	p->delta.site[site].count = n;
	p->delta.site[site].bytes = n * size;
	p->delta.site[site].hist[slot] = n;
	p->delta.from_user = n * size;
	return p;
}

static const struct expo_series *series(const struct expo *e, const char *comm, const char *cgroup)
{
	for (int i = 0; i <= e->max_series; i++)
		if (!strcmp(e->series[i].comm, comm) && !strcmp(e->series[i].cgroup, cgroup))
			return &e->series[i];
	return NULL;
}

static void read_once(struct expo *e, int n)
{
	struct census_snap snap = { .procs = procs, .nprocs = n, .evicted = 2, .dropped = 1, .keys = n,
				    .max_keys = 64, .interval_s = 1 };

	expo_add(e, &snap);
}

static void check_labels(void)
{
	char out[64];

	expo_label_value(out, sizeof(out), "a\"b\\c\nd", 7);
	EXPECT(!strcmp(out, "a\\\"b\\\\c\\nd"), "%s", out);
	expo_label_value(out, sizeof(out), "x\xff\xc3\xa9\xed\xa0\x80y", 8);
	EXPECT(!strcmp(out, "x?\xc3\xa9???y"), "%s", out);
	/* cut to fit whole: an escape or a character is never split */
	expo_label_value(out, 5, "ab\"c", 4);
	EXPECT(!strcmp(out, "ab\\\""), "%s", out);
	expo_label_value(out, 4, "ab\"c", 4);
	EXPECT(!strcmp(out, "ab"), "%s", out);
	expo_label_value(out, 4, "a\xc3\xa9" "b", 4);
	EXPECT(!strcmp(out, "a\xc3\xa9"), "%s", out);
	expo_label_value(out, 3, "a\xc3\xa9" "b", 4);
	EXPECT(!strcmp(out, "a"), "%s", out);
	expo_bucket_le(out, sizeof(out), 0);
	EXPECT(!strcmp(out, "1"), "%s", out);
	expo_bucket_le(out, sizeof(out), 16);
	EXPECT(!strcmp(out, "131071"), "%s", out);
	EXPECT(expo_negotiate("application/openmetrics-text;version=1.0.0,text/plain;q=0.5") == EXPO_OPENMETRICS,
	       "openmetrics");
	EXPECT(expo_negotiate("text/plain") == EXPO_TEXT && expo_negotiate(NULL) == EXPO_TEXT, "text");
}

int main(int argc, char **argv)
{
	enum expo_format fmt = argc > 1 && !strcmp(argv[1], "text") ? EXPO_TEXT : EXPO_OPENMETRICS;
	const struct expo_series *s;
	struct expo e;

	check_labels();
	if (expo_init(&e, MAX_SERIES) || expo_init(&e, 0) == 0)
		return 1;
	expo_init(&e, MAX_SERIES);
	for (int i = 0; i < NR_SITES; i++)
		e.site_method[i] = i == SITE_USER_COPY ? METHOD_NONE : METHOD_TP_BTF;
	/* "no-account": a kernel that refused the boundary probe */
	e.account = !(argc > 2 && !strcmp(argv[2], "no-account"));

	/* a web server and a cache; a name with every character a label value must escape */
	row(0, 100, "nginx", "/system.slice/nginx.service", SITE_UNIX_SEND_COPY, 2, 500);
	row(1, 200, "redis", "/system.slice/redis.service", SITE_RECV_COPY, 5, 1000);
	row(2, 300, "we\"ird\\na\xff", "/user.slice", SITE_PIPE_WRITE_COPY, 1, 1);
	read_once(&e, 3);
	/* nginx exits; three newcomers for one free series: the heaviest takes it */
	row(0, 100, "nginx", "/system.slice/nginx.service", SITE_UNIX_SEND_COPY, 1, 100)->exited = true;
	row(1, 400, "small", "/a", SITE_SEND_COPY, 1, 10);
	row(2, 401, "big", "/b", SITE_SEND_COPY, 3, 65536);
	row(3, 402, "small", "/a", SITE_SEND_COPY, 1, 20);
	row(4, 403, "mid", "/c", SITE_SEND_COPY, 1, 4096);
	read_once(&e, 5);
	/* nginx again, a new process under the same labels: the same series goes on */
	row(0, 500, "nginx", "/system.slice/nginx.service", SITE_UNIX_SEND_COPY, 1, 7);
	row(1, 501, "late", "/d", SITE_FILE_READ_COPY, 1, 3);
	read_once(&e, 2);

	EXPECT(e.nseries == MAX_SERIES, "%d series", e.nseries);
	s = series(&e, "nginx", "/system.slice/nginx.service");
	EXPECT(s && s->figs.site[SITE_UNIX_SEND_COPY].bytes == 1107 && s->figs.site[SITE_UNIX_SEND_COPY].count == 4,
	       "nginx: its exited process's bytes kept");
	EXPECT(series(&e, "big", "/b") && !series(&e, "mid", "/c") && !series(&e, "small", "/a"),
	       "the heaviest newcomer admitted");
	s = &e.series[MAX_SERIES];
	EXPECT(e.folded == 3, "%llu folds (small and mid, then late)", (unsigned long long)e.folded);
	EXPECT(s->used && s->figs.site[SITE_SEND_COPY].bytes == 4126 && s->figs.site[SITE_FILE_READ_COPY].bytes == 3,
	       "other: %llu", (unsigned long long)s->figs.site[SITE_SEND_COPY].bytes);
	EXPECT(series(&e, "we\\\"ird\\\\na?", "/user.slice"), "escaped comm");
	EXPECT(e.all.site[SITE_SEND_COPY].hist[16] == 3 && e.all.site[SITE_SEND_COPY].count == 6,
	       "the histogram over every process");
	EXPECT(e.reads == 3 && e.evicted == 2 && e.keys == 2, "bookkeeping");
	if (failed) {
		fprintf(stderr, "exposition: %d failed\n", failed);
		return 1;
	}
	return expo_write(stdout, &e, fmt) ? 1 : 0;
}
