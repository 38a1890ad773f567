/*
 * A microbenchmark sweep's parameter axes: a name mapped onto the workload's own options, and
 * every value put through the workload's own option parser before the first run, so a bad value
 * is a usage error, not a grid of failed runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "os/cli.h"
#include "contract/mbdocs.h"
#include "os/clock.h"
#include "cmd/sweep_axes.h"
#include "trace/target.h"
#include "contract/opts.h"

#define CHECK_TIMEOUT_MS 5000	/* a workload's parser answers --help at once */

#define usage_error(...) cli_usage_error("zctrace sweep", __VA_ARGS__)

/*
 * Axis names that are not an option's own: a run of memlat or filecache times every size from
 * --min-size to --max-size, so one size a point sets both; contention and call time 1..N readers
 * and 0..N arguments, so an axis of N sets the top of that range.
 */
static const struct axis_alias {
	const char *workload, *axis;
	const char *options[MAX_AXIS_OPTIONS];
} axis_aliases[] = {
	{ "memlat", "size", { "min-size", "max-size" } },
	{ "filecache", "size", { "min-size", "max-size" } },
	{ "contention", "procs", { "max-procs" } },
	{ "call", "args", { "max-args" } },
};

int axis_parse(const char *arg, struct axis *ax)
{
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : 0;
	char *p;

	memset(ax, 0, sizeof(*ax));
	if (!eq || !len || len >= sizeof(ax->column) - 7 || strspn(arg, "abcdefghijklmnopqrstuvwxyz0123456789-") != len)
		return usage_error("invalid --param '%s' (NAME=V1,V2,..., e.g. size=4K,64K; NAME is an option "
				   "of the workload, lower case)", arg);
	ax->name = strndup(arg, len);
	p = strdup(eq + 1);
	if (!ax->name || !p)
		cli_out_of_memory();
	snprintf(ax->column, sizeof(ax->column), "param_%s", ax->name);
	for (char *c = ax->column; *c; c++)
		if (*c == '-')
			*c = '_';
	for (char *item = p;; item++) {
		char *comma = strchr(item, ',');

		if (comma)
			*comma = '\0';
		ax->values = cli_xrealloc(ax->values, (ax->nvalues + 1) * sizeof(*ax->values));
		ax->values[ax->nvalues++] = item;
		if (!*item)
			return usage_error("invalid --param '%s': an empty value", arg);
		if (!comma)
			break;
		item = comma;
	}
	return 0;
}

void axis_free(struct axis *ax)
{
	if (ax->values)
		free(ax->values[0]);
	free(ax->values);
	free(ax->name);
	memset(ax, 0, sizeof(*ax));
}

/*
 * The argument word of option @name of microbenchmark @def (its row of mb_opt_docs): 1 and the
 * word ("" for a flag) when the workload takes it, 0 when not.
 */
static int option_arg(const struct workload_def *def, const char *name, char *arg, size_t n)
{
	const struct mb_opt_doc *d = mb_opt_doc(def->name, name);

	if (!d)
		return 0;
	snprintf(arg, n, "%s", d->arg);
	return 1;
}

static enum axis_kind kind_of(const char *arg)
{
	if (!*arg)
		return AXIS_FLAG;
	if (!strcmp(arg, "BYTES") || !strcmp(arg, "N"))
		return AXIS_NUMBER;
	if (!strcmp(arg, "CPU"))
		return AXIS_CPU;
	return AXIS_WORD;
}

/* The options of @def the axis sets: an alias's, or the option of its own name. */
static int map_options(const struct workload_def *def, const struct axis *ax, struct axis_map *map)
{
	char arg[128], kind_arg[128] = "";

	memset(map, 0, sizeof(*map));
	for (size_t i = 0; i < sizeof(axis_aliases) / sizeof(axis_aliases[0]); i++) {
		const struct axis_alias *al = &axis_aliases[i];

		if (strcmp(al->workload, def->name) || strcmp(al->axis, ax->name))
			continue;
		for (int k = 0; k < MAX_AXIS_OPTIONS && al->options[k]; k++)
			snprintf(map->options[map->noptions++], sizeof(map->options[0]), "--%s", al->options[k]);
	}
	if (!map->noptions)
		snprintf(map->options[map->noptions++], sizeof(map->options[0]), "--%s", ax->name);
	for (int k = 0; k < map->noptions; k++) {
		if (!option_arg(def, map->options[k] + 2, arg, sizeof(arg))) {
			char opts[1024];

			workload_micro_options(def, opts, sizeof(opts));
			return usage_error("%s has no option %s for --param %s (its options: %s)", def->name,
					   map->options[k], ax->name, opts[0] ? opts : "none");
		}
		snprintf(kind_arg, sizeof(kind_arg), "%s", arg);
	}
	map->kind = kind_of(kind_arg);
	return 0;
}

/* The first line @fd gives within the time limit, into @buf. */
static void read_line(int fd, char *buf, size_t n)
{
	double deadline = now_s() + CHECK_TIMEOUT_MS / 1000.0;
	size_t len = 0;

	buf[0] = '\0';
	while (len < n - 1) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		int left = (int)((deadline - now_s()) * 1000);
		ssize_t got;

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			break;
		got = read(fd, buf + len, n - 1 - len);
		if (got <= 0)
			break;
		len += got;
	}
	buf[len] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/*
 * Runs the workload's binary on the options value @v sets, then --help: its parser takes the
 * options in order and stops at the first bad one with its own one-line reason, so exit 0 (the
 * usage text) means every option parsed. @why gets the reason otherwise.
 */
static int check_value(const char *binary, const struct axis_map *map, const char *v, char *why, size_t n)
{
	const char *argv[2 * MAX_AXIS_OPTIONS + 3];
	int pipefd[2], status = 0, argc = 0;
	pid_t child;

	argv[argc++] = binary;
	argc = axis_argv(map, v, argv, argc);
	argv[argc++] = "--help";
	argv[argc] = NULL;
	if (pipe2(pipefd, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child == 0) {
		int null = open("/dev/null", O_RDWR);

		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(pipefd[1], 2) < 0)
			_exit(127);
		execv(binary, (char **)argv);
		fprintf(stderr, "cannot run %s: %s\n", binary, strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	if (child < 0) {
		close(pipefd[0]);
		return -errno;
	}
	read_line(pipefd[0], why, n);
	close(pipefd[0]);
	kill(child, SIGKILL);	/* gone already, unless its parser hung */
	waitpid(child, &status, 0);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (!why[0])
		snprintf(why, n, "the workload refused it, without a reason");
	return -EINVAL;
}

int axis_resolve(const struct workload_def *def, const struct axis *ax, struct axis_map *map)
{
	char binary[PATH_MAX], why[256];
	int err;

	if ((err = map_options(def, ax, map)))
		return err;
	if (target_workload_binary(def->name, binary, sizeof(binary))) {
		fprintf(stderr, "zctrace sweep: workload binary for '%s' not found (run 'make' first)\n", def->name);
		return EXIT_USAGE;
	}
	for (int i = 0; i < ax->nvalues; i++) {
		const char *v = ax->values[i];

		if (map->kind == AXIS_FLAG && strcmp(v, "on") && strcmp(v, "off"))
			return usage_error("invalid --param %s=%s: %s takes no value, so the axis is on,off", ax->name,
					   v, map->options[0]);
		if (check_value(binary, map, v, why, sizeof(why)))
			return usage_error("invalid --param %s=%s: %s", ax->name, v, why);
	}
	return 0;
}

int axis_argv(const struct axis_map *map, const char *v, const char **argv, int n)
{
	for (int k = 0; k < map->noptions; k++) {
		if (map->kind == AXIS_FLAG) {
			if (!strcmp(v, "on"))
				argv[n++] = map->options[k];
			continue;
		}
		argv[n++] = map->options[k];
		argv[n++] = v;
	}
	return n;
}

json_object *axis_cell(const struct axis_map *map, const char *v)
{
	uint64_t size;
	char *end;
	long cpu;

	switch (map->kind) {
	case AXIS_NUMBER:
		if (!wl_parse_size(v, &size))
			return json_object_new_uint64(size);
		break;
	case AXIS_CPU:
		cpu = strtol(v, &end, 10);
		if (end != v && !*end)
			return json_object_new_int64(cpu);
		break;
	default:
		break;
	}
	return json_object_new_string(v);
}
