/*
 * The cost zctrace adds to the machine, per BPF program: the kernel's run-time statistics
 * (kernel.bpf_stats_enabled, turned on with BPF_ENABLE_STATS for the run only), read with
 * BPF_OBJ_GET_INFO_BY_FD. They count every invocation, also those of processes that are not
 * traced and leave at the filter: that early exit is a cost every process on the machine pays.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "os/clock.h"
#include "trace/progstats.h"

void prog_stats_init(struct prog_stats *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->stats_fd = -1;
}

int prog_stats_enable(struct prog_stats *ps)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (fd < 0) {
		int err = errno;

		snprintf(ps->why, sizeof(ps->why), "the kernel refused BPF_ENABLE_STATS: %s%s", strerror(err),
			 err == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
		return -err;
	}
	ps->stats_fd = fd;
	return 0;
}

void prog_stats_begin(struct prog_stats *ps)
{
	ps->start = now_s();
}

void prog_stats_end(struct prog_stats *ps, struct bpf_object *obj)
{
	struct bpf_program *prog;

	ps->end = now_s();
	ps->n = 0;
	if (ps->stats_fd < 0)
		return;
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		struct prog_stat *st;
		int fd = bpf_program__fd(prog);

		if (fd < 0 || ps->n >= MAX_STAT_PROGS)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		st = &ps->p[ps->n++];
		snprintf(st->name, sizeof(st->name), "%s", bpf_program__name(prog));
		snprintf(st->attach, sizeof(st->attach), "%s", bpf_program__section_name(prog));
		st->events = info.run_cnt;
		st->run_time_ns = info.run_time_ns;
		st->misses = info.recursion_misses;
	}
}

void prog_stats_totals(const struct prog_stats *ps, __u64 *events, __u64 *ns, __u64 *misses)
{
	*events = *ns = *misses = 0;
	for (int i = 0; i < ps->n; i++) {
		*events += ps->p[i].events;
		*ns += ps->p[i].run_time_ns;
		*misses += ps->p[i].misses;
	}
}

static json_object *stat_json(const char *name, const char *attach, __u64 events, __u64 ns, __u64 misses,
			      double secs)
{
	json_object *o = json_object_new_object();

	if (name)
		json_object_object_add(o, "name", json_object_new_string(name));
	if (attach)
		json_object_object_add(o, "attach", json_object_new_string(attach));
	json_object_object_add(o, "events", json_object_new_uint64(events));
	json_object_object_add(o, "run_time_ns", json_object_new_uint64(ns));
	json_object_object_add(o, "ns_per_event", events ? json_object_new_double(prog_stats_per_event(ns, events)) : NULL);
	json_object_object_add(o, "events_per_s", json_object_new_double(secs > 0 ? events / secs : 0));
	json_object_object_add(o, "missed", json_object_new_uint64(misses));
	return o;
}

json_object *prog_stats_json(const struct prog_stats *ps)
{
	json_object *o = json_object_new_object(), *progs = json_object_new_array();
	double secs = ps->end - ps->start;
	__u64 events, ns, misses;

	if (ps->stats_fd < 0) {
		json_object_object_add(o, "error", json_object_new_string(ps->why));
		json_object_put(progs);
		return o;
	}
	prog_stats_totals(ps, &events, &ns, &misses);
	json_object_object_add(o, "duration_s", json_object_new_double(secs));
	for (int i = 0; i < ps->n; i++) {
		const struct prog_stat *st = &ps->p[i];

		json_object_array_add(progs, stat_json(st->name, st->attach, st->events, st->run_time_ns,
						       st->misses, secs));
	}
	json_object_object_add(o, "programs", progs);
	json_object_object_add(o, "total", stat_json(NULL, NULL, events, ns, misses, secs));
	return o;
}

void prog_stats_close(struct prog_stats *ps)
{
	if (ps->stats_fd >= 0)
		close(ps->stats_fd);
	ps->stats_fd = -1;
}
