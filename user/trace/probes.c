/*
 * Choosing one candidate of the probe table (sites.c) per site on this kernel, in the manner of
 * libbpf-tools' fentry_can_attach / kprobe_exists / probe_tp_btf: every candidate's attach points
 * are tried on this kernel before load, the first that works is autoloaded, and the reasons for
 * refusing better ones are kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <string.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "trace/iocalls.h"
#include "trace/probes.h"
#include "trace/tracer.h"
#include "zctrace.skel.h"


const char *method_name(enum method m)
{
	switch (m) {
	case METHOD_FENTRY: return "fentry";
	case METHOD_KPROBE: return "kprobe";
	case METHOD_TP_BTF: return "tp_btf";
	case METHOD_RAW_TP: return "raw_tp";
	case METHOD_USDT: return "usdt";
	case METHOD_ITER: return "iter";
	case METHOD_PERF_EVENT: return "perf_event";
	default: return "none";
	}
}

int parse_method(const char *s, enum method *m)
{
	static const enum method all[] = { METHOD_FENTRY, METHOD_KPROBE, METHOD_TP_BTF, METHOD_RAW_TP };

	for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		if (!strcmp(s, method_name(all[i]))) {
			*m = all[i];
			return 0;
		}
	}
	if (!strcmp(s, "tracepoint")) {
		*m = METHOD_TP_BTF;
		return 0;
	}
	return -EINVAL;
}

/* ---- attach-point probes, cached: the same point is asked for by several sites ---- */

struct probe_result {
	char point[96];
	int ok;
	char why[160];
};
static struct probe_result cache[64];
static int ncache;

/*
 * The trial links, held until every point is probed: a tracepoint's last probe going (1 -> 0)
 * makes the next first attach anywhere wait a grace period (tracepoint_add_func()), so trials
 * closed one by one would wait one each, and all of them at once wait once.
 */
static int held[64];
static int nheld;

static void hold_link(int link)
{
	if (nheld < (int)(sizeof(held) / sizeof(held[0])))
		held[nheld++] = link;
	else
		close(link);
}

static void release_held(void)
{
	while (nheld > 0)
		close(held[--nheld]);
}
static struct btf *vmlinux_btf;

/* r0 = 0; exit */
static const struct bpf_insn ret0[] = {
	{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
	{ .code = BPF_JMP | BPF_EXIT },
};

static void set_errno_why(char *why, size_t n, const char *step, int err)
{
	snprintf(why, n, "%s refused: %s%s", step, strerror(err),
		 err == EPERM ? " (kernel policy, e.g. lockdown or BPF LSM)" : "");
}

const char *probes_btf_path(void)
{
	const char *path = getenv("ZCTRACE_BTF");

	return path && *path ? path : NULL;
}

/* The kernel's BTF: ZCTRACE_BTF names a file holding it, else libbpf finds it (/sys/kernel/btf/vmlinux). */
static struct btf *load_btf(char *why, size_t n)
{
	static int err;
	const char *path = probes_btf_path();

	if (vmlinux_btf || err)
		goto out;
	vmlinux_btf = path ? btf__parse(path, NULL) : btf__load_vmlinux_btf();
	if (!vmlinux_btf)
		err = errno ? errno : ENOENT;
out:
	if (!vmlinux_btf)
		snprintf(why, n, "no kernel BTF (%s: %s)", path ? path : "/sys/kernel/btf/vmlinux", strerror(err));
	return vmlinux_btf;
}

int probes_check_btf(char *why, size_t n)
{
	return load_btf(why, n) ? 0 : -ENOENT;
}

/*
 * vmlinux's functions, typedefs and structs by name and kind: an open-addressed table of type ids,
 * built in one walk of the kernel's types. btf__find_by_name_kind() walks all of them (130,000 on
 * 6.18) for each name: a millisecond here, 20 under QEMU's emulation, for each of the 30 a run
 * asks. Where two types share a name and kind (static functions of two files), the first id is
 * kept, as btf__find_by_name_kind() finds it. NULL if it could not be allocated: btf_id() walks.
 */
static __u32 *named, named_mask;

static __u32 name_hash(const char *name, int kind)
{
	__u32 h = 2166136261u ^ (__u32)kind;	/* FNV-1a */

	while (*name)
		h = (h ^ (unsigned char)*name++) * 16777619u;
	return h;
}

static bool indexed_kind(int kind)
{
	return kind == BTF_KIND_FUNC || kind == BTF_KIND_TYPEDEF || kind == BTF_KIND_STRUCT;
}

/* The slot of @name of @kind in named[]: where its id is, or the empty slot (0) it would go to. */
static __u32 *name_slot(const char *name, int kind)
{
	for (__u32 i = name_hash(name, kind);; i++) {
		__u32 *slot = &named[i & named_mask];
		const struct btf_type *t = *slot ? btf__type_by_id(vmlinux_btf, *slot) : NULL;

		if (!t || (btf_kind(t) == kind && !strcmp(btf__name_by_offset(vmlinux_btf, t->name_off), name)))
			return slot;
	}
}

static void index_names(void)
{
	__u32 nr = btf__type_cnt(vmlinux_btf), size = 1;

	while (size < 2 * nr)	/* at most half full: short probe runs */
		size <<= 1;
	named = calloc(size, sizeof(*named));
	if (!named)
		return;
	named_mask = size - 1;
	for (__u32 id = 1; id < nr; id++) {
		const struct btf_type *t = btf__type_by_id(vmlinux_btf, id);
		__u32 *slot;

		if (!t->name_off || !indexed_kind(btf_kind(t)))
			continue;
		slot = name_slot(btf__name_by_offset(vmlinux_btf, t->name_off), btf_kind(t));
		if (!*slot)
			*slot = id;
	}
}

static int btf_id(const char *name, int kind, char *why, size_t n)
{
	int id;

	if (!load_btf(why, n))
		return -ENOENT;
	if (!named && indexed_kind(kind))
		index_names();
	if (named && indexed_kind(kind)) {
		__u32 slot = *name_slot(name, kind);

		id = slot ? (int)slot : -ENOENT;
	} else {
		id = btf__find_by_name_kind(vmlinux_btf, name, kind);
	}
	if (id < 0)
		snprintf(why, n, "%s not in kernel BTF", name);
	return id;
}

bool probes_btf_has_member(const char *st, const char *member)
{
	char why[160];
	int id = btf_id(st, BTF_KIND_STRUCT, why, sizeof(why));
	const struct btf_type *t = id > 0 ? btf__type_by_id(vmlinux_btf, id) : NULL;
	const struct btf_member *m = t ? btf_members(t) : NULL;

	for (int i = 0; m && i < btf_vlen(t); i++)
		if (!strcmp(btf__name_by_offset(vmlinux_btf, m[i].name_off), member))
			return true;
	return false;
}

/*
 * @name in the BTF of a loaded kernel module (ext4's tracepoints when ext4 is a module, as in
 * Debian's kernels): its id there, with *obj_fd holding that BTF open; -ENOENT if in none.
 */
static int module_btf_id(const char *name, int kind, int *obj_fd)
{
	__u32 id = 0;

	while (!bpf_btf_get_next_id(id, &id)) {
		struct bpf_btf_info info = {};
		__u32 len = sizeof(info);
		char mod[64] = "";
		struct btf *btf;
		int fd, tid;

		fd = bpf_btf_get_fd_by_id(id);
		if (fd < 0)
			continue;
		info.name = (__u64)(unsigned long)mod;
		info.name_len = sizeof(mod);
		if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.kernel_btf || !strcmp(mod, "vmlinux")) {
			close(fd);
			continue;
		}
		btf = btf__load_from_kernel_by_id_split(id, vmlinux_btf);
		tid = btf ? btf__find_by_name_kind(btf, name, kind) : -ENOENT;
		btf__free(btf);
		if (tid > 0) {
			*obj_fd = fd;
			return tid;
		}
		close(fd);
	}
	return -ENOENT;
}

/* One fentry trial attached: this kernel's trampolines work (zctrace runs the rest as loads alone). */
static bool fentry_attached;

/*
 * Loads a 2-instruction tracing program at the BTF id (of vmlinux, or of the module BTF @obj_fd
 * when not 0) and attaches it, as the real one would. libbpf-tools' fentry_can_attach() attaches
 * every trial: a load can pass where no fentry attaches (a kernel without trampolines for its
 * architecture). Here the first fentry trial attaches, and once one has, the others are loaded
 * alone: the load is where a kernel refuses fentry at a function (lockdown, its deny list, no BTF),
 * and each trial trampoline taken down waits out a grace period of ftrace's own, about 0.135 s a
 * function under QEMU's emulation. A function that loads but that ftrace cannot trace is refused
 * when the real program attaches (tracer.c sets its candidates aside and opens the object again).
 */
static int try_tracing(int attach_type, int id, int obj_fd, char *why, size_t n)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = attach_type, .attach_btf_id = id,
		    .attach_btf_obj_fd = obj_fd);
	int fd, link;

	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", ret0, 2, &opts);
	if (fd < 0) {
		set_errno_why(why, n, attach_type == BPF_TRACE_FENTRY ? "fentry load" : "tp_btf load", errno);
		return 0;
	}
	if (attach_type == BPF_TRACE_FENTRY && fentry_attached) {
		close(fd);
		return 1;
	}
	link = bpf_raw_tracepoint_open(NULL, fd);
	if (link < 0) {
		set_errno_why(why, n, "attach", errno);
		close(fd);
		return 0;
	}
	if (attach_type == BPF_TRACE_FENTRY)
		fentry_attached = true;
	hold_link(link);
	close(fd);
	return 1;
}

static int probe_fentry(const char *func, char *why, size_t n)
{
	int id = btf_id(func, BTF_KIND_FUNC, why, n);

	return id < 0 ? 0 : try_tracing(BPF_TRACE_FENTRY, id, 0, why, n);
}

static int probe_tp_btf(const char *tp, char *why, size_t n)
{
	char name[128];
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf_id(name, BTF_KIND_TYPEDEF, why, n);
	if (id < 0 && vmlinux_btf) {
		int obj_fd = -1, ok;

		id = module_btf_id(name, BTF_KIND_TYPEDEF, &obj_fd);
		if (id < 0) {
			snprintf(why, n, "tracepoint %s not in this kernel or its loaded modules", tp);
			return 0;
		}
		ok = try_tracing(BPF_TRACE_RAW_TP, id, obj_fd, why, n);
		close(obj_fd);
		return ok;
	}
	if (id < 0)	/* why says there is no BTF at all */
		return 0;
	return try_tracing(BPF_TRACE_RAW_TP, id, 0, why, n);
}

static int probe_raw_tp(const char *tp, char *why, size_t n)
{
	int fd, link;

	fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL, "GPL", ret0, 2, NULL);
	if (fd < 0) {
		set_errno_why(why, n, "raw_tp load", errno);
		return 0;
	}
	link = bpf_raw_tracepoint_open(tp, fd);
	if (link < 0)
		set_errno_why(why, n, "raw_tp attach", errno);
	else
		hold_link(link);
	close(fd);
	return link >= 0;
}

/* A sampling event @event ("cpu-clock") on one CPU for every task, as the sampler opens it. */
static int probe_perf_event(const char *event, char *why, size_t n)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK, .sample_period = 1000000 };
	int fd;

	if (strcmp(event, "cpu-clock")) {
		snprintf(why, n, "unknown sampling event %s", event);
		return 0;
	}
	fd = syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		set_errno_why(why, n, "perf_event_open cpu-clock", errno);
		return 0;
	}
	close(fd);
	return 1;
}

static bool symbol_in_kallsyms(const char *func)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], name[256];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %*s %255s", name) == 1 && !strcmp(name, func))
			found = true;
	}
	fclose(f);
	return found;
}

/*
 * A real trial, as libbpf would attach it: a kprobe perf event on @func through the kprobe PMU.
 * Being in kallsyms is not enough: kernels refuse kprobes on some functions (the kprobe blacklist,
 * Debian's kernels on lib/iov_iter.c) with EINVAL only when the probe is registered. 1 if it
 * attached, 0 if refused (@why says how), -1 where there is no kprobe PMU to try it with.
 */
static int try_kprobe(const char *func, char *why, size_t n)
{
	struct perf_event_attr attr = { .size = sizeof(attr) };
	FILE *f = fopen("/sys/bus/event_source/devices/kprobe/type", "r");
	int type = -1, fd;

	if (f) {
		if (fscanf(f, "%d", &type) != 1)
			type = -1;
		fclose(f);
	}
	if (type < 0)	/* tracefs kprobe_events only (old kernels): no trial to make */
		return -1;
	attr.type = type;
	attr.config1 = (__u64)(unsigned long)func;	/* kprobe_func */
	fd = syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		snprintf(why, n, "kprobe on %s refused: %s%s", func, strerror(errno),
			 errno == EINVAL ? " (the kernel does not allow probing it)" : "");
		return 0;
	}
	close(fd);
	return 1;
}

static int probe_kprobe(const char *func, char *why, size_t n)
{
	int ok;

	/* libbpf attaches kprobes through the kprobe PMU, or tracefs kprobe_events on old kernels */
	if (access("/sys/bus/event_source/devices/kprobe/type", F_OK) &&
	    access("/sys/kernel/tracing/kprobe_events", F_OK) &&
	    access("/sys/kernel/debug/tracing/kprobe_events", F_OK)) {
		snprintf(why, n, "no kprobe PMU or kprobe_events (kernel without CONFIG_KPROBES)");
		return 0;
	}
	/*
	 * The trial first, and kallsyms only to say why one failed: a read of its 170,000 lines or
	 * more cost each kprobe candidate half a second under emulation. Without the kprobe PMU,
	 * kallsyms is all there is to ask.
	 */
	ok = try_kprobe(func, why, n);
	if (ok > 0)
		return 1;
	if (!symbol_in_kallsyms(func)) {
		snprintf(why, n, "%s not in /proc/kallsyms (inlined or absent)", func);
		return 0;
	}
	return ok < 0;
}

static int probe_usdt(char *why, size_t n)
{
	if (access("/sys/bus/event_source/devices/uprobe/type", F_OK)) {
		snprintf(why, n, "no uprobe PMU (kernel without CONFIG_UPROBES)");
		return 0;
	}
	return 1;
}

/*
 * ZCTRACE_REFUSE=POINT[,POINT...] refuses those attach points as if this kernel lacked them (e.g.
 * "tp_btf:tcp_sendmsg_locked,raw_tp:sched_switch"): what zctrace does without a tracepoint, shown
 * on a kernel that has it. "load:PROG" and "attach:PROG" make the kernel refuse that program at load
 * (the verifier, given a target with fewer arguments than the program reads) or at attach (tracer.c).
 */
bool probes_refused_by_env(const char *point)
{
	const char *list = getenv("ZCTRACE_REFUSE"), *p = list;
	size_t n = strlen(point);

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, point, n))
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

static const struct probe_result *probe_point(const char *point)
{
	struct probe_result *r;
	const char *arg = strchr(point, ':');

	for (int i = 0; i < ncache; i++)
		if (!strcmp(cache[i].point, point))
			return &cache[i];
	r = ncache < (int)(sizeof(cache) / sizeof(cache[0])) ? &cache[ncache++] : &cache[0];
	snprintf(r->point, sizeof(r->point), "%s", point);
	r->why[0] = '\0';
	arg = arg ? arg + 1 : "";
	if (probes_refused_by_env(point)) {
		r->ok = 0;
		snprintf(r->why, sizeof(r->why), "refused by ZCTRACE_REFUSE (simulated: as if the kernel lacked it)");
	} else if (!strncmp(point, "fentry:", 7))
		r->ok = probe_fentry(arg, r->why, sizeof(r->why));
	else if (!strncmp(point, "kprobe:", 7))
		r->ok = probe_kprobe(arg, r->why, sizeof(r->why));
	else if (!strncmp(point, "tp_btf:", 7))
		r->ok = probe_tp_btf(arg, r->why, sizeof(r->why));
	else if (!strncmp(point, "raw_tp:", 7))
		r->ok = probe_raw_tp(arg, r->why, sizeof(r->why));
	else if (!strcmp(point, "usdt"))
		r->ok = probe_usdt(r->why, sizeof(r->why));
	else if (!strncmp(point, "perf:", 5))
		r->ok = probe_perf_event(arg, r->why, sizeof(r->why));
	else
		snprintf(r->why, sizeof(r->why), "unknown attach point %s", point);
	return r;
}

/* The I/O syscalls the file and pipe sites and the boundary account follow, by this architecture's numbers. */
static void set_io_table(struct zctrace_bpf *obj)
{
	static const int io_sites[] = {
		SITE_DIRECT_IO, SITE_FILE_READ_COPY, SITE_FILE_WRITE_COPY, SITE_KERNEL_COPY,
		SITE_PIPE_WRITE_COPY, SITE_PIPE_REF, SITE_PIPE_READ_COPY, SITE_UDP_SEND_COPY,
		SITE_UNIX_SEND_COPY, SITE_UDP_RECV_COPY, PROBE_BOUNDARY,
	};
	/* the socket calls: their descriptors say which send site a return feeds, a UDP receive's skb
	 * has no socket of its own left */
	bool any = false, sockets = obj->rodata->track_boundary ||
		obj->rodata->site_method[SITE_UDP_SEND_COPY] != METHOD_NONE ||
		obj->rodata->site_method[SITE_UNIX_SEND_COPY] != METHOD_NONE ||
		obj->rodata->site_method[SITE_UDP_RECV_COPY] != METHOD_NONE;

	for (unsigned i = 0; i < sizeof(io_sites) / sizeof(io_sites[0]); i++)
		any |= io_sites[i] < NR_SITES ? obj->rodata->site_method[io_sites[i]] != METHOD_NONE :
		       obj->rodata->track_boundary;
	obj->rodata->track_io = any;
	obj->rodata->o_direct_flag = O_DIRECT;
	obj->rodata->nr_cpus = libbpf_num_possible_cpus() > 0 ? libbpf_num_possible_cpus() : 1;
	obj->rodata->execve_nr = SYS_execve;	/* where perf's enable_on_exec starts counting */
	obj->rodata->recvfrom_nr = SYS_recvfrom;
	obj->rodata->sendto_nr = SYS_sendto;
	/* the socket calls only where needed: their exits then cost no lookup without it */
	for (int i = 0; i < NR_IO_SYSCALLS; i++)
		if (io_call_defs[i].nr >= 0 && io_call_defs[i].nr < MAX_SYSCALLS &&
		    (sockets || !io_kind_socket(io_call_defs[i].kind)))
			obj->rodata->io_kind_of[io_call_defs[i].nr] = io_call_defs[i].kind;
	for (int op = 0; op < MAX_URING_OPS; op++)
		obj->rodata->uring_kind_of[op] = uring_op_kind(op);
	/* the I/O syscalls' own programs, each its syscall's number (a constant to the verifier) */
	for (int i = 0; i < NR_IO_SYSCALLS; i++)
		obj->rodata->io_syscall_nr[i] = io_call_defs[i].nr;
}

/* A skeleton program's name; a name the skeleton lacks does not compile. */
#define IO_PROG(name) (#name + 0 * sizeof(((struct zctrace_bpf *)0)->progs.name))
#define IO_PAIR(call, kind) IO_PROG(io_##call##_entry), IO_PROG(io_##call##_exit),

/* zctrace.h's list, by the functions' names: each syscall's entry, then its exit */
const char *const io_fentry_progs[] = { ZCT_IO_SYSCALLS(IO_PAIR) };
const int nr_io_fentry_progs = sizeof(io_fentry_progs) / sizeof(io_fentry_progs[0]);

bool is_io_fentry_prog(const char *prog)
{
	for (int i = 0; i < nr_io_fentry_progs; i++)
		if (!strcmp(io_fentry_progs[i], prog))
			return true;
	return false;
}

/*
 * Whether fentry attaches to every I/O syscall's function here ("fentry:__x64_sys_read", ...,
 * from the programs' names); if not, why in @why.
 */
static bool io_fentry_allowed(char *why, size_t n)
{
#if defined(__x86_64__)
	const char *prefix = "fentry:__x64_sys_";
#elif defined(__aarch64__)
	const char *prefix = "fentry:__arm64_sys_";
#else
	const char *prefix = NULL;
#endif
	if (!prefix) {
		snprintf(why, n, "no syscall function names known for this architecture");
		return false;
	}
	/* each entry's program names its syscall: io_<call>_entry */
	for (int i = 0; i < nr_io_fentry_progs; i += 2) {
		const char *call = io_fentry_progs[i] + strlen("io_");
		char point[96];
		const struct probe_result *r;

		snprintf(point, sizeof(point), "%s%.*s", prefix, (int)(strlen(call) - strlen("_entry")), call);
		r = probe_point(point);
		if (!r->ok) {
			snprintf(why, n, "%.60s: %.180s", point, r->why);
			return false;
		}
	}
	return true;
}

/* Whether this kernel is a PREEMPT_RT build: /sys/kernel/realtime, else its version string. */
bool kernel_preempt_rt(void)
{
	static int rt = -1;
	struct utsname u;
	char c = 0;
	int fd;

	if (rt >= 0)
		return rt;
	fd = open("/sys/kernel/realtime", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		rt = read(fd, &c, 1) == 1 && c == '1';
		close(fd);
	} else {
		rt = !uname(&u) && strstr(u.version, "PREEMPT_RT");
	}
	return rt;
}

/*
 * Whether fentry and fexit are passed over for kprobes and tracepoints where a site has them: on a
 * PREEMPT_RT kernel, unless --method fentry asks for them. Their programs run with migration off
 * but preemption on, and the kernel skips a program that fires while it runs on the CPU: on RT a
 * thread is preempted inside one and the next thread on that CPU to reach it loses its run.
 */
static bool fentry_passed_over(enum method cap)
{
	return cap != METHOD_FENTRY && kernel_preempt_rt();
}

/*
 * The round in which a candidate of method @m may be chosen: on PREEMPT_RT, tracepoints first,
 * then kprobes, then fentry (unless --method names one of those). Tracepoint programs run with
 * preemption off and are skipped only when they nest in themselves. Every kprobe program shares
 * one busy count per CPU with the bpf() calls that read or write maps, and on RT the task in such
 * a call can be preempted with the count held: then every kprobe run on that CPU is skipped (any
 * tracer's map reads do it; kernels before 6.7 do not count those skips).
 */
static int rt_round(enum method m, enum method cap)
{
	if (!fentry_passed_over(cap))
		return 0;
	if (m == METHOD_FENTRY)
		return 2;
	return m == METHOD_KPROBE && cap != METHOD_KPROBE ? 1 : 0;
}

/* Decides how the I/O syscalls are followed (choice[PROBE_SYSCALLS].io), the syscalls figure with it. */
static void choose_io_hooks(struct probe_choice *choice, enum method cap)
{
	struct probe_choice *sc = &choice[PROBE_SYSCALLS];

	if (sc->io != IO_HOOKS_TPS && fentry_passed_over(cap)) {
		snprintf(sc->io_why, sizeof(sc->io_why), "%s", PREEMPT_RT_WHY);
		sc->io = IO_HOOKS_TPS;
	} else if (sc->io != IO_HOOKS_TPS) {
		sc->io = io_fentry_allowed(sc->io_why, sizeof(sc->io_why)) ? IO_HOOKS_FENTRY : IO_HOOKS_TPS;
	}
	if (sc->io == IO_HOOKS_FENTRY && !sc->skip) {
		sc->skip = true;
		snprintf(sc->why_not[0], sizeof(sc->why_not[0]), "%s", IO_FENTRY_SYSCALLS_WHY);
	} else if (sc->io == IO_HOOKS_TPS && sc->skip && !strcmp(sc->why_not[0], IO_FENTRY_SYSCALLS_WHY)) {
		sc->skip = false;
	}
}

/* Whether @need, a syscall tracepoint, is met by the I/O syscalls' fentry/fexit programs instead. */
static bool io_need_met(const struct probe_choice *choice, const char *need)
{
	return choice[PROBE_SYSCALLS].io == IO_HOOKS_FENTRY &&
	       (!strcmp(need, "tp_btf:sys_enter") || !strcmp(need, "tp_btf:sys_exit"));
}

/* Autoloads program @name, or where the I/O syscalls are followed by fentry and it is a syscall
 * tracepoint's, theirs. 0 or -ENOENT. */
static int autoload(struct zctrace_bpf *obj, const struct probe_choice *choice, const char *name)
{
	struct bpf_program *prog;

	if (choice[PROBE_SYSCALLS].io == IO_HOOKS_FENTRY &&
	    (!strcmp(name, bpf_program__name(obj->progs.sys_enter_btf)) ||
	     !strcmp(name, bpf_program__name(obj->progs.sys_exit_btf)))) {
		for (int i = 0; i < nr_io_fentry_progs; i++)
			if (autoload(obj, choice, io_fentry_progs[i]))
				return -ENOENT;
		return 0;
	}
	prog = bpf_object__find_program_by_name(obj->obj, name);
	if (!prog) {
		fprintf(stderr, "zctrace: BPF program %s missing from the object\n", name);
		return -ENOENT;
	}
	bpf_program__set_autoload(prog, true);
	return 0;
}

/* Whether the candidate @cand attaches program @prog. */
static bool cand_holds(const struct candidate *cand, const char *prog)
{
	for (int p = 0; p < MAX_PROGS && cand->progs[p]; p++)
		if (!strcmp(cand->progs[p], prog))
			return true;
	return false;
}

static int method_rank(enum method m)
{
	return m == METHOD_FENTRY ? 0 : m == METHOD_KPROBE ? 1 : 2;
}

static int choose_held(struct zctrace_bpf *obj, struct probe_choice *choice, enum method cap)
{
	struct bpf_program *prog;

	if (obj) {
		bpf_object__for_each_program(prog, obj->obj)
			bpf_program__set_autoload(prog, false);
	}
	choose_io_hooks(choice, cap);
	for (int s = 0; s < NR_PROBES; s++) {
		const struct probe_site *ps = &probe_sites[s];
		struct probe_choice *ch = &choice[s];

		ch->chosen = -1;
		if (ch->skip)
			continue;
		for (int c = 0; c < MAX_CANDIDATES && ps->cands[c].label; c++)
			ch->round[c] = rt_round(ps->cands[c].method, cap);
		/* on PREEMPT_RT, kprobes where no tracepoint attaches, fentry where nothing else does */
		for (int round = 0; round < 1 + 2 * fentry_passed_over(cap) && ch->chosen < 0; round++)
		for (int c = 0; c < MAX_CANDIDATES && ps->cands[c].label; c++) {
			const struct candidate *cand = &ps->cands[c];
			int its = ch->round[c];

			if (ch->refused[c])	/* the kernel refused it at load or attach: why_not says how */
				continue;
			if (its < round)	/* tried in its own round, and why_not says why not */
				continue;
			ch->why_not[c][0] = '\0';
			if (cap != METHOD_NONE && method_rank(cand->method) < method_rank(cap)) {
				snprintf(ch->why_not[c], sizeof(ch->why_not[c]), "skipped: --method %s",
					 method_name(cap));
				continue;
			}
			if (its > round) {
				snprintf(ch->why_not[c], sizeof(ch->why_not[c]), "%s",
					 cand->method == METHOD_FENTRY ? PREEMPT_RT_WHY : PREEMPT_RT_KPROBE_WHY);
				continue;
			}
			for (int k = 0; k < MAX_NEEDS && cand->needs[k]; k++) {
				const struct probe_result *r;

				if (io_need_met(choice, cand->needs[k]))
					continue;
				r = probe_point(cand->needs[k]);
				if (!r->ok) {
					snprintf(ch->why_not[c], sizeof(ch->why_not[c]), "%s: %s",
						 cand->needs[k], r->why);
					break;
				}
			}
			if (!ch->why_not[c][0]) {
				ch->chosen = c;
				break;
			}
		}
		if (ch->chosen < 0) {
			if (ps->required) {
				fprintf(stderr, "zctrace: no way to attach '%s' on this kernel: %s\n", ps->name,
					ch->why_not[0]);
				return -ENOTSUP;
			}
			continue;
		}
		if (!obj)
			continue;
		for (int p = 0; p < MAX_PROGS && ps->cands[ch->chosen].progs[p]; p++)
			if (autoload(obj, choice, ps->cands[ch->chosen].progs[p]))
				return -ENOENT;
		if (s < NR_SITES)
			obj->rodata->site_method[s] = ps->cands[ch->chosen].method;
		if (s == PROBE_BOUNDARY)
			obj->rodata->track_boundary = 1;
		if (s == PROBE_CENSUS)
			obj->rodata->census_threads = 1;
		if (s == PROBE_ZC_NOTICES)
			obj->rodata->zc_notices_on = 1;
		if (s == PROBE_TCP_COUNTERS)
			obj->rodata->tcp_counters = 1;
		if (ps->cands[ch->chosen].from_counters)
			obj->rodata->tcp_derived |= s == SITE_SEND_COPY ? TCP_DERIVED_SEND : TCP_DERIVED_RECV;
		if (ps->cands[ch->chosen].standalone)
			obj->rodata->standalone_sites |= 1U << s;
		/* one program, three jobs: each done only where its probe chose it */
		if (cand_holds(&ps->cands[ch->chosen], bpf_program__name(obj->progs.io_uring_complete_btf))) {
			if (s == PROBE_ZC_NOTICES)
				obj->rodata->uring_notices = 1;
			if (s == PROBE_BOUNDARY)
				obj->rodata->uring_account = 1;
			if (s == SITE_FILE_READ_COPY || s == SITE_FILE_WRITE_COPY || s == SITE_DIRECT_IO)
				obj->rodata->uring_file_sites |= 1U << s;
		}
	}
	if (obj) {
		obj->rodata->tp_send_loop = bpf_program__autoload(obj->progs.tcp_sendmsg_locked_btf);
		/* a socket call's slot stays on the CPU: sched_switch moves it with its thread (tp_btf)
		 * or clears it (raw_tp) */
		obj->rodata->socket_lengths = bpf_program__autoload(obj->progs.sock_send_length_btf) &&
					      bpf_program__autoload(obj->progs.sock_recv_length_btf) &&
					      (bpf_program__autoload(obj->progs.switch_btf) ||
					       bpf_program__autoload(obj->progs.switch_raw));
		set_io_table(obj);
		/* preallocated (an LRU): one entry where no notice is followed */
		if (!obj->rodata->zc_notices_on && bpf_map__set_max_entries(obj->maps.zc_calls, 1))
			return -EINVAL;
	}
	return 0;
}

int choose_probes(struct zctrace_bpf *obj, struct probe_choice *choice, enum method cap)
{
	int err = choose_held(obj, choice, cap);

	release_held();
	return err;
}

enum method site_method_of(const struct probe_choice *choice, int site, const char **label)
{
	int c = site >= 0 && site < NR_SITES ? choice[site].chosen : -1;

	if (label)
		*label = c >= 0 ? probe_sites[site].cands[c].label : "not attached";
	return c >= 0 ? probe_sites[site].cands[c].method : METHOD_NONE;
}

bool probe_point_ok(const char *point)
{
	return probe_point(point)->ok;
}

bool probe_attached(const struct probe_choice *choice, int id)
{
	return choice && id >= 0 && id < NR_PROBES && choice[id].chosen >= 0;
}

const char *probe_refusal(const struct probe_choice *choice, int s)
{
	const struct probe_site *ps = &probe_sites[s];
	int last = -1;

	if (choice[s].chosen >= 0)
		return NULL;
	for (int c = 0; c < MAX_CANDIDATES && ps->cands[c].label; c++) {
		/* what the user can do about it, first: --complete */
		if (!strcmp(choice[s].why_not[c], NEEDS_SYSCALL_TPS_WHY))
			return choice[s].why_not[c];
		if (choice[s].why_not[c][0])
			last = c;
	}
	return last >= 0 ? choice[s].why_not[last] : "no candidate";
}
