/*
 * perf_event_open counters: software ones everywhere, hardware ones where the machine has them,
 * one event per core PMU on hybrid CPUs (summed), for the whole workload and for its own process.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include "os/perfcnt.h"

#define CACHE_EVENT(id, op, result) \
	((id) | (PERF_COUNT_HW_CACHE_OP_##op << 8) | (PERF_COUNT_HW_CACHE_RESULT_##result << 16))
#define PMU_DIR "/sys/bus/event_source/devices"

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} defs[NR_PERF_COUNTERS] = {
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "L1-dcache-load-misses", PERF_TYPE_HW_CACHE, CACHE_EVENT(PERF_COUNT_HW_CACHE_L1D, READ, MISS) },
	{ "LLC-loads", PERF_TYPE_HW_CACHE, CACHE_EVENT(PERF_COUNT_HW_CACHE_LL, READ, ACCESS) },
	{ "LLC-load-misses", PERF_TYPE_HW_CACHE, CACHE_EVENT(PERF_COUNT_HW_CACHE_LL, READ, MISS) },
};

/* The software events a test may count in place of a hardware one (ZCTRACE_PERF_STANDIN). */
static const struct {
	const char *name;
	uint64_t config;
} standins[] = {
	{ "task-clock", PERF_COUNT_SW_TASK_CLOCK }, { "cpu-clock", PERF_COUNT_SW_CPU_CLOCK },
	{ "context-switches", PERF_COUNT_SW_CONTEXT_SWITCHES }, { "page-faults", PERF_COUNT_SW_PAGE_FAULTS },
};

/* The core PMUs: cpu_core and cpu_atom on a hybrid CPU; none (the legacy "cpu" PMU) otherwise. */
struct core_pmus {
	int n;
	uint32_t type[MAX_CORE_PMUS];
};

const char *perf_counter_name(int i)
{
	return i >= 0 && i < NR_PERF_COUNTERS ? defs[i].name : NULL;
}

/* @name's value in a "NAME=VALUE,..." environment variable, into @val; false when absent. */
static bool env_item(const char *var, const char *name, char *val, size_t n)
{
	const char *s = getenv(var);
	size_t len = strlen(name);

	for (; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : "") {
		if (strncmp(s, name, len) || (s[len] != '=' && s[len] != ',' && s[len]))
			continue;
		s += len + (s[len] == '=');
		snprintf(val, n, "%.*s", (int)strcspn(s, ","), s);
		return true;
	}
	return false;
}

/* Hybrid CPUs name a PMU per core type, each with its own type number; perf opens one event on each. */
static void find_core_pmus(struct core_pmus *p, char *names, size_t n)
{
	struct dirent *de;
	DIR *d = opendir(PMU_DIR);

	p->n = 0;
	names[0] = '\0';
	while (d && (de = readdir(d)) && p->n < MAX_CORE_PMUS) {
		char path[320];
		unsigned type;
		FILE *f;

		if (strncmp(de->d_name, "cpu_", 4))
			continue;
		snprintf(path, sizeof(path), PMU_DIR "/%s/type", de->d_name);
		f = fopen(path, "re");
		if (f && fscanf(f, "%u", &type) == 1) {
			p->type[p->n++] = type;
			snprintf(names + strlen(names), n - strlen(names), "%s%s", p->n > 1 ? "+" : "", de->d_name);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

static int open_one(const struct perf_counter *c, int i, uint32_t pmu, pid_t pid, bool at_exec, bool threads_only)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = defs[i].type,
		.config = defs[i].config,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
		.inherit = 1,
		.inherit_thread = threads_only,
		.disabled = at_exec,
		.enable_on_exec = at_exec,
	};

	if (c->standin) {
		attr.type = PERF_TYPE_SOFTWARE;
		for (size_t k = 0; k < sizeof(standins) / sizeof(standins[0]); k++)
			if (!strcmp(standins[k].name, c->standin))
				attr.config = standins[k].config;
	} else if (pmu && defs[i].type != PERF_TYPE_SOFTWARE) {
		attr.config |= (uint64_t)pmu << PERF_PMU_TYPE_SHIFT;
	}
	return syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The test hooks, read once: a refused counter, a software stand-in, a simulated multiplexing. */
static void init_counter(struct perf_counter *c, int i)
{
	char val[32], *end;

	c->name = defs[i].name;
	c->hardware = defs[i].type != PERF_TYPE_SOFTWARE;
	c->refused = env_item("ZCTRACE_PERF_REFUSE", c->name, val, sizeof(val));
	if (c->refused)
		snprintf(c->why, sizeof(c->why), "refused by ZCTRACE_PERF_REFUSE");
	if (defs[i].type != PERF_TYPE_SOFTWARE && env_item("ZCTRACE_PERF_STANDIN", c->name, val, sizeof(val)))
		for (size_t k = 0; k < sizeof(standins) / sizeof(standins[0]); k++)
			if (!strcmp(standins[k].name, val))
				c->standin = standins[k].name;
	if (env_item("ZCTRACE_PERF_MULTIPLEX", c->name, val, sizeof(val))) {
		double f = strtod(val, &end);

		if (end != val && !*end && f > 0 && f <= 1)
			c->simulated = f;
	}
}

static void init(struct perf_set *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->by_process = true;
	for (int i = 0; i < NR_PERF_COUNTERS; i++)
		init_counter(&ps->c[i], i);
}

static void add_fd(struct perf_counter *c, int fd, int err, int scope, int group)
{
	if (fd < 0) {
		/* what perf_event_open says for a hardware event where there is no PMU to count it */
		if (!c->nfds && !c->why[0] && err == ENOENT && !c->standin && c->hardware)
			snprintf(c->why, sizeof(c->why), "no hardware counter for it here; perf_event_open: %s",
				 strerror(err));
		else if (!c->nfds && !c->why[0])
			snprintf(c->why, sizeof(c->why), "%s", strerror(err));
		return;
	}
	if (c->nfds < MAX_PERF_FDS) {
		c->fds[c->nfds++] = (struct perf_fd){ .fd = fd, .scope = scope, .group = group };
		c->supported = true;
	} else {
		close(fd);
	}
}

/* Counter @i on @pid in @scope, on each core PMU (one, the plain type, where there are none). */
static int open_counter(struct perf_set *ps, const struct core_pmus *pmus, int i, pid_t pid, bool at_exec,
			int scope, int group)
{
	struct perf_counter *c = &ps->c[i];
	bool per_pmu = defs[i].type != PERF_TYPE_SOFTWARE && !c->standin && pmus->n;
	int opened = 0, err = 0;

	if (c->refused)
		return -EPERM;
	for (int k = 0; k < (per_pmu ? pmus->n : 1); k++) {
		int fd = open_one(c, i, per_pmu ? pmus->type[k] : 0, pid, at_exec, scope == PERF_MAIN);

		if (fd < 0)
			err = errno;
		else
			opened++;
		/* a hybrid machine's task runs on one core type at a time: any PMU that opens counts */
		if (scope == PERF_WHOLE || fd >= 0)
			add_fd(c, fd, err, scope, group);
	}
	return opened ? 0 : -err;
}

void perf_open_child(struct perf_set *ps, pid_t child)
{
	struct core_pmus pmus;

	init(ps);
	ps->main_pid = child;
	find_core_pmus(&pmus, ps->pmus, sizeof(ps->pmus));
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		int err;

		if (open_counter(ps, &pmus, i, child, true, PERF_WHOLE, 0))
			continue;
		err = open_counter(ps, &pmus, i, child, true, PERF_MAIN, 1);
		if (err && ps->by_process) {
			ps->by_process = false;
			snprintf(ps->by_process_why, sizeof(ps->by_process_why), "%s: counters that follow "
				 "threads only (inherit_thread, Linux 5.13+) refused: %s", ps->c[i].name, strerror(-err));
		}
	}
}

void perf_open_pid(struct perf_set *ps, pid_t pid)
{
	struct core_pmus pmus;
	char path[64];
	struct dirent *de;
	int group = 0;
	DIR *d;

	init(ps);
	ps->by_process = false;
	snprintf(ps->by_process_why, sizeof(ps->by_process_why), "a running process: its threads are counted together");
	find_core_pmus(&pmus, ps->pmus, sizeof(ps->pmus));
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && group < MAX_PERF_FDS) {
		pid_t tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		for (int i = 0; i < NR_PERF_COUNTERS; i++)
			open_counter(ps, &pmus, i, tid, false, PERF_WHOLE, group);
		group++;
	}
	closedir(d);
}

/*
 * One scope's count: each group's events summed over the core PMUs, then scaled by the time
 * enabled over the time running summed over them (a task on a hybrid CPU runs on one core type at
 * a time, so only multiplexing leaves that sum short of the time enabled), then the groups summed.
 */
static void read_scope(struct perf_counter *c, int scope, struct perf_count *out)
{
	*out = (struct perf_count){ .running = 1 };
	for (int k = 0; k < c->nfds; k++) {
		double raw = 0, enabled = 0, running = 0;
		int g = c->fds[k].group;

		if (c->fds[k].scope != scope || (k > 0 && c->fds[k - 1].scope == scope && c->fds[k - 1].group == g))
			continue;
		for (int j = k; j < c->nfds && c->fds[j].scope == scope && c->fds[j].group == g; j++) {
			uint64_t v[3];

			if (read(c->fds[j].fd, v, sizeof(v)) != sizeof(v))
				continue;
			/* the test hook: as if the event had been on a PMU for only this part of its time */
			raw += c->simulated ? v[0] * c->simulated : v[0];
			running += c->simulated ? v[2] * c->simulated : v[2];
			enabled = v[1] > enabled ? v[1] : enabled;
		}
		if (running <= 0)
			continue;
		out->counted = true;
		out->value += running < enabled ? raw * enabled / running : raw;
		if (running < enabled && running / enabled < out->running)
			out->running = running / enabled;
	}
}

void perf_read(struct perf_set *ps)
{
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		struct perf_counter *c = &ps->c[i];
		struct perf_count *w = &c->scope[PERF_WHOLE], *m = &c->scope[PERF_MAIN];

		read_scope(c, PERF_WHOLE, w);
		read_scope(c, PERF_MAIN, m);
		c->scope[PERF_REST] = (struct perf_count){
			.counted = w->counted && m->counted,
			.value = w->value > m->value ? w->value - m->value : 0,
			.running = w->running < m->running ? w->running : m->running,
		};
		c->counted = w->counted;
		c->value = w->value;
		if (c->supported && !c->counted && !c->why[0])
			snprintf(c->why, sizeof(c->why), "never scheduled on a PMU");
	}
}

void perf_close(struct perf_set *ps)
{
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		for (int k = 0; k < ps->c[i].nfds; k++)
			close(ps->c[i].fds[k].fd);
		ps->c[i].nfds = 0;
	}
}

const struct perf_counter *perf_find(const struct perf_set *ps, const char *name)
{
	for (int i = 0; i < NR_PERF_COUNTERS; i++)
		if (!strcmp(ps->c[i].name, name))
			return &ps->c[i];
	return NULL;
}
