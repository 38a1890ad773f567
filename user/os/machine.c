/*
 * The machine a sweep ran on: the figures only mean something beside it, so every sweep row and
 * every figure's title carries a short line (CPU model, caches, memory, kernel).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include "os/machine.h"

#define CACHE_DIR "/sys/devices/system/cpu/cpu0/cache"

static void read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	if (f && fgets(buf, n, f))
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* The value of the first "@key : value" line of @path (/proc/cpuinfo, /proc/meminfo). */
static void proc_field(const char *path, const char *key, char *buf, size_t n)
{
	char line[256];
	FILE *f = fopen(path, "re");

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!colon || strncmp(line, key, strlen(key)))
			continue;
		colon++;
		colon += strspn(colon, " \t");
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(buf, n, "%s", colon);
		break;
	}
	if (f)
		fclose(f);
}

static void read_caches(struct machine *m)
{
	for (int i = 0; m->ncaches < MACHINE_MAX_CACHES && i < 16; i++) {
		char path[128], level[16];

		snprintf(path, sizeof(path), CACHE_DIR "/index%d/level", i);
		read_line(path, level, sizeof(level));
		if (!level[0])
			break;
		m->cache[m->ncaches].level = atoi(level);
		snprintf(path, sizeof(path), CACHE_DIR "/index%d/type", i);
		read_line(path, m->cache[m->ncaches].type, sizeof(m->cache[0].type));
		snprintf(path, sizeof(path), CACHE_DIR "/index%d/size", i);
		read_line(path, m->cache[m->ncaches].size, sizeof(m->cache[0].size));
		m->ncaches++;
	}
}

/* "1024K" as "1M": the sizes a reader compares with message sizes. */
static const char *short_size(const char *size, char *buf, size_t n)
{
	char *end;
	long k = strtol(size, &end, 10);

	if (*end == 'K' && k >= 1024 && k % 1024 == 0)
		snprintf(buf, n, "%ldM", k / 1024);
	else
		snprintf(buf, n, "%s", size);
	return buf;
}

static void make_line(struct machine *m)
{
	char caches[128] = "", sz[24];

	for (int i = 0; i < m->ncaches; i++) {
		if (!strcmp(m->cache[i].type, "Instruction"))
			continue;
		snprintf(caches + strlen(caches), sizeof(caches) - strlen(caches), "%sL%d%s %s", caches[0] ? " " : "",
			 m->cache[i].level, !strcmp(m->cache[i].type, "Data") ? "d" : "",
			 short_size(m->cache[i].size, sz, sizeof(sz)));
	}
	snprintf(m->line, sizeof(m->line), "%s x%ld, %s, %.1f GiB, Linux %s", m->cpu_model[0] ? m->cpu_model : "CPU ?",
		 m->cpus, caches[0] ? caches : "caches ?", m->mem_bytes / (double)(1ULL << 30), m->kernel);
}

void machine_describe(struct machine *m)
{
	char mem[64];
	struct utsname u;

	memset(m, 0, sizeof(*m));
	proc_field("/proc/cpuinfo", "model name", m->cpu_model, sizeof(m->cpu_model));
	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	read_caches(m);
	proc_field("/proc/meminfo", "MemTotal", mem, sizeof(mem));
	m->mem_bytes = strtoull(mem, NULL, 10) * 1024;	/* meminfo counts kB */
	if (!uname(&u))
		snprintf(m->kernel, sizeof(m->kernel), "%.64s", u.release);
	make_line(m);
}

json_object *machine_json(const struct machine *m)
{
	json_object *o = json_object_new_object(), *caches = json_object_new_array();

	json_object_object_add(o, "cpu_model", json_object_new_string(m->cpu_model));
	json_object_object_add(o, "cpus", json_object_new_int64(m->cpus));
	for (int i = 0; i < m->ncaches; i++) {
		json_object *c = json_object_new_object();

		json_object_object_add(c, "level", json_object_new_int(m->cache[i].level));
		json_object_object_add(c, "type", json_object_new_string(m->cache[i].type));
		json_object_object_add(c, "size", json_object_new_string(m->cache[i].size));
		json_object_array_add(caches, c);
	}
	json_object_object_add(o, "caches", caches);
	json_object_object_add(o, "memory_bytes", json_object_new_uint64(m->mem_bytes));
	json_object_object_add(o, "kernel", json_object_new_string(m->kernel));
	json_object_object_add(o, "line", json_object_new_string(m->line));
	return o;
}

bool kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	return !uname(&u) && sscanf(u.release, "%d.%d", &ma, &mi) == 2 && (ma > major || (ma == major && mi >= minor));
}

bool cpu_emulated(void)
{
	char model[96];

	proc_field("/proc/cpuinfo", "model name", model, sizeof(model));
	return strstr(model, "QEMU TCG") != NULL;
}
