/* perf_event_open counters: software ones everywhere, hardware ones where the machine has them. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include "perfcnt.h"

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
};

const char *perf_counter_name(int i)
{
	return i >= 0 && i < NR_PERF_COUNTERS ? defs[i].name : NULL;
}

static int open_one(int i, pid_t pid, bool at_exec)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = defs[i].type,
		.config = defs[i].config,
		.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
		.inherit = 1,
		.disabled = at_exec,
		.enable_on_exec = at_exec,
	};

	return syscall(SYS_perf_event_open, &attr, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

static void init(struct perf_set *ps)
{
	memset(ps, 0, sizeof(*ps));
	for (int i = 0; i < NR_PERF_COUNTERS; i++)
		ps->c[i].name = defs[i].name;
}

static void add_fd(struct perf_counter *c, int fd, int err)
{
	if (fd < 0) {
		if (!c->nfds && !c->why[0])
			snprintf(c->why, sizeof(c->why), "%s", strerror(err));
		return;
	}
	if (c->nfds < MAX_PERF_FDS) {
		c->fds[c->nfds++] = fd;
		c->supported = true;
	} else {
		close(fd);
	}
}

void perf_open_child(struct perf_set *ps, pid_t child)
{
	init(ps);
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		int fd = open_one(i, child, true);

		add_fd(&ps->c[i], fd, errno);
	}
}

void perf_open_pid(struct perf_set *ps, pid_t pid)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	init(ps);
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		for (int i = 0; i < NR_PERF_COUNTERS; i++) {
			int fd = open_one(i, tid, false);

			add_fd(&ps->c[i], fd, errno);
		}
	}
	closedir(d);
}

void perf_read(struct perf_set *ps)
{
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		struct perf_counter *c = &ps->c[i];

		c->value = 0;
		c->counted = false;
		for (int k = 0; k < c->nfds; k++) {
			uint64_t v[3];

			if (read(c->fds[k], v, sizeof(v)) != sizeof(v) || v[2] == 0)
				continue;
			c->counted = true;
			c->value += v[2] < v[1] ? (double)v[0] * v[1] / v[2] : (double)v[0];
		}
		if (c->supported && !c->counted && !c->why[0])
			snprintf(c->why, sizeof(c->why), "never scheduled on a PMU");
	}
}

void perf_close(struct perf_set *ps)
{
	for (int i = 0; i < NR_PERF_COUNTERS; i++) {
		for (int k = 0; k < ps->c[i].nfds; k++)
			close(ps->c[i].fds[k]);
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
