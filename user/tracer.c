/*
 * The tracer's lifecycle. libbpf loads an object whole, so a program the kernel refuses fails them
 * all: the refused program is found (libbpf's log names it at load; attach goes program by program),
 * every chosen candidate holding it is set aside with the kernel's reason, and the object is opened
 * again, the way libbpf-tools falls back from fentry to kprobes, but decided by the kernel itself.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "tracer.h"
#include "zctrace.skel.h"

/* What the last load said about the program it refused. */
static struct {
	char prog[64];
	char why[200];
} refusal;
static libbpf_print_fn_t next_print;

/* The verifier's verdict: the last line of a load log that is not a statistic. */
static void note_verdict(const char *log)
{
	const char *end = strstr(log, "-- END PROG LOAD LOG --"), *line, *p;

	if (!end)
		return;
	for (p = end; p > log;) {
		const char *stop = p - 1;	/* the newline ending the line before p */

		for (line = stop; line > log && line[-1] != '\n'; line--)
			;
		if (stop > line && strncmp(line, "processed ", 10) && strncmp(line, "verification time", 17) &&
		    strncmp(line, "stack depth", 11)) {
			snprintf(refusal.why, sizeof(refusal.why), "verifier: %.*s", (int)(stop - line), line);
			return;
		}
		p = line;
	}
}

static int capture_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	char buf[16384];
	const char *name;
	va_list copy;

	va_copy(copy, args);
	vsnprintf(buf, sizeof(buf), fmt, copy);
	va_end(copy);
	/* "libbpf: prog 'NAME': ..." */
	if ((name = strstr(buf, "prog '"))) {
		const char *q = strchr(name + 6, '\'');

		if (q && (strstr(q, "BEGIN PROG LOAD LOG") || strstr(q, "failed to load") ||
			  strstr(q, "load failed"))) {
			snprintf(refusal.prog, sizeof(refusal.prog), "%.*s", (int)(q - name - 6), name + 6);
			note_verdict(buf);
		}
	}
	return next_print ? next_print(level, fmt, args) : 0;
}

/* Drops the per-packet zerocopy path: two events per packet of the whole machine, for nothing. */
static void skip_zc_path(struct zctrace_bpf *obj, struct probe_choice *choice)
{
	for (int s = 0; s < nr_probe_sites; s++) {
		if (strcmp(probe_sites[s].name, "zc_path") || choice[s].chosen < 0)
			continue;
		bpf_program__set_autoload(obj->progs.net_dev_start_xmit_btf, false);
		bpf_program__set_autoload(obj->progs.netif_receive_skb_btf, false);
		snprintf(choice[s].why_not[0], sizeof(choice[s].why_not[0]),
			 "not attached: this workload makes no MSG_ZEROCOPY send");
		choice[s].chosen = -1;
	}
}

/* Sets aside every chosen candidate that holds program @prog; how many were. */
static int refuse_holders(struct probe_choice *choice, const char *prog, const char *why)
{
	int n = 0;

	for (int s = 0; s < nr_probe_sites; s++) {
		const struct candidate *cand;
		int c = choice[s].chosen;

		if (c < 0)
			continue;
		cand = &probe_sites[s].cands[c];
		for (int p = 0; p < MAX_PROGS && cand->progs[p]; p++) {
			if (strcmp(cand->progs[p], prog))
				continue;
			choice[s].refused[c] = true;
			snprintf(choice[s].why_not[c], sizeof(choice[s].why_not[c]), "program %.40s: %.200s", prog, why);
			n++;
			break;
		}
	}
	return n;
}

/* Attaches program by program, so that a refusal names its program. */
static int attach_all(struct zctrace_bpf *obj, char *prog, size_t n)
{
	struct bpf_object_skeleton *sk = obj->skeleton;

	for (int i = 0; i < sk->prog_cnt; i++) {
		struct bpf_program *p = *sk->progs[i].prog;
		struct bpf_link **link = sk->progs[i].link;

		/* USDT programs attach per binary, once the target exists */
		if (!bpf_program__autoload(p) || !strcmp(bpf_program__section_name(p), "usdt"))
			continue;
		*link = bpf_program__attach(p);
		if (!*link) {
			int err = -errno;

			*link = NULL;
			snprintf(prog, n, "%s", bpf_program__name(p));
			return err ? err : -EINVAL;
		}
	}
	return 0;
}

int tracer_start(struct zctrace_bpf **objp, struct probe_choice *choice, const struct tracer_opts *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = probes_btf_path());
	int max_tries = nr_probe_sites * MAX_CANDIDATES, err = 0;
	struct zctrace_bpf *obj = NULL;

	next_print = libbpf_set_print(capture_print);
	for (int tries = 0; tries < max_tries; tries++) {
		char prog[64], why[256];
		bool loading = true;

		obj = zctrace_bpf__open_opts(&open_opts);
		if (!obj) {
			err = -errno;
			fprintf(stderr, "zctrace: cannot open the BPF object: %s\n", strerror(errno));
			break;
		}
		if ((err = choose_probes(obj, choice, o->cap)))
			break;
		if (o->skip_zc_path)
			skip_zc_path(obj, choice);
		obj->rodata->gate_on_phase = o->gate_on_phase;
		refusal.prog[0] = refusal.why[0] = '\0';
		err = zctrace_bpf__load(obj);
		if (!err) {
			loading = false;
			err = attach_all(obj, prog, sizeof(prog));
			if (!err)
				break;
			snprintf(why, sizeof(why), "attach refused: %s", strerror(-err));
		} else {
			snprintf(prog, sizeof(prog), "%s", refusal.prog);
			snprintf(why, sizeof(why), "load refused: %s", refusal.why[0] ? refusal.why : strerror(-err));
		}
		if (!prog[0] || !refuse_holders(choice, prog, why)) {
			fprintf(stderr, "zctrace: cannot %s the BPF programs: %s (try -v)\n",
				loading ? "load" : "attach", strerror(-err));
			break;
		}
		zctrace_bpf__destroy(obj);
		obj = NULL;
	}
	libbpf_set_print(next_print);
	if (err && !obj)
		fprintf(stderr, "zctrace: every candidate the kernel offered was refused\n");
	if (err) {
		zctrace_bpf__destroy(obj);
		obj = NULL;
	}
	*objp = obj;
	return err;
}

void tracer_stop(struct zctrace_bpf *obj)
{
	zctrace_bpf__destroy(obj);
}
