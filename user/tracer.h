/* The tracer's lifecycle: open the BPF object, choose each site's method, load, attach, destroy. */
#ifndef TRACER_H
#define TRACER_H

#include <stdbool.h>
#include "probes.h"

struct zctrace_bpf;
struct bpf_link;

struct tracer_opts {
	enum method cap;	/* --method: nothing better than this; METHOD_NONE = the best there is */
	bool skip_zc_path;	/* the run makes no MSG_ZEROCOPY send: leave the per-packet path out */
	bool gate_on_phase;	/* count sites only inside the workload's measured phase */
	unsigned long long skip;	/* probe sites (1 << enum probe_id) the run does not want */
	const char *skip_why;		/* ... and why, for `probes` and the reports */
	bool machine_wide;	/* the census: every process but this one, in bounded LRU maps */
	unsigned max_keys;	/* ... of this many (process, site) keys */
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
 * Destroys @n links at once, one thread each, and sets them NULL: a uprobe's detach waits for the
 * kernel's grace periods, and detaches side by side share them instead of waiting in turn.
 */
void tracer_destroy_links(struct bpf_link **links, int n);
/* tracer_stop(), then at most @max_ms for the kernel to free every program. 0 or -ETIMEDOUT. */
int tracer_stop_wait(struct zctrace_bpf *obj, int max_ms);

#endif
