/*
 * The live view: every interval, the copy sites' copies and bytes per second, the CPU time of
 * their copies (the sampler's), their copy-size histograms (last interval beside the whole run),
 * context switches and syscalls per second.
 * It reads the same kernel maps as the final ledger, and differences two snapshots.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include "report/hist.h"
#include "trace/kfigures.h"
#include "trace/cost.h"
#include "report/live.h"
#include "zctrace.skel.h"

struct live {
	double interval;
	FILE *out;
	bool tty;
	const char *target;
	const struct probe_choice *choice;
	uint64_t t0_ns, last_ns;
	int draws;
	int lines;			/* lines of the last drawing, to redraw over them on a terminal */
	bool phase_gated;
	struct kfigures *prev, *cur;
	struct cost_figures cost_prev, cost_cur;	/* the sampler's counts at the last two readings */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct live *live_new(double interval_s, FILE *out, const char *target, const struct probe_choice *choice)
{
	struct live *lv = calloc(1, sizeof(*lv));

	if (!lv)
		return NULL;
	lv->prev = calloc(1, sizeof(*lv->prev));
	lv->cur = calloc(1, sizeof(*lv->cur));
	if (!lv->prev || !lv->cur) {
		live_free(lv);
		return NULL;
	}
	lv->interval = interval_s;
	lv->out = out;
	lv->tty = isatty(fileno(out));
	lv->target = target;
	lv->choice = choice;
	lv->t0_ns = lv->last_ns = now_ns();
	return lv;
}

void live_free(struct live *lv)
{
	if (!lv)
		return;
	free(lv->prev);
	free(lv->cur);
	free(lv);
}

int live_draws(const struct live *lv)
{
	return lv->draws;
}

static const char *rate(double v, const char *unit, char *buf, size_t n)
{
	static const char *const pre[] = { "", "K", "M", "G", "T" };
	int p = 0;

	while (v >= 1000 && p < 4) {
		v /= 1000;
		p++;
	}
	snprintf(buf, n, p ? "%.2f %s%s" : "%.0f %s%s", v, pre[p], unit);
	return buf;
}

static void draw(struct live *lv, FILE *f, double secs, double total_s)
{
	const struct kfigures *c = lv->cur, *p = lv->prev;
	__u64 sw = c->sched.voluntary + c->sched.involuntary, psw = p->sched.voluntary + p->sched.involuntary;
	__u64 sys = 0, psys = 0;
	char b1[32], b2[32], b3[32];

	fprintf(f, "zctrace live: %s   t=%.1f s   interval %.1f s   copy sites %s\n", lv->target, total_s, secs,
		!lv->phase_gated ? "count the whole run" : c->misc.phase_begins > c->misc.phase_ends
		? "counting (measured phase)" : c->misc.phase_ends ? "stopped (phase over)"
		: "waiting for the measured phase");
	fprintf(f, "  %-16s %14s %14s %14s %16s %10s\n", "SITE", "COPIES/s", "BYTES/s", "TOTAL COPIES", "TOTAL BYTES",
		"CPU %");
	for (int s = 0; s < NR_SITES; s++) {
		if (site_method_of(lv->choice, s, NULL) == METHOD_NONE) {
			fprintf(f, "  %-16s %14s\n", site_name(s), "not supported");
			continue;
		}
		if (!c->site[s].count)
			continue;
		/* the copies' CPU time in the interval, as a share of one CPU's */
		if (lv->cost_cur.measured && is_cpu_copy(s) && (s != SITE_USER_COPY || lv->cost_cur.user_measured))
			snprintf(b3, sizeof(b3), "%.1f", (lv->cost_cur.phase[s] - lv->cost_prev.phase[s]) *
				 (double)lv->cost_cur.period_ns / (secs * 1e9) * 100);
		else
			snprintf(b3, sizeof(b3), "-");
		fprintf(f, "  %-16s %14s %14s %14" PRIu64 " %16" PRIu64 " %10s\n", site_name(s),
			rate((c->site[s].count - p->site[s].count) / secs, "", b1, sizeof(b1)),
			rate((c->site[s].bytes - p->site[s].bytes) / secs, "B/s", b2, sizeof(b2)),
			(uint64_t)c->site[s].count, (uint64_t)c->site[s].bytes, b3);
	}
	if (!lv->cost_cur.measured)
		fprintf(f, "  CPU %%: %s\n", lv->cost_cur.why);
	if (probe_attached(lv->choice, PROBE_SCHED))
		fprintf(f, "  context switches: %s (voluntary %s, involuntary %s); total %" PRIu64 "\n",
			rate((sw - psw) / secs, "/s", b1, sizeof(b1)),
			rate((c->sched.voluntary - p->sched.voluntary) / secs, "/s", b2, sizeof(b2)),
			rate((c->sched.involuntary - p->sched.involuntary) / secs, "/s", b3, sizeof(b3)), (uint64_t)sw);
	else
		fprintf(f, "  context switches: not supported\n");
	for (int nr = 0; nr < MAX_SYSCALLS; nr++) {
		sys += c->syscalls[nr];
		psys += p->syscalls[nr];
	}
	if (probe_attached(lv->choice, PROBE_SYSCALLS))
		fprintf(f, "  syscalls: %s; total %" PRIu64 "\n", rate((sys - psys) / secs, "/s", b1, sizeof(b1)),
			(uint64_t)sys);
	else
		fprintf(f, "  syscalls: not supported\n");
	if (probe_attached(lv->choice, PROBE_PAGE_FAULTS))
		fprintf(f, "  page faults: %" PRIu64 "\n",
			(uint64_t)(c->misc.page_faults_user + c->misc.page_faults_kernel));
	else
		fprintf(f, "  page faults: not supported\n");
	for (int s = 0; s < NR_SITES; s++) {
		__u64 iv[MAX_SLOTS];

		if (!c->site[s].count)
			continue;
		for (int i = 0; i < MAX_SLOTS; i++)
			iv[i] = c->site[s].hist[i] - p->site[s].hist[i];
		fprintf(f, "  %s copy sizes (bytes)      %10s %12s\n", site_name(s), "interval", "total");
		print_log2_hist_pair(f, iv, c->site[s].hist, MAX_SLOTS);
	}
}

void live_tick(struct live *lv, struct zctrace_bpf *obj)
{
	uint64_t now = now_ns();
	double secs = (now - lv->last_ns) / 1e9;
	struct kfigures *tmp;
	char *buf = NULL;
	size_t len = 0;
	FILE *m;

	if (secs < lv->interval)
		return;
	lv->phase_gated = obj->rodata->gate_on_phase;
	kfigures_read(lv->cur, obj);
	lv->cost_prev = lv->cost_cur;
	cost_read(obj, &lv->cost_cur, NULL);
	m = open_memstream(&buf, &len);
	if (!m)
		return;
	draw(lv, m, secs, (now - lv->t0_ns) / 1e9);
	fclose(m);
	if (lv->tty) {
		struct winsize ws;
		int rows = !ioctl(fileno(lv->out), TIOCGWINSZ, &ws) && ws.ws_row > 2 ? ws.ws_row - 1 : 1000;

		/* back over the last drawing, clear from there down, draw again: no scrolling */
		if (lv->lines)
			fprintf(lv->out, "\033[%dA\r\033[J", lv->lines);
		lv->lines = 0;
		for (char *c = buf; *c; c++) {
			if (*c == '\n' && ++lv->lines == rows) {
				c[1] = '\0';	/* what the terminal cannot show is cut, not scrolled */
				break;
			}
		}
	} else {
		time_t t = time(NULL);
		char stamp[32];

		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", localtime(&t));
		fprintf(lv->out, "--- %s ---\n", stamp);
	}
	fputs(buf, lv->out);
	fflush(lv->out);
	free(buf);
	lv->draws++;
	lv->last_ns = now;
	tmp = lv->prev;
	lv->prev = lv->cur;
	lv->cur = tmp;
}
