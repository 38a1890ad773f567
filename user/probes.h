/* Run-time choice of one attach method per probe site, best first. */
#ifndef PROBES_H
#define PROBES_H

#include <stdbool.h>
#include <stdio.h>
#include "sites.h"

struct zctrace_bpf;

struct probe_choice {
	int chosen;				/* index into cands, -1 if none attaches */
	bool refused[MAX_CANDIDATES];		/* refused at load or attach: never chosen again */
	bool skip;				/* not wanted by this run: why_not[0] says why */
	char why_not[MAX_CANDIDATES][256];	/* why each better candidate was refused */
};

/* Decides every site's method; with @obj set, also sets autoload and the BPF rodata. */
int choose_probes(struct zctrace_bpf *obj, struct probe_choice *choice, enum method cap);
const char *method_name(enum method m);
int parse_method(const char *s, enum method *m);
void print_probes(FILE *f, const struct probe_choice *choice);
/* ZCTRACE_REFUSE names @point ("tp_btf:T", "load:PROG", "attach:PROG", ...): refuse it. */
bool probes_refused_by_env(const char *point);
/* ZCTRACE_BTF: a file with the kernel's BTF to use instead of /sys/kernel/btf/vmlinux; NULL if unset. */
const char *probes_btf_path(void);
/* 0 when the kernel's BTF loads; else -ENOENT and why (naming BTF and the file). */
int probes_check_btf(char *why, size_t n);
/* Why probe site @s (enum probe_id) attached nothing: its last candidate's refusal; NULL if attached. */
const char *probe_refusal(const struct probe_choice *choice, int s);
/* Whether probe site @id (enum probe_id) attached. */
bool probe_attached(const struct probe_choice *choice, int id);
/* The method a copy site counts through, or METHOD_NONE. */
enum method site_method_of(const struct probe_choice *choice, int site, const char **label);

#endif
