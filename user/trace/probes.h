/* Run-time choice of one attach method per probe site, best first. */
#ifndef PROBES_H
#define PROBES_H

#include <stdbool.h>
#include <stdio.h>
#include "trace/sites.h"

struct zctrace_bpf;

/*
 * How the I/O syscalls are followed from entry to exit (the file, pipe and socket sites that
 * need it, the boundary account): by the raw syscall tracepoints sys_enter/sys_exit, which put
 * every task of the machine on the syscall slow path, or, where fentry is allowed, by fentry/fexit
 * on the I/O syscalls' own functions, which cost only those calls (syscalls by number are then
 * not counted).
 */
enum io_hooks {
	IO_HOOKS_TPS,		/* the raw syscall tracepoints */
	IO_HOOKS_WANT_FENTRY,	/* fentry/fexit where the kernel allows them on every one */
	IO_HOOKS_FENTRY,	/* ... chosen */
};

struct probe_choice {
	int chosen;				/* index into cands, -1 if none attaches */
	bool refused[MAX_CANDIDATES];		/* refused at load or attach: never chosen again */
	bool skip;				/* not wanted by this run: why_not[0] says why */
	char why_not[MAX_CANDIDATES][256];	/* why each better candidate was refused */
	unsigned char round[MAX_CANDIDATES];	/* when each may be chosen: on PREEMPT_RT kprobes after
						 * tracepoints, fentry last (rt_round()); else 0 */
	/* PROBE_SYSCALLS's alone: how the I/O syscalls are followed, and why not by fentry */
	enum io_hooks io;
	char io_why[256];
};

/* The I/O syscalls' fentry/fexit programs (bpf/io_syscalls.bpf.c). */
extern const char *const io_fentry_progs[];
extern const int nr_io_fentry_progs;
/* Why the syscalls figure is absent where the I/O syscalls are followed by fentry. */
/* why fentry is passed over on a PREEMPT_RT kernel (fentry_passed_over()) */
#define PREEMPT_RT_WHY "passed over on this PREEMPT_RT kernel: its programs can be preempted, and the kernel " \
	"then skips the runs of the next thread on the CPU (--method fentry takes it)"
/* why a kprobe is passed over for a tracepoint on a PREEMPT_RT kernel (rt_round()) */
#define PREEMPT_RT_KPROBE_WHY "passed over on this PREEMPT_RT kernel: its runs are skipped while a " \
	"task preempted in a bpf() map call holds the CPU's BPF count (--method kprobe takes it)"
#define IO_FENTRY_SYSCALLS_WHY "not measured: only the I/O syscalls are followed, at their functions " \
	"(add --complete for the raw syscall tracepoints)"


/*
 * Decides every site's method; with @obj set, also sets autoload and the BPF rodata. How the I/O
 * syscalls are followed is choice[PROBE_SYSCALLS].io's: IO_HOOKS_WANT_FENTRY is made
 * IO_HOOKS_FENTRY where the kernel allows it, else IO_HOOKS_TPS with why in its io_why.
 */
int choose_probes(struct zctrace_bpf *obj, struct probe_choice *choice, enum method cap);
/* Whether this kernel is a PREEMPT_RT build (fentry is then passed over: probes.c). */
bool kernel_preempt_rt(void);
/* Whether @prog is one of the I/O syscalls' fentry/fexit programs. */
bool is_io_fentry_prog(const char *prog);
const char *method_name(enum method m);
int parse_method(const char *s, enum method *m);
/* ZCTRACE_REFUSE names @point ("tp_btf:T", "load:PROG", "attach:PROG", ...): refuse it. */
bool probes_refused_by_env(const char *point);
/* ZCTRACE_BTF: a file with the kernel's BTF to use instead of /sys/kernel/btf/vmlinux; NULL if unset. */
const char *probes_btf_path(void);
/* 0 when the kernel's BTF loads; else -ENOENT and why (naming BTF and the file). */
int probes_check_btf(char *why, size_t n);
/* Whether the kernel's struct @st has a member @member (false where there is no BTF). */
bool probes_btf_has_member(const char *st, const char *member);
/* Why probe site @s (enum probe_id) attached nothing: its last candidate's refusal; NULL if attached. */
const char *probe_refusal(const struct probe_choice *choice, int s);
/* Whether the kernel offers attach point @point ("tp_btf:T", "fentry:F", ...), as the choice tests it. */
bool probe_point_ok(const char *point);
/* Whether probe site @id (enum probe_id) attached. */
bool probe_attached(const struct probe_choice *choice, int id);
/* The method a copy site counts through, or METHOD_NONE. */
enum method site_method_of(const struct probe_choice *choice, int site, const char **label);

#endif
