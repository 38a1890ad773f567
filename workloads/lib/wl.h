/* Shared pieces of the zctrace workloads: latency histograms, result JSON, USDT; their options (opts.h). */
#ifndef WL_H
#define WL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/sdt.h>
#include <json-c/json.h>
#include "contract/opts.h"
#include "contract/report.h"

/*
 * USDT probes read by zctrace: the measured phase, and copies made in user space. Each phase
 * marker is one probe site in a function of its own, whichever harness calls it: the tracer
 * attaches a uprobe per site, and each uprobe's detach waits for a grace period of the kernel's.
 */
void wl_phase_begin(void);
void wl_phase_end(void);
#define WL_PHASE_BEGIN() wl_phase_begin()
#define WL_PHASE_END() wl_phase_end()
#define WL_USER_COPY(bytes, ncopies) \
	DTRACE_PROBE2(WL_USDT_PROVIDER_T, WL_USDT_USER_COPY_T, (uint64_t)(bytes), (uint64_t)(ncopies))

uint64_t wl_now_ns(void);
/* Bounds every send and receive on @fd (connect() too) to @seconds. Returns 0 or -errno. */
int wl_socket_timeouts(int fd, int seconds);

/* Log-linear latency histogram: 16 sub-buckets per power of two (about 6% resolution). */
#define LAT_SUB 16
#define LAT_BUCKETS (64 * LAT_SUB)
struct lat_hist {
	uint64_t count, sum_ns, min_ns, max_ns;
	uint64_t bucket[LAT_BUCKETS];
};
void lat_record(struct lat_hist *h, uint64_t ns);
void lat_merge(struct lat_hist *into, const struct lat_hist *from);
uint64_t lat_percentile(const struct lat_hist *h, double p);
json_object *lat_json(const struct lat_hist *h);

/*
 * Joins @tids (@nthreads) and, while waiting, fills @p from @n units' byte counts: the first at
 * @first, the next @stride bytes further (each unit's "sent", written by its own thread alone and
 * read here without a lock: a stale read is at most one message behind). From @t0, the phase's start.
 */
void wl_join_watching(pthread_t *tids, int nthreads, const uint64_t *first, size_t stride, int n, uint64_t t0,
		      struct wl_progress *p);

/* A stream's sums over its channels (connections, socket pairs, pipes); @lat and @progress may be NULL. */
struct wl_stream_sum {
	uint64_t sent, received, messages;
	const struct lat_hist *lat;
	const struct wl_progress *progress;
};

/*
 * The figures every stream workload reports (WL_KIND_STREAM), added to @r: its name, size and
 * threads, the sums, the phase's length @ns, throughput, messages per second and latency.
 */
void wl_stream_figures(json_object *r, const char *name, const struct wl_opts *o, const struct wl_stream_sum *s,
		       uint64_t ns);

/* "NAME: UNIT I: WHAT: ERROR" on stderr when @err (a positive errno) says unit @i failed; 1 then, else 0. */
int wl_unit_failed(const char *name, const char *unit, int i, const char *what, int err);
/*
 * Ends a stream workload's report @r: a failure so far (@ret) or a run whose receivers did not get
 * every byte (!@verified) adds "error" (@error, unless the report has one) and makes the exit code 1;
 * then writes @r as @kind and drops it. Returns the exit code.
 */
int wl_stream_report(json_object *r, enum wl_kind kind, int ret, bool verified, const char *error);


#endif
