/*
 * Loads every kprobe/kretprobe program of the BPF object without attaching it: the verifier must
 * accept them on this kernel even where kprobes cannot be attached. Then tries the fentry/fexit
 * programs the same way and prints the kernel's answer (refused here by policy: EPERM).
 * Exit 0 when the kprobe programs load; 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "zctrace.h"
#include "zctrace.skel.h"

static int load_section(const char *prefix1, const char *prefix2, int *nprogs)
{
	struct zctrace_bpf *obj = zctrace_bpf__open();
	struct bpf_program *prog;
	int err;

	if (!obj)
		return -errno;
	*nprogs = 0;
	bpf_object__for_each_program(prog, obj->obj) {
		const char *sec = bpf_program__section_name(prog);
		bool on = !strncmp(sec, prefix1, strlen(prefix1)) || !strncmp(sec, prefix2, strlen(prefix2));

		bpf_program__set_autoload(prog, on);
		*nprogs += on;
	}
	err = zctrace_bpf__load(obj);
	zctrace_bpf__destroy(obj);
	return err;
}

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(void)
{
	int n, err;

	libbpf_set_print(quiet);
	err = load_section("kprobe/", "kretprobe/", &n);
	printf("kprobe programs: %d, load %s\n", n, err ? strerror(-err) : "ok (verifier accepted)");
	if (err || n == 0)
		return 1;
	libbpf_set_print(NULL);
	err = load_section("fentry/", "fexit/", &n);
	printf("fentry programs: %d, load %s\n", n, err ? strerror(-err) : "ok (verifier accepted)");
	return 0;
}
