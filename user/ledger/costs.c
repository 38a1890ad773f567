/* What each copy cost (costs.h): the sampler's counts read against the ledger's bytes and calls. */
#include <math.h>
#include <stdio.h>
#include <sys/syscall.h>
#include "ledger/costs.h"
#include "os/machine.h"
#include "os/membound.h"

#define Z95 1.959964

struct cost_span cost_span_of(const struct ledger *l, int cls)
{
	struct cost_span sp = {};
	double lo, hi;

	if (!l->cost.measured || cls < 0 || cls >= NR_COST_CLASSES)
		return sp;
	sp.samples = l->cost.phase[cls];
	cost_interval(sp.samples, &lo, &hi);
	/* a user-mode sample whose file went unread may have been a copy: user_copy's high end holds them */
	if (cls == SITE_USER_COPY)
		cost_interval(sp.samples + l->cost.user_unread, &(double){ 0 }, &hi);
	/* each sample stands for a period of the CPU's time */
	sp.ns = (double)sp.samples * l->cost.period_ns;
	sp.lo = lo * l->cost.period_ns;
	sp.hi = hi * l->cost.period_ns;
	return sp;
}

static __u64 sum(const __u64 *v)
{
	__u64 t = 0;

	for (int k = 0; k < NR_COST_CLASSES; k++)
		t += v[k];
	return t;
}

__u64 cost_phase_samples(const struct ledger *l)
{
	return l->cost.measured ? sum(l->cost.phase) : 0;
}

__u64 cost_run_samples(const struct ledger *l)
{
	return l->cost.measured ? sum(l->cost.all) : 0;
}

int cost_class_of_site(const struct ledger *l, int s)
{
	bool splice = l->k.site[SITE_SPLICE_REF].bytes, pipe = l->k.site[SITE_PIPE_REF].bytes;

	switch (s) {
	case SITE_USER_COPY:	/* in user space: where the sampler knew libc's copy routines */
		return l->cost.user_measured ? s : -1;
	case SITE_DIRECT_IO:	/* the device's DMA */
		return -1;
	case SITE_ZC_PIN:
		return COST_ZEROCOPY;
	case SITE_SPLICE_REF:
	case SITE_PIPE_REF:
		return splice != pipe && l->k.site[s].bytes ? COST_PAGE_REF : -1;
	default:
		return s >= 0 && s < NR_SITES ? s : -1;
	}
}

bool cost_ns_per_byte(const struct ledger *l, int s, double *v, double *lo, double *hi)
{
	struct cost_span sp = cost_span_of(l, cost_class_of_site(l, s));
	double bytes = s >= 0 && s < NR_SITES ? (double)l->k.site[s].bytes : 0;

	if (!l->cost.measured || bytes <= 0 || cost_class_of_site(l, s) < 0)
		return false;
	*v = sp.ns / bytes;
	*lo = sp.lo / bytes;
	*hi = sp.hi / bytes;
	return true;
}

/* The Wilson score interval of a proportion @k of @n at 95%. */
static void share_interval(__u64 k, __u64 n, double *lo, double *hi)
{
	double p = (double)k / n, z2 = Z95 * Z95, d = 1 + z2 / n;
	double mid = (p + z2 / (2.0 * n)) / d, half = Z95 * sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / d;

	*lo = mid - half > 0 ? mid - half : 0;
	*hi = mid + half < 1 ? mid + half : 1;
}

bool cost_copy_share(const struct ledger *l, double *v, double *lo, double *hi)
{
	__u64 n = cost_phase_samples(l), k = 0;

	if (!n)
		return false;
	for (int s = 0; s < NR_SITES; s++)
		if (is_cpu_copy(s))
			k += l->cost.phase[s];
	*v = (double)k / n;
	share_interval(k, n, lo, hi);
	/* the user-mode samples unread may have been the program's copies */
	if (l->cost.user_measured && l->cost.user_unread) {
		double lo_more;

		share_interval(k + l->cost.user_unread, n, &lo_more, hi);
	}
	return true;
}

/* The copy site whose rate this run measured best (most samples), among those that copy payload. */
static int best_rate_site(const struct ledger *l)
{
	static const int sites[] = { SITE_SEND_COPY, SITE_RECV_COPY, SITE_DEFERRED_COPY, SITE_UDP_SEND_COPY,
				     SITE_UDP_RECV_COPY, SITE_FILE_READ_COPY, SITE_FILE_WRITE_COPY,
				     SITE_PIPE_WRITE_COPY, SITE_PIPE_READ_COPY, SITE_KERNEL_COPY };
	int best = -1;

	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		int s = sites[i];

		if (l->k.site[s].bytes && l->cost.phase[s] &&
		    (best < 0 || l->cost.phase[s] > l->cost.phase[best]))
			best = s;
	}
	return best;
}

/* The calls that took a path: zerocopy sends (those the notices covered), or sendfile and splice
 * calls (the syscalls by number, of the phase the bytes are counted in); 0 where not known. */
static __u64 path_calls(const struct ledger *l, int site)
{
	const __u64 *nr = l->phase_gated ? l->k.phase_syscalls : l->k.syscalls;

	if (site == SITE_ZC_PIN)
		return ledger_has(l, PROBE_ZC_NOTICES) ? l->k.misc.zc_calls_completed : 0;
	return ledger_has(l, PROBE_SYSCALLS) ? nr[SYS_sendfile] + nr[SYS_splice] : 0;
}

static void trade(const struct ledger *l, struct cost_trade *t, const char *path, int kind, int site)
{
	struct cost_span sp = cost_span_of(l, kind);
	double npb, lo, hi;

	*t = (struct cost_trade){ .path = path, .avoided_at = -1 };
	t->calls = path_calls(l, site);
	if (!l->cost.measured || !t->calls || !l->k.site[site].bytes)
		return;
	t->avoided_at = best_rate_site(l);
	if (t->avoided_at < 0 || !cost_ns_per_byte(l, t->avoided_at, &npb, &lo, &hi))
		return;
	t->measured = true;
	t->bytes_per_call = (double)l->k.site[site].bytes / t->calls;
	t->ns_per_call = sp.ns / t->calls;
	t->lo = sp.lo / t->calls;
	t->hi = sp.hi / t->calls;
	t->copy_ns_per_call = npb * t->bytes_per_call;
}

void cost_trades(const struct ledger *l, struct cost_trade *zc, struct cost_trade *ref)
{
	trade(l, zc, "zerocopy", COST_ZEROCOPY, SITE_ZC_PIN);
	trade(l, ref, "page references", COST_PAGE_REF, SITE_SPLICE_REF);
}

/*
 * How far the sampled time may stray from task-clock: the count's own spread (4 sigma, as a
 * Poisson count), and a quarter for how a CPU's fixed ticks meet a task that runs in short
 * bursts: on this machine kind (a VM, no PMU) `perf record -a -e cpu-clock` put 1.01-1.16 of
 * fileread's task-clock in its samples, and zctrace 0.83-1.00 (a task sampled on its own clock,
 * `perf record` without -a, 1.00-1.01). A CPU-bound command gives 1.00. Both start at the exec of the
 * process zctrace started; the samples of exiting tasks are left out, as task-clock stops early in
 * do_exit() (seen on 6.18: 80 us of each short process's exit sampled, none of it in task-clock).
 */
#define COST_BAND_SHARE 0.25
#define COST_BAND_SIGMAS 4.0

bool cost_total_check(const struct ledger *l, bool *ok, char *detail, size_t n)
{
	const struct perf_counter *tc = l->perf ? perf_find(l->perf, "task-clock") : NULL;
	double sampled, task, expect, band;
	__u64 k;

	detail[0] = '\0';
	if (!l->cost.measured || !tc || !tc->counted || tc->value <= 0)
		return false;
	if (cpu_emulated()) {
		/* under QEMU's TCG the sampling timer fired for a third to a half of task-clock (5.10) */
		snprintf(detail, n, "not measured: this CPU is emulated (QEMU TCG), and its timer does not keep the "
			 "sampling rate");
		return false;
	}
	k = cost_run_samples(l) - l->cost.exiting;
	sampled = (double)k * l->cost.period_ns;
	task = tc->value;
	expect = task / l->cost.period_ns;
	band = COST_BAND_SHARE * task + COST_BAND_SIGMAS * sqrt(expect + 1) * l->cost.period_ns;
	*ok = fabs(sampled - task) <= band;
	snprintf(detail, n, "sampled %.1f ms (%llu samples, %llu of exiting tasks left out), task-clock %.1f ms, "
		 "band +-%.1f ms", sampled / 1e6, (unsigned long long)k, (unsigned long long)l->cost.exiting,
		 task / 1e6, band / 1e6);
	return true;
}

/* The sites copied in the caller's own task (a syscall's, or the program's own memcpy). */
static bool copied_by_caller(int s)
{
	return is_cpu_copy(s) && s != SITE_DEFERRED_COPY && s != SITE_TX_COPY;
}

void cost_bounds(struct ledger *l)
{
	for (int s = 0; s < NR_SITES; s++)
		l->copy_bound[s] = 0;
	if (!l->cost.measured || cpu_emulated())
		return;
	for (int s = 0; s < NR_SITES; s++)
		if (copied_by_caller(s) && cost_class_of_site(l, s) == s && l->k.site[s].count && l->k.site[s].bytes)
			l->copy_bound[s] = memcpy_bytes_per_ns(l->k.site[s].bytes / l->k.site[s].count);
}

/*
 * A half over the bound, beyond the interval: the bound is glibc's memcpy in user space, in the
 * caches, and the kernel's copy routine is another (rep movs, with its own start-up and alignment).
 */
#define COST_BOUND_SLACK 1.5

bool cost_bound_ok(const struct ledger *l, int s, char *detail, size_t n)
{
	struct cost_span sp = cost_span_of(l, s);
	double bytes = (double)l->k.site[s].bytes, slowest;

	if (l->copy_bound[s] <= 0 || sp.hi <= 0) {
		snprintf(detail, n, "not measured");
		return true;
	}
	slowest = bytes / sp.hi;
	snprintf(detail, n, "%.2f GB/s (%.2f at the slowest the interval allows; %llu samples) against memcpy's "
		 "%.2f GB/s at %.0f B copies", sp.ns > 0 ? bytes / sp.ns : 0, slowest,
		 (unsigned long long)sp.samples, l->copy_bound[s], bytes / l->k.site[s].count);
	return slowest <= COST_BOUND_SLACK * l->copy_bound[s];
}
