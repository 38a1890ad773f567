/*
 * The contract between a workload and zctrace: the report a workload writes (its own figures, one
 * JSON object), the descriptor it goes to, the USDT probes it fires, and its step limit. The
 * workloads emit with these names and zctrace parses with them (wl_report_parse): one definition
 * for both sides. docs/ARCHITECTURE.md: "Add a workload".
 */
#ifndef WL_REPORT_H
#define WL_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>
#include "zctrace.h"

/* The descriptor the report goes to: zctrace sets it to a pipe it reads while the workload runs. */
#define WL_RESULT_FD_ENV "ZCTRACE_RESULT_FD"

/*
 * USDT probes: the measured phase, user-space copies, numbered steps. The workloads fire the
 * tokens (<sys/sdt.h> wants them bare), zctrace attaches to the same names as strings.
 */
#define WL_USDT_PROVIDER_T	zctrace
#define WL_USDT_PHASE_BEGIN_T	phase_begin
#define WL_USDT_PHASE_END_T	phase_end
#define WL_USDT_USER_COPY_T	user_copy
#define WL_USDT_STEP_T	step
#define WL_STR_(x) #x
#define WL_STR(x) WL_STR_(x)
#define WL_USDT_PROVIDER	WL_STR(WL_USDT_PROVIDER_T)
#define WL_USDT_PHASE_BEGIN	WL_STR(WL_USDT_PHASE_BEGIN_T)
#define WL_USDT_PHASE_END	WL_STR(WL_USDT_PHASE_END_T)
#define WL_USDT_USER_COPY	WL_STR(WL_USDT_USER_COPY_T)
#define WL_USDT_STEP		WL_STR(WL_USDT_STEP_T)

/* Step ids of a microbenchmark: 1.., 0 being "no step"; the tracer keeps MAX_STEPS of them. */
#define WL_MAX_STEPS (MAX_STEPS - 1)

/* What a workload is, declared in its report ("kind"): it says which figures the report holds. */
enum wl_kind {
	WL_KIND_UNKNOWN,	/* no kind, or one this zctrace does not know */
	WL_KIND_STREAM,		/* messages over TCP or a pipe: bytes, bytes_received, messages, latency */
	WL_KIND_FILE_COPY,	/* a file duplicated: file_size, method, source, dest, calls */
	WL_KIND_FILE_SERVE,	/* a file served over TCP: a stream's figures and a file's */
	WL_KIND_REMOTE_READ,	/* a file read block by block from a server: requests, pattern */
	WL_KIND_MICRO,		/* a microbenchmark: results, steps, assumptions */
	NR_WL_KINDS,
};

/* The keys zctrace reads. */
#define WL_KEY_KIND		"kind"
#define WL_KEY_WORKLOAD		"workload"
#define WL_KEY_BYTES		"bytes"		/* the payload: sent, or the file's bytes moved */
#define WL_KEY_BYTES_RECEIVED	"bytes_received"
#define WL_KEY_REQUEST_BYTES	"request_bytes"	/* what the receiver sent back for the payload */
#define WL_KEY_SENDER_PID	"sender_pid"
#define WL_KEY_RECEIVER_PID	"receiver_pid"
#define WL_KEY_CLIENT_PID	"client_pid"	/* a microbenchmark's two ends, whichever sends */
#define WL_KEY_SERVER_PID	"server_pid"
#define WL_KEY_MESSAGES		"messages"
#define WL_KEY_SIZE		"size"
#define WL_KEY_THREADS		"threads"
#define WL_KEY_ELAPSED_S	"elapsed_s"
#define WL_KEY_PROGRESS		"progress"	/* a stream's bytes sent by the end of each slice */
#define WL_KEY_PROGRESS_SLICE_NS	"slice_ns"
#define WL_KEY_PROGRESS_T_NS	"t_ns"
#define WL_KEY_PROGRESS_SENT	"sent"
#define WL_KEY_LATENCY_NS	"latency_ns"	/* { p50, p90, p99, max, ... } */
#define WL_KEY_PATH		"path"		/* loopback or veth */
#define WL_KEY_PEER		"peer"
#define WL_KEY_FILE_SIZE	"file_size"
#define WL_KEY_METHOD		"method"	/* how a file was duplicated */
#define WL_KEY_CACHE		"cache"
#define WL_KEY_FS		"fs"
#define WL_KEY_PATTERN		"pattern"
#define WL_KEY_SOURCE		"source"	/* a file's identity and cache state (wl_file_json) */
#define WL_KEY_DEST		"dest"
#define WL_KEY_VERIFIED		"verified"
#define WL_KEY_DIRECT		"direct"	/* a file copied with O_DIRECT, past the page cache */
#define WL_KEY_BYTES_READ	"bytes_read"	/* a file copy's own counts of the bytes its calls moved */
#define WL_KEY_BYTES_WRITTEN	"bytes_written"
#define WL_KEY_CHUNKS		"chunks"
#define WL_KEY_CALLS		"calls"		/* { syscall: calls made } */
#define WL_KEY_PER_CHUNK	"per_chunk"	/* { syscall: calls per chunk } */
#define WL_KEY_ZEROCOPY		"zerocopy"	/* { notices, notices_copied, completed } */
#define WL_KEY_RESULTS		"results"	/* a microbenchmark's measurements */
#define WL_KEY_NOTES		"notes"
#define WL_KEY_STEPS		"steps"
#define WL_KEY_ASSUMPTIONS	"assumptions"
#define WL_KEY_CPU		"cpu"
#define WL_KEY_REMOTE		"remote"	/* one end of a network workload (remote.h) */
/* a file's (WL_KEY_SOURCE, WL_KEY_DEST) */
#define WL_KEY_INO		"ino"
#define WL_KEY_DEV_MAJOR	"dev_major"
#define WL_KEY_DEV_MINOR	"dev_minor"
#define WL_KEY_PAGES		"pages"
#define WL_KEY_RESIDENT_BEFORE	"resident_before"
#define WL_KEY_SHARED_BYTES	"shared_bytes"

/* A figure of the report, and whether the workload reported it. */
struct wl_count {
	uint64_t v;
	bool found;
};

struct wl_file_fig {
	struct wl_count ino, dev_major, dev_minor, pages, resident_before, shared_bytes;
};

/* How much of a report's lists zctrace reads; a longer list is read up to here, its length kept. */
#define WL_MAX_RESULTS		32
#define WL_MAX_HIST_BINS	16	/* the harness writes 13 at most (mb.c's sample_hist) */
#define WL_MAX_NOTES		32
#define WL_MAX_ASSUMPTIONS	256
#define WL_MAX_CALLS		8

/* One bin of a measurement's distribution, in the workload's own units. */
struct wl_bin {
	double lo, hi;
	uint64_t count;
};

/* A microbenchmark's measurement ("results"): per iteration, over its samples. */
struct wl_result {
	const char *name, *unit;		/* NULL when not reported */
	uint64_t samples, iters_per_sample, warmup;
	double min, median, mean, p99, max;	/* NAN when not reported */
	struct wl_bin hist[WL_MAX_HIST_BINS];
	int nhist;				/* -1: no histogram */
};

/* A numbered step of a microbenchmark ("steps"): the id its USDT markers carry. */
struct wl_step {
	uint64_t id;
	const char *name;			/* NULL when not reported */
};

/* A microbenchmark's claim about one of its steps ("assumptions"): @measure within [min, max]. */
struct wl_assumption {
	const char *claim, *measure;		/* NULL when not reported */
	uint64_t step, expected, min, max;
};

/* A file workload's own count of one syscall ("calls"), and its calls per chunk ("per_chunk"). */
struct wl_call {
	const char *name;
	uint64_t calls, per_chunk;		/* per_chunk 0 when not reported */
};

/*
 * The report as zctrace reads it: the figures its checks and reports use, typed. Strings point
 * into the parsed JSON, which stays the caller's; absent ones are NULL. A list keeps its length
 * as reported (n*_listed) beside the entries read (n*, at most WL_MAX_*).
 */
/*
 * A measured phase's progress: the bytes sent by the end of each slice of it, read while its
 * threads run, with the time of each reading. The tracer's effect needs the spread of the rate through a pass to tell a real
 * difference between two passes from noise. When the slices fill the array, each two become one.
 */
#define WL_MAX_SLICES 64
#define WL_SLICE_NS 100000000ull	/* the first slices' length: 0.1 s */
struct wl_progress {
	uint64_t slice_ns;
	size_t n;
	uint64_t at_ns[WL_MAX_SLICES];	/* each reading's time since the phase's start */
	uint64_t sent[WL_MAX_SLICES];	/* the bytes sent by then */
};

struct wl_report {
	enum wl_kind kind;
	const char *workload;
	struct wl_count bytes, bytes_received, request_bytes, sender_pid, receiver_pid;
	struct wl_count client_pid, server_pid;
	struct wl_count messages, size, threads, file_size, chunks;
	struct wl_count bytes_read, bytes_written;
	double elapsed_s;			/* 0 if not reported */
	struct wl_count p50, p90, p99, max;	/* latency_ns */
	bool has_latency;
	const char *path, *peer, *method, *cache, *fs, *pattern;
	struct wl_file_fig source, dest;
	int verified;				/* 1, 0, or -1 when not reported */
	int direct;				/* 1, 0, or -1 when not reported */
	struct wl_count zc_notices, zc_notices_copied, zc_completed;
	int zc_usage_reports;			/* zerocopy.usage_reports (io_uring: the notifications say
						 * whether the data was copied): 1, 0, or -1 when not reported */
	/* a file workload's calls; has_calls: it reported both "calls" and "per_chunk" */
	bool has_calls;
	struct wl_call calls[WL_MAX_CALLS];
	size_t ncalls, ncalls_listed;
	/* a microbenchmark's */
	int cpu;				/* the CPU it ran pinned to, -1 if none */
	struct wl_result results[WL_MAX_RESULTS];
	size_t nresults;
	const char *notes[WL_MAX_NOTES];	/* NULL for a note that is not a string */
	size_t nnotes;
	struct wl_step steps[WL_MAX_STEPS];
	size_t nsteps, nsteps_listed;
	bool has_assumptions;			/* it reported a list of them, maybe empty */
	struct wl_assumption assumptions[WL_MAX_ASSUMPTIONS];
	size_t nassumptions, nassumptions_listed;
	/* one end of a network workload (--listen, --connect: "remote"), or NULLs */
	const char *remote_role;		/* "sender" or "receiver" */
	const char *remote_addr, *remote_run, *remote_dev, *remote_dev_kind;	/* dev_kind: loopback, veth, device */
	int remote_dev_sg;			/* the device takes page frags: 1, 0, or -1 when not reported */
	int remote_dev_csum;			/* ... and checksums what it sends: 1, 0, or -1 */
	struct wl_count retransmitted, peer_received;	/* the sending end's */
	bool has_progress;			/* a stream's sending side reported its progress */
	struct wl_progress progress;
};

const char *wl_kind_name(enum wl_kind k);
/* Adds "kind" to @result and writes it where zctrace reads it (WL_RESULT_FD_ENV) or to stdout. */
int wl_emit(enum wl_kind kind, json_object *result);
/* Reads @json (may be NULL: an empty report) into @r. */
void wl_report_parse(json_object *json, struct wl_report *r);

#endif
