/* The tracer's lifecycle: open the BPF object, choose each site's method, load, attach, destroy. */
#ifndef TRACER_H
#define TRACER_H

#include <stdbool.h>
#include "trace/probes.h"

struct zctrace_bpf;
struct bpf_link;

/* Why a figure that needs the raw syscall tracepoints is absent where they are left out. */
#define NEEDS_SYSCALL_TPS_WHY "not measured: needs the syscall tracepoints (add --complete)"
/* A run's names of its processes, kept as they fork, exec and exit: the most recent this many. */
#define RUN_IDENTS 4096
/* The census's ring buffer of exited threads' counters: room for about 14,000 between two reads. */
#define CENSUS_EXITS_BYTES (4U << 20)

struct tracer_opts {
	enum method cap;	/* --method: nothing better than this; METHOD_NONE = the best there is */
	bool skip_zc_path;	/* the run makes no MSG_ZEROCOPY send: leave the per-packet path out */
	bool gate_on_phase;	/* count sites only inside the workload's measured phase */
	unsigned long long skip;	/* probe sites (1 << enum probe_id) the run does not want */
	const char *skip_why;		/* ... and why, for `probes` and the reports */
	bool machine_wide;	/* the census: every process but this one, in bounded LRU maps */
	unsigned max_keys;	/* ... of this many (process, site) keys */
	bool no_syscall_tps;	/* nothing that needs the syscall tracepoints (sys_enter, sys_exit) */
	bool io_fentry;		/* the I/O syscalls by fentry/fexit where allowed, not the tracepoints */
	unsigned sample_hz;	/* the sampler's rate on each CPU (cost.h); 0: no sampler */
	bool time_copies;	/* time each copy routine's calls (fentry/fexit): run --time-copies */
	bool per_call;		/* the census counts TCP's copies at each call, not from the sockets' counters */
};

/*
 * Opens, chooses, loads and attaches. A candidate the kernel refuses at load (the verifier, a
 * missing helper) or at attach is marked refused in @choice with the kernel's reason, and the
 * cycle starts again without it, so one refused program never ends a run. @choice must start
 * zeroed. Returns 0 with *objp attached, or a negative errno with *objp NULL and a line on stderr.
 */
int tracer_start(struct zctrace_bpf **objp, struct probe_choice *choice, const struct tracer_opts *o);
void tracer_stop(struct zctrace_bpf *obj);
/*
 * Puts the loaded and attached tracer back as it was after its load, for another run under it: no
 * target, global data as loaded, every hash map of zctrace's empty, every array of its zeroed
 * (libbpf's USDT argument specs stay, with the USDT programs attached). 0 or a negative errno
 * (with a line on stderr).
 */
int tracer_reset(struct zctrace_bpf *obj);
/*
 * The tracer a built-in workload (@def, or NULL for a command or a process) needs, with --method
 * @cap, --no-phase and --complete (a command's every syscall by number, through the raw syscall
 * tracepoints, where fentry would follow its I/O syscalls alone).
 */
struct workload_def;
void tracer_opts_for(struct tracer_opts *o, const struct workload_def *def, enum method cap, bool no_phase,
		     bool complete);
/* Whether two runs can share one loaded tracer. */
bool tracer_opts_same(const struct tracer_opts *a, const struct tracer_opts *b);
/*
 * Destroys @n links at once, one thread each, and sets them NULL: a uprobe's detach waits for the
 * kernel's grace periods, and detaches side by side share them instead of waiting in turn.
 */
void tracer_destroy_links(struct bpf_link **links, int n);
/*
 * tracer_stop() and the destroy of @n more links, done by a child process that holds the last
 * references, so that this one can exit now: a uprobe's detach waits for a grace period of the
 * kernel's, one after another (about 0.1 s each on 6.12 and later). The child has no terminal and
 * none of this process's output; it exits once the kernel has let everything go. Without a child
 * (fork refused), here and now.
 */
void tracer_stop_background(struct zctrace_bpf *obj, struct bpf_link **more, int n);
/* tracer_stop(), then at most @max_ms for the kernel to free every program. 0 or -ETIMEDOUT. */
int tracer_stop_wait(struct zctrace_bpf *obj, int max_ms);

#endif
