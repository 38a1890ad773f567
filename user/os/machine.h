/* The machine a sweep ran on, in a short line and as JSON: CPU model, caches, memory, kernel. */
#ifndef MACHINE_H
#define MACHINE_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#define MACHINE_MAX_CACHES 8

struct machine {
	char cpu_model[96];
	long cpus;			/* online */
	struct {
		int level;
		char type[16];		/* Data, Instruction, Unified */
		char size[16];		/* as sysfs says it: 32K, 1024K */
	} cache[MACHINE_MAX_CACHES];	/* of CPU 0 */
	int ncaches;
	unsigned long long mem_bytes;
	char kernel[72];			/* uname -r */
	char line[400];			/* "AMD EPYC x2, L1d 32K L2 1M L3 32M, 23.5 GiB, Linux 6.18.0" */
};

void machine_describe(struct machine *m);
/* Whether the running kernel is Linux @major.@minor or later. */
bool kernel_at_least(int major, int minor);
json_object *machine_json(const struct machine *m);
/* Whether this CPU is emulated (QEMU's TCG: /proc/cpuinfo's model name), whose clocks are not real time. */
bool cpu_emulated(void);

#endif
