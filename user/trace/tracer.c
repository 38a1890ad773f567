/*
 * The tracer's lifecycle. libbpf loads an object whole, so a program the kernel refuses fails them
 * all: the refused program is found (libbpf's log names it at load; attach goes program by program),
 * every chosen candidate holding it is set aside with the kernel's reason, and the object is opened
 * again, the way libbpf-tools falls back from fentry to kprobes, but decided by the kernel itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stdlib.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "trace/tracer.h"
#include "trace/cost.h"
#include "trace/workloads.h"
#include "zctrace.skel.h"
#include "zctrace_compat.skel.h"

#define MAX_GONE_PROGS 128
#define MAX_DATA_SECS 4
#define THREAD_STATES 16384	/* threads whose state a kernel without task storage keeps (its hashes' bound) */

/*
 * The object's global data as loaded, put back between the runs of one loaded tracer
 * (tracer_reset()): a sweep loads once and runs every workload of its grid under it.
 */
static struct {
	const struct zctrace_bpf *obj;
	struct {
		void *live;
		void *copy;
		size_t size;
	} sec[MAX_DATA_SECS];
	int n;
} loaded;

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
	char *buf = NULL;
	const char *name;
	va_list copy;

	/* the whole message: a load log's verdict is its last line, however long the log */
	va_copy(copy, args);
	if (vasprintf(&buf, fmt, copy) < 0)
		buf = NULL;
	va_end(copy);
	if (!buf)
		goto forward;
	/* "libbpf: prog 'NAME': ..." */
	if ((name = strstr(buf, "prog '"))) {
		const char *q = strchr(name + 6, '\'');

		if (q && (strstr(q, "BEGIN PROG LOAD LOG") || strstr(q, "failed to load") ||
			  strstr(q, "load failed"))) {
			snprintf(refusal.prog, sizeof(refusal.prog), "%.*s", (int)(q - name - 6), name + 6);
			note_verdict(buf);
		}
	}
	free(buf);
forward:
	return next_print ? next_print(level, fmt, args) : 0;
}

/*
 * Leaves the per-packet zerocopy path out: two events per packet of the whole machine, and the
 * transmit path's pulls, for nothing.
 */
static void skip_zc_path(struct probe_choice *choice)
{
	static const int ids[] = { PROBE_ZC_PATH, SITE_TX_COPY };

	for (unsigned i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct probe_choice *ch = &choice[ids[i]];

		ch->skip = true;
		snprintf(ch->why_not[0], sizeof(ch->why_not[0]), "not attached: this workload makes no zerocopy send");
	}
}

/* Leaves out the probe sites the run does not want. */
static void skip_probes(struct probe_choice *choice, unsigned long long skip, const char *why)
{
	for (int s = 0; s < NR_PROBES; s++) {
		if (!(skip & 1ULL << s))
			continue;
		choice[s].skip = true;
		snprintf(choice[s].why_not[0], sizeof(choice[s].why_not[0]), "not attached: %s", why);
	}
}

/* Whether candidate @c needs the raw syscall tracepoints. */
static bool needs_syscall_tps(const struct candidate *c)
{
	for (int k = 0; k < MAX_NEEDS && c->needs[k]; k++)
		if (strstr(c->needs[k], ":sys_enter") || strstr(c->needs[k], ":sys_exit"))
			return true;
	return false;
}

/*
 * Sets aside every candidate that needs the raw syscall tracepoints: attached, they put every
 * task of the machine on the syscall slow path, whatever the programs do.
 */
static void refuse_syscall_tps(struct probe_choice *choice)
{
	for (int s = 0; s < NR_PROBES; s++)
		for (int c = 0; c < MAX_CANDIDATES && probe_sites[s].cands[c].label; c++)
			if (needs_syscall_tps(&probe_sites[s].cands[c])) {
				choice[s].refused[c] = true;
				snprintf(choice[s].why_not[c], sizeof(choice[s].why_not[c]), "%s",
					 NEEDS_SYSCALL_TPS_WHY);
			}
}

/*
 * Sets aside the standalone candidates in a run: they count without following a call from its
 * entry, for the census; a run's ledger holds its sites against the calls it follows.
 */
static void refuse_standalone(struct probe_choice *choice)
{
	for (int s = 0; s < NR_PROBES; s++)
		for (int c = 0; c < MAX_CANDIDATES && probe_sites[s].cands[c].label; c++)
			if (probe_sites[s].cands[c].standalone)
				choice[s].refused[c] = true;	/* no reason: a run never offers it */
}

/* why census_without_calls() set a candidate aside */
#define CENSUS_WITHOUT_CALLS_WHY "the census counts without a program per call here"

/*
 * Whether a candidate of method @m may be taken under --method @cap (nothing better than it), and
 * where fentry is passed over (@no_fentry: --method, PREEMPT_RT, for what has another way).
 */
static bool method_allowed(enum method m, enum method cap, bool no_fentry)
{
	if (m == METHOD_FENTRY)
		return !no_fentry;
	return m != METHOD_KPROBE || cap == METHOD_NONE || cap == METHOD_FENTRY || cap == METHOD_KPROBE;
}

/* Whether every attach point candidate @c needs is there. */
static bool needs_met(const struct candidate *c)
{
	for (int k = 0; k < MAX_NEEDS && c->needs[k]; k++)
		if (!probe_point_ok(c->needs[k]))
			return false;
	return true;
}

/*
 * The census counts these sites without a program per call where it can: TCP from the sockets'
 * own counters (from_counters), a TCP or Unix receive once where the socket returns what it
 * copied or at the Unix functions, not once per skb copied, and TCP's page references at
 * splice_to_socket(), not under every send. Where such a candidate can attach, the site's
 * per-call and per-skb candidates are set aside; --per-call (@per_call) sets the counters' aside.
 */
static void census_without_calls(struct probe_choice *choice, enum method cap, bool per_call,
				 const char *no_counters)
{
	/* the counters' candidates take fentry programs beside their iterator: not where those are
	 * passed over (--method, PREEMPT_RT) */
	bool rt = kernel_preempt_rt() && cap != METHOD_FENTRY;
	bool no_fentry = rt || (cap != METHOD_NONE && cap != METHOD_FENTRY);
	static const int sites[] = { SITE_SEND_COPY, SITE_SPLICE_REF, SITE_RECV_COPY, SITE_UNIX_RECV_COPY };

	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		const struct probe_site *ps = &probe_sites[sites[i]];
		struct probe_choice *ch = &choice[sites[i]];
		const struct candidate *alone = NULL;

		for (int c = 0; c < MAX_CANDIDATES && ps->cands[c].label; c++) {
			/* again at each pass: a candidate the kernel refused since may have been the reason */
			if (!strncmp(ch->why_not[c], CENSUS_WITHOUT_CALLS_WHY, strlen(CENSUS_WITHOUT_CALLS_WHY))) {
				ch->refused[c] = false;
				ch->why_not[c][0] = '\0';
			}
			/* splice_to_socket() counts TCP's page references alone: only beside the counters */
			if (sites[i] == SITE_SPLICE_REF && ps->cands[c].standalone && !ch->refused[c] &&
			    (per_call || no_counters || no_fentry)) {
				ch->refused[c] = true;
				snprintf(ch->why_not[c], sizeof(ch->why_not[c]), "set aside: it counts TCP's page "
					 "references alone, for send_copy from the sockets' counters");
			}
			if (ps->cands[c].from_counters && !ch->refused[c] && (per_call || no_counters || no_fentry)) {
				ch->refused[c] = true;
				if (rt)
					snprintf(ch->why_not[c], sizeof(ch->why_not[c]), "%s", PREEMPT_RT_WHY);
				else if (no_fentry)
					snprintf(ch->why_not[c], sizeof(ch->why_not[c]), "skipped: --method %s "
						 "(the counters need fentry programs beside them)", method_name(cap));
				else
					snprintf(ch->why_not[c], sizeof(ch->why_not[c]), "%s",
						 per_call ? "set aside: --per-call" : no_counters);
			}
		}
		/* the counters first (none runs per call), then the site's other standalone ones in order */
		for (int pass = 0; pass < 2 && !alone; pass++)
			for (int c = 0; c < MAX_CANDIDATES && ps->cands[c].label && !alone; c++)
				if (ps->cands[c].standalone && ps->cands[c].from_counters == !pass && !ch->refused[c] &&
				    needs_met(&ps->cands[c]) && method_allowed(ps->cands[c].method, cap, no_fentry))
					alone = &ps->cands[c];
		for (int c = 0; c < MAX_CANDIDATES && ps->cands[c].label && alone; c++)
			if ((!ps->cands[c].standalone || (alone->from_counters && !ps->cands[c].from_counters)) &&
			    !ch->refused[c]) {
				ch->refused[c] = true;
				snprintf(ch->why_not[c], sizeof(ch->why_not[c]), "%s: %.180s",
					 CENSUS_WITHOUT_CALLS_WHY, alone->label);
			}
	}
}

/* Whether candidate @c attaches program @prog. */
static bool cand_holds_prog(const struct candidate *c, const char *prog)
{
	for (int p = 0; p < MAX_PROGS && c->progs[p]; p++)
		if (!strcmp(c->progs[p], prog))
			return true;
	return false;
}

/*
 * TCP's send copies from the sockets' counters are the bytes those took less what zc_pin and
 * splice_ref counted: right only where those two count TCP's pins and page references without a
 * program per send (fexit skb_zerocopy_iter_stream; splice_to_socket or do_tcp_sendpages). Else
 * the counters' candidate is set aside, and the census counts each send. 1 if it was.
 */
static int refuse_derived_alone(struct zctrace_bpf *obj, struct probe_choice *choice)
{
	const struct probe_choice *pin = &choice[SITE_ZC_PIN], *ref = &choice[SITE_SPLICE_REF];
	const struct probe_choice *send = &choice[SITE_SEND_COPY];
	char why[256];

	if (!bpf_program__autoload(obj->progs.tcp_sweep_iter) || send->chosen < 0 ||
	    !probe_sites[SITE_SEND_COPY].cands[send->chosen].from_counters)
		return 0;
	if (pin->chosen >= 0 && cand_holds_prog(&probe_sites[SITE_ZC_PIN].cands[pin->chosen],
						 bpf_program__name(obj->progs.skb_zerocopy_iter_stream_fexit)) &&
	    ref->chosen >= 0 && (cand_holds_prog(&probe_sites[SITE_SPLICE_REF].cands[ref->chosen],
						  bpf_program__name(obj->progs.splice_to_socket_fexit)) ||
				 cand_holds_prog(&probe_sites[SITE_SPLICE_REF].cands[ref->chosen],
						  bpf_program__name(obj->progs.do_tcp_sendpages_fexit))))
		return 0;
	snprintf(why, sizeof(why), "needs zc_pin and splice_ref counted with no program per send (fexit "
		 "skb_zerocopy_iter_stream; splice_to_socket or do_tcp_sendpages), not here");
	/* the next pass's census_without_calls() takes the per-call candidates back */
	for (int c = 0; c < MAX_CANDIDATES && probe_sites[SITE_SEND_COPY].cands[c].label; c++)
		if (probe_sites[SITE_SEND_COPY].cands[c].from_counters) {
			choice[SITE_SEND_COPY].refused[c] = true;
			snprintf(choice[SITE_SEND_COPY].why_not[c], sizeof(choice[0].why_not[0]), "%s", why);
		}
	return 1;
}

/*
 * The census counts every process but zctrace: its per-process maps become LRU maps of a fixed
 * size, so a machine with many short processes costs bounded kernel memory, and the oldest keys
 * go first (the census counts them: misc.sites_made against the keys it finds).
 */
static int set_machine_wide(struct zctrace_bpf *obj, unsigned max_keys)
{
	int err;

	obj->rodata->trace_all = 1;
	obj->rodata->self_tgid = getpid();
	/* LRU maps are preallocated: their bound is the memory the census may take */
	if ((err = bpf_map__set_type(obj->maps.sites, BPF_MAP_TYPE_LRU_HASH)) ||
	    (err = bpf_map__set_map_flags(obj->maps.sites, 0)) ||
	    (err = bpf_map__set_max_entries(obj->maps.sites, max_keys)) ||
	    (err = bpf_map__set_max_entries(obj->maps.idents, max_keys)) ||
	    (err = bpf_map__set_type(obj->maps.account, BPF_MAP_TYPE_LRU_HASH)) ||
	    (err = bpf_map__set_max_entries(obj->maps.account, max_keys)) ||
	    (err = bpf_map__set_max_entries(obj->maps.census_exits, CENSUS_EXITS_BYTES)) ||
	    (err = bpf_map__set_max_entries(obj->maps.tcp_flows, max_keys)))
		fprintf(stderr, "zctrace: cannot size the census maps: %s\n", strerror(-err));
	return err;
}

/*
 * Below Linux 5.11 tracing programs have no task storage: each thread's state goes in an LRU hash
 * keyed by its id instead (common.bpf.h's TASK_STATE()), preallocated, so bounded: the oldest
 * thread's goes first. The census's thread counters are the census's alone.
 */
static int task_state_in_hashes(struct zctrace_bpf *obj, bool machine_wide)
{
	struct bpf_map *map;
	int err = 0;

	bpf_object__for_each_map(map, obj->obj) {
		unsigned n = map == obj->maps.census_thread_counts && !machine_wide ? 1 : THREAD_STATES;

		if (bpf_map__type(map) != BPF_MAP_TYPE_TASK_STORAGE)
			continue;
		if ((err = bpf_map__set_type(map, BPF_MAP_TYPE_LRU_HASH)) || (err = bpf_map__set_map_flags(map, 0)) ||
		    (err = bpf_map__set_max_entries(map, n))) {
			fprintf(stderr, "zctrace: cannot make BPF map %s a hash: %s\n", bpf_map__name(map), strerror(-err));
			break;
		}
	}
	return err;
}

/*
 * zctrace's object, opened: on a kernel without bpf_loop() (before 5.17) its compat build, whose
 * verifier would refuse what the object holds even on branches it drops (Makefile: the two lay
 * their global variables out alike, so zctrace.skel.h's skeleton opens either).
 */
static struct zctrace_bpf *open_object(const struct bpf_object_open_opts *opts, bool compat)
{
	struct zctrace_bpf *obj;
	int err;

	if (!compat)
		return zctrace_bpf__open_opts(opts);
	obj = calloc(1, sizeof(*obj));
	if (!obj) {
		errno = ENOMEM;
		return NULL;
	}
	if (!(err = zctrace_bpf__create_skeleton(obj))) {
		obj->skeleton->data = zctrace_compat_bpf__elf_bytes(&obj->skeleton->data_sz);
		err = bpf_object__open_skeleton(obj->skeleton, opts);
	}
	if (err) {
		zctrace_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

/* Sets aside every chosen candidate that holds program @prog; how many were. */
static int refuse_holders(struct probe_choice *choice, const char *prog, const char *why)
{
	int n = 0;

	for (int s = 0; s < NR_PROBES; s++) {
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

/*
 * A kernel before 5.17 (the compat object's) has no bpf_get_func_ret(): a chosen program that
 * reads its return value so is set aside before the load, as the verifier would refuse it, and
 * the site's next candidate (a kretprobe) takes its place. How many candidates were.
 */
static int refuse_without_func_ret(struct zctrace_bpf *obj, struct probe_choice *choice)
{
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, obj->obj) {
		const struct bpf_insn *in = bpf_program__insns(p);
		size_t cnt = bpf_program__insn_cnt(p);

		if (!bpf_program__autoload(p))
			continue;
		for (size_t i = 0; i < cnt; i++) {
			if (in[i].code == (BPF_JMP | BPF_CALL) && !in[i].src_reg && in[i].imm == BPF_FUNC_get_func_ret) {
				n += refuse_holders(choice, bpf_program__name(p), "needs bpf_get_func_ret() (Linux 5.17)");
				break;
			}
		}
	}
	return n;
}

/*
 * The main object's fexit of __zerocopy_sg_from_iter() reads 6.0's arguments (the msghdr first,
 * with msghdr.sg_from_iter). 5.17 to 5.19 take the main object with the older ones: there it is
 * set aside, and the kprobe, which reads both, counts UDP's pins. 0, or 1 if set aside.
 */
static int refuse_old_sg_from_iter(struct zctrace_bpf *obj, struct probe_choice *choice)
{
	if (!bpf_program__autoload(obj->progs.zerocopy_sg_from_iter_fexit) ||
	    probes_btf_has_member("msghdr", "sg_from_iter"))
		return 0;
	return refuse_holders(choice, bpf_program__name(obj->progs.zerocopy_sg_from_iter_fexit),
			      "reads the arguments __zerocopy_sg_from_iter() has from 6.0 (msghdr first)") > 0;
}

/*
 * ZCTRACE_REFUSE=load:PROG: a tracing program (fentry/fexit/tp_btf) is pointed at a function or
 * tracepoint with fewer arguments than it reads, which the verifier refuses: the real refusal path,
 * on a kernel that would load it.
 */
static void refuse_loads_by_env(struct zctrace_bpf *obj)
{
	struct bpf_program *p;
	char point[96];

	if (!getenv("ZCTRACE_REFUSE"))
		return;
	bpf_object__for_each_program(p, obj->obj) {
		enum bpf_attach_type t = bpf_program__expected_attach_type(p);

		snprintf(point, sizeof(point), "load:%s", bpf_program__name(p));
		if (!bpf_program__autoload(p) || !probes_refused_by_env(point))
			continue;
		if (t == BPF_TRACE_FENTRY || t == BPF_TRACE_FEXIT)
			bpf_program__set_attach_target(p, 0, "schedule");	/* no arguments */
		else if (t == BPF_TRACE_RAW_TP)
			bpf_program__set_attach_target(p, 0, "sched_process_free");	/* one */
	}
}

static void forget_loaded_data(void)
{
	while (loaded.n > 0)
		free(loaded.sec[--loaded.n].copy);
	loaded.obj = NULL;
}

/* Keeps a copy of each writable global data section (.bss, .data) as the load left it. */
static void keep_loaded_data(struct zctrace_bpf *obj)
{
	struct bpf_map *map;

	forget_loaded_data();
	loaded.obj = obj;
	bpf_object__for_each_map(map, obj->obj) {
		const char *name = bpf_map__name(map);
		size_t size = 0;
		void *live;

		if (!bpf_map__is_internal(map) || strstr(name, ".rodata") || strstr(name, ".kconfig"))
			continue;
		/* after load: the map's own memory, mapped writable for .bss and .data */
		live = (void *)bpf_map__initial_value(map, &size);
		if (!live || loaded.n == MAX_DATA_SECS)
			continue;
		loaded.sec[loaded.n].copy = malloc(size);
		if (!loaded.sec[loaded.n].copy)
			continue;
		memcpy(loaded.sec[loaded.n].copy, live, size);
		loaded.sec[loaded.n].live = live;
		loaded.sec[loaded.n].size = size;
		loaded.n++;
	}
}

/*
 * The entry programs whose returns must be in place first, so that no entry goes unreturned: the
 * timed copies', and those that open a mark on a socket's counter (tcpflows.bpf.h).
 */
static bool entry_after_return(struct zctrace_bpf *obj, struct bpf_program *p)
{
	return p == obj->progs.skb_copy_datagram_iter_time_in || p == obj->progs.skb_copy_ubufs_time_in ||
	       p == obj->progs.splice_to_socket_fentry || p == obj->progs.do_tcp_sendpages_fentry ||
	       p == obj->progs.tcp_splice_read_fentry;
}

/* Attaches @p; 0, or a negative errno with why in @why. */
static int attach_one(struct zctrace_bpf *obj, int i, unsigned sample_hz, char *why, size_t n)
{
	struct bpf_program *p = *obj->skeleton->progs[i].prog;
	struct bpf_link **link = obj->skeleton->progs[i].link;
	char point[96];
	int err;

	snprintf(point, sizeof(point), "attach:%s", bpf_program__name(p));
	if (probes_refused_by_env(point)) {
		err = -EINVAL;
		snprintf(why, n, "attach refused: %s (simulated by ZCTRACE_REFUSE)", strerror(-err));
	} else if (!strcmp(bpf_program__section_name(p), "perf_event")) {
		/* the sampler: a sampling event on each CPU, opened here (cost.c) */
		char sampler_why[200] = "";

		if (!(err = cost_attach(obj, p, sample_hz, sampler_why, sizeof(sampler_why))))
			return 0;
		snprintf(why, n, "attach refused: %s", sampler_why);
	} else if ((*link = bpf_program__attach(p))) {
		return 0;
	} else {
		err = errno ? -errno : -EINVAL;
		snprintf(why, n, "attach refused: %s", strerror(-err));
	}
	return err;
}

/* A program the kernel refused, and its answer. */
struct prog_refusal {
	char prog[64];
	char why[256];
};

/*
 * Attaches program by program, and goes on past a refusal: every program refused (up to @max) is
 * named in @out with the kernel's answer, how many in *@nr, so that one load more sets them all
 * aside. 0, or the first refusal's error.
 */
static int attach_all(struct zctrace_bpf *obj, unsigned sample_hz, struct prog_refusal *out, int max, int *nr)
{
	struct bpf_object_skeleton *sk = obj->skeleton;
	struct bpf_program *walker = bpf_program__autoload(obj->progs.cost_sample) ? obj->progs.cost_sample
				     : bpf_program__autoload(obj->progs.copy_time_switch) ? obj->progs.copy_time_switch
				     : NULL;
	struct prog_refusal spare;
	int err, first = 0;

	*nr = 0;
	/* the sampler and the timed copies place by one function table, filled before either attaches */
	if (walker && (err = cost_table_fill(obj, out[0].why, sizeof(out[0].why)))) {
		snprintf(out[0].prog, sizeof(out[0].prog), "%s", bpf_program__name(walker));
		*nr = 1;
		return err;
	}
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < sk->prog_cnt; i++) {
			struct bpf_program *p = *sk->progs[i].prog;
			struct prog_refusal *r = *nr < max ? &out[*nr] : &spare;

			/* USDT programs attach per binary, once the target exists */
			if (!bpf_program__autoload(p) || !strcmp(bpf_program__section_name(p), "usdt") ||
			    entry_after_return(obj, p) != (pass == 1))
				continue;
			if (!(err = attach_one(obj, i, sample_hz, r->why, sizeof(r->why))))
				continue;
			snprintf(r->prog, sizeof(r->prog), "%s", bpf_program__name(p));
			if (r != &spare)
				(*nr)++;
			if (!first)
				first = err;
		}
	return first;
}

void tracer_opts_for(struct tracer_opts *o, const struct workload_def *def, enum method cap, bool no_phase,
		     bool complete)
{
	memset(o, 0, sizeof(*o));
	o->cap = cap;
	o->skip_zc_path = def && !def->zc_notices;
	o->gate_on_phase = def && !no_phase;
	/* a built-in workload's figures include every syscall by number; a command's ledger needs only its I/O */
	o->io_fentry = !def && !complete && (cap == METHOD_NONE || cap == METHOD_FENTRY);
	o->sample_hz = COST_DEFAULT_HZ;
}

bool tracer_opts_same(const struct tracer_opts *a, const struct tracer_opts *b)
{
	return a->cap == b->cap && a->skip_zc_path == b->skip_zc_path && a->gate_on_phase == b->gate_on_phase &&
	       a->skip == b->skip && a->machine_wide == b->machine_wide && a->max_keys == b->max_keys &&
	       a->no_syscall_tps == b->no_syscall_tps && a->io_fentry == b->io_fentry && a->sample_hz == b->sample_hz &&
	       a->time_copies == b->time_copies;
}

int tracer_start(struct zctrace_bpf **objp, struct probe_choice *choice, const struct tracer_opts *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = probes_btf_path());
	bool task_storage = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	bool compat = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_loop, NULL) != 1;
	struct zctrace_bpf *obj = NULL;
	int err = -ENOTSUP;

	if (o->skip_zc_path)
		skip_zc_path(choice);
	if (o->skip)
		skip_probes(choice, o->skip, o->skip_why ? o->skip_why : "not wanted");
	if (o->machine_wide && !o->sample_hz)
		skip_probes(choice, 1ULL << PROBE_COST, "the census samples only with --cost");
	else if (!o->sample_hz)
		skip_probes(choice, 1ULL << PROBE_COST, "turned off (--sample-hz 0)");
	if (!o->time_copies)
		skip_probes(choice, 1ULL << PROBE_COPY_TIME, "not asked for (--time-copies)");
	/* two looks at one socket must not meet: one takes it by compare-and-swap (tcpcount.bpf.c) */
	if (compat)
		skip_probes(choice, 1ULL << PROBE_TCP_COUNTERS, "the object for kernels before bpf_loop() (5.17) has "
			    "no compare-and-swap: TCP is counted per call");
	if (!o->machine_wide) {
		skip_probes(choice, 1ULL << PROBE_CENSUS | 1ULL << PROBE_TCP_COUNTERS, "the census's own");
		refuse_standalone(choice);
	}
	if (o->no_syscall_tps)
		refuse_syscall_tps(choice);
	else if (o->io_fentry && choice[PROBE_SYSCALLS].io == IO_HOOKS_TPS && !choice[PROBE_SYSCALLS].io_why[0])
		choice[PROBE_SYSCALLS].io = IO_HOOKS_WANT_FENTRY;
	next_print = libbpf_set_print(capture_print);
	/* each pass sets at least one candidate aside, so there are at most as many as candidates */
	for (int tries = 0; tries < NR_PROBES * MAX_CANDIDATES; tries++) {
		struct prog_refusal refused[8];
		int nrefused = 0, r;
		bool loading, io_fentry;

		if (o->machine_wide)
			census_without_calls(choice, o->cap, o->per_call, choice[PROBE_TCP_COUNTERS].skip ?
					     choice[PROBE_TCP_COUNTERS].why_not[0] : NULL);
		obj = open_object(&open_opts, compat);
		if (!obj) {
			err = -errno;
			fprintf(stderr, "zctrace: cannot open the BPF object: %s\n", strerror(errno));
			break;
		}
		if ((err = choose_probes(obj, choice, o->cap)))
			break;
		if ((compat && refuse_without_func_ret(obj, choice)) ||
		    (!compat && (refuse_old_sg_from_iter(obj, choice) || refuse_derived_alone(obj, choice)))) {
			zctrace_bpf__destroy(obj);
			obj = NULL;
			continue;
		}
		obj->rodata->gate_on_phase = o->gate_on_phase;
		obj->rodata->offcpu_storage_refused = probes_refused_by_env("storage:offcpu_task");
		if (o->machine_wide && (err = set_machine_wide(obj, o->max_keys)))
			break;
		if (!o->machine_wide && (err = bpf_map__set_max_entries(obj->maps.idents, RUN_IDENTS))) {
			fprintf(stderr, "zctrace: cannot size BPF map idents: %s\n", strerror(-err));
			break;
		}
		/* the census's copy samples by process: only where the census samples (--cost) */
		if ((!o->machine_wide || !o->sample_hz) && (err = bpf_map__set_max_entries(obj->maps.census_cpu, 1))) {
			fprintf(stderr, "zctrace: cannot size BPF map census_cpu: %s\n", strerror(-err));
			break;
		}
		if (!task_storage && (err = task_state_in_hashes(obj, o->machine_wide)))
			break;
		refuse_loads_by_env(obj);
		refusal.prog[0] = refusal.why[0] = '\0';
		err = zctrace_bpf__load(obj);
		loading = err;
		if (loading) {
			/* the first program the verifier refused: libbpf loads no further */
			snprintf(refused[0].prog, sizeof(refused[0].prog), "%s", refusal.prog);
			snprintf(refused[0].why, sizeof(refused[0].why), "load refused: %s",
				 refusal.why[0] ? refusal.why : strerror(-err));
			nrefused = 1;
		} else if (keep_loaded_data(obj),
			   !(err = attach_all(obj, o->sample_hz, refused, sizeof(refused) / sizeof(refused[0]), &nrefused))) {
			break;
		}
		/* each refused program's candidates set aside; r stops at one that sets nothing aside */
		io_fentry = choice[PROBE_SYSCALLS].io == IO_HOOKS_FENTRY;
		for (r = 0; r < nrefused; r++) {
			const char *prog = refused[r].prog, *why = refused[r].why;

			if (prog[0] && is_io_fentry_prog(prog) && io_fentry) {
				/* the raw syscall tracepoints then, as on a kernel without fentry (the first
				 * of the I/O syscalls' programs refused says why) */
				if (choice[PROBE_SYSCALLS].io == IO_HOOKS_FENTRY)
					snprintf(choice[PROBE_SYSCALLS].io_why, sizeof(choice[PROBE_SYSCALLS].io_why),
						 "program %.40s: %.200s", prog, why);
				choice[PROBE_SYSCALLS].io = IO_HOOKS_TPS;
			} else if (!prog[0] || !refuse_holders(choice, prog, why)) {
				break;
			}
		}
		if (r < nrefused && refused[r].prog[0]) {
			/* a program no candidate holds: nothing to set aside */
			fprintf(stderr, "zctrace: cannot %s the BPF programs: program %s: %s (try -v)\n",
				loading ? "load" : "attach", refused[r].prog, refused[r].why);
			break;
		}
		if (r < nrefused || !nrefused) {
			fprintf(stderr, "zctrace: cannot %s the BPF programs: %s (try -v)\n",
				loading ? "load" : "attach", strerror(-err));
			break;
		}
		cost_detach();
		zctrace_bpf__destroy(obj);
		obj = NULL;
	}
	libbpf_set_print(next_print);
	if (err) {
		cost_detach();
		zctrace_bpf__destroy(obj);
		obj = NULL;
	}
	*objp = obj;
	return err;
}

/*
 * Every key of hash map @fd deleted, @max its bound (max_entries). The keys are listed first, each
 * found from the one before it, then deleted: asking for the first key after each delete scans
 * the buckets from the start every time, which for a map of zerocopy sends kept (MAX_ZC_CALLS)
 * costs seconds of kernel time. Nothing should add keys meanwhile (no process is a target); whatever
 * did is found by the next pass. 0; -EAGAIN if the third pass still found keys; -ENOMEM, or the
 * kernel's error.
 */
static int empty_hash(int fd, size_t key_size, unsigned max)
{
	char *keys = malloc(((size_t)max + 1) * key_size), *prev;
	int err = -EAGAIN;

	if (!keys)
		return -ENOMEM;
	for (int pass = 0; pass < 3 && err == -EAGAIN; pass++) {
		unsigned n = 0;

		for (prev = NULL; n <= max && !bpf_map_get_next_key(fd, prev, keys + (size_t)n * key_size); n++)
			prev = keys + (size_t)n * key_size;
		if (n <= max && errno != ENOENT) {
			err = -errno;
			break;
		}
		if (n == 0) {
			err = 0;
			break;
		}
		for (unsigned i = 0; i < n; i++)
			if (bpf_map_delete_elem(fd, keys + (size_t)i * key_size) && errno != ENOENT) {
				err = -errno;
				break;
			}
	}
	free(keys);
	return err;
}

/* Every element of array @map zeroed, on every CPU for a per-CPU array: one batch, else one by one. */
static int zero_array(const struct bpf_map *map)
{
	unsigned n = bpf_map__max_entries(map), count = n;
	size_t vs = bpf_map__value_size(map);
	int fd = bpf_map__fd(map), err = 0;
	__u32 *keys;
	void *zeros;

	if (bpf_map__type(map) == BPF_MAP_TYPE_PERCPU_ARRAY)
		vs = ((vs + 7) & ~(size_t)7) * libbpf_num_possible_cpus();
	keys = calloc(n, sizeof(*keys));
	zeros = calloc(n, vs);
	if (!keys || !zeros) {
		free(keys);
		free(zeros);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < n; i++)
		keys[i] = i;
	if (bpf_map_update_batch(fd, keys, zeros, &count, NULL)) {
		for (unsigned i = 0; i < n && !err; i++)
			if (bpf_map_update_elem(fd, &keys[i], zeros, BPF_ANY))
				err = -errno;
	}
	free(keys);
	free(zeros);
	return err;
}

int tracer_reset(struct zctrace_bpf *obj)
{
	__u32 gen = obj->bss->targets_gen;
	struct bpf_map *map;
	int err;

	if (loaded.obj != obj) {
		fprintf(stderr, "zctrace: internal: the tracer to reset is not the one loaded here\n");
		return -EINVAL;
	}
	/* no target first: from here until the next run's no program counts anything */
	if ((err = empty_hash(bpf_map__fd(obj->maps.targets), sizeof(__u32), bpf_map__max_entries(obj->maps.targets)))) {
		fprintf(stderr, "zctrace: cannot empty BPF map targets for the next run: %s\n", strerror(-err));
		return err;
	}
	for (int i = 0; i < loaded.n; i++)
		memcpy(loaded.sec[i].live, loaded.sec[i].copy, loaded.sec[i].size);
	/* the generation only moves on: a verdict kept from the last run is stale */
	obj->bss->targets_gen = gen + 1;
	bpf_object__for_each_map(map, obj->obj) {
		/* libbpf's own (__bpf_usdt_specs): the USDT probes attached stay as they are */
		if (bpf_map__is_internal(map) || bpf_map__fd(map) < 0 || !strncmp(bpf_map__name(map), "__", 2))
			continue;
		switch (bpf_map__type(map)) {
		case BPF_MAP_TYPE_ARRAY:
		case BPF_MAP_TYPE_PERCPU_ARRAY:
			err = zero_array(map);
			break;
		case BPF_MAP_TYPE_HASH:
		case BPF_MAP_TYPE_LRU_HASH:
		case BPF_MAP_TYPE_PERCPU_HASH:
		case BPF_MAP_TYPE_LRU_PERCPU_HASH:
			err = empty_hash(bpf_map__fd(map), bpf_map__key_size(map), bpf_map__max_entries(map));
			break;
		default:	/* task storage: a slot lives and dies with its task, and each run's tasks are new */
			err = 0;
			break;
		}
		if (err) {
			fprintf(stderr, "zctrace: cannot empty BPF map %s for the next run: %s\n",
				bpf_map__name(map), strerror(-err));
			return err;
		}
	}
	if ((err = cost_refill(obj)))
		fprintf(stderr, "zctrace: cannot fill the sampler's function table for the next run: %s\n",
			strerror(-err));
	return err;
}

static void *destroy_link(void *link)
{
	bpf_link__destroy(link);
	return NULL;
}

void tracer_destroy_links(struct bpf_link **links, int n)
{
	pthread_t th[n > 0 ? n : 1];
	bool started[n > 0 ? n : 1];

	for (int i = 0; i < n; i++)
		started[i] = links[i] && !pthread_create(&th[i], NULL, destroy_link, links[i]);
	for (int i = 0; i < n; i++) {
		if (started[i])
			pthread_join(th[i], NULL);
		else
			bpf_link__destroy(links[i]);	/* no thread: here, in turn */
		links[i] = NULL;
	}
}

/*
 * Destroys @n links in turn: where another process holds them too, a close is only a reference
 * dropped, and a thread each would cost more than it waits.
 */
static void destroy_links_in_turn(struct bpf_link **links, int n)
{
	for (int i = 0; i < n; i++) {
		bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
}

/*
 * Detaches every program (@at_once: side by side, for the last references, since an fentry's
 * detach waits for a grace period of its own).
 */
static void detach_all(struct zctrace_bpf *obj, bool at_once)
{
	struct bpf_object_skeleton *sk = obj ? obj->skeleton : NULL;
	struct bpf_link *links[MAX_GONE_PROGS];
	int n = 0;

	for (int i = 0; sk && i < sk->prog_cnt; i++) {
		struct bpf_link **link = sk->progs[i].link;

		if (!*link)
			continue;
		if (n == MAX_GONE_PROGS)
			break;	/* the rest go with the object */
		links[n++] = *link;
		*link = NULL;
	}
	if (at_once)
		tracer_destroy_links(links, n);
	else
		destroy_links_in_turn(links, n);
}

/* Detaches (@at_once: see detach_all()) and destroys the tracer. */
static void stop(struct zctrace_bpf *obj, bool at_once)
{
	/* the sampler's events are the tracer's: a run under a borrowed tracer (obj NULL) leaves them */
	if (obj)
		cost_detach();
	if (obj && loaded.obj == obj)
		forget_loaded_data();
	detach_all(obj, at_once);
	zctrace_bpf__destroy(obj);
}

void tracer_stop(struct zctrace_bpf *obj)
{
	stop(obj, true);
}

void tracer_stop_background(struct zctrace_bpf *obj, struct bpf_link **more, int n)
{
	int turn[2] = { -1, -1 };
	bool any = obj != NULL;
	pid_t pid = -1;
	char c;

	for (int i = 0; i < n; i++)
		any |= more[i] != NULL;
	/* the child ends with _exit(): what stdio holds unwritten here is written once, by this process */
	if (any && !pipe(turn))
		pid = fork();
	if (pid == 0) {
		/* nothing of the parent's output stays open here: a reader of it sees its end now */
		int null = open("/dev/null", O_RDWR);

		for (int fd = 0; fd < 3; fd++)
			dup2(null, fd);
		setsid();
		prctl(PR_SET_NAME, "zctrace-detach");
		/* the parent's references go first, so the last ones, and their wait, are here */
		close(turn[1]);
		while (read(turn[0], &c, 1) < 0 && errno == EINTR)
			;
		tracer_destroy_links(more, n);
		tracer_stop(obj);
		_exit(0);
	}
	/* with a child holding the last references, each close here only drops one */
	if (pid > 0)
		destroy_links_in_turn(more, n);
	else
		tracer_destroy_links(more, n);
	stop(obj, pid <= 0);
	if (turn[0] >= 0) {
		close(turn[0]);
		close(turn[1]);
	}
}

/* Whether the program with id @id is still in the kernel. */
static bool prog_alive(__u32 id)
{
	int fd = bpf_prog_get_fd_by_id(id);

	if (fd >= 0)
		close(fd);
	return fd >= 0 || errno != ENOENT;
}

/*
 * Destroys the tracer, then waits (at most @max_ms) until the kernel has freed each of its
 * programs: a tracing link lets its program go only after a grace period, and until then the
 * program is still listed. Returns 0, or -ETIMEDOUT with some still there.
 */
int tracer_stop_wait(struct zctrace_bpf *obj, int max_ms)
{
	struct bpf_prog_info info;
	__u32 ids[MAX_GONE_PROGS], len;
	struct bpf_program *p;
	int n = 0;

	bpf_object__for_each_program(p, obj->obj) {
		memset(&info, 0, sizeof(info));
		len = sizeof(info);
		if (n < MAX_GONE_PROGS && bpf_program__fd(p) >= 0 &&
		    !bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len))
			ids[n++] = info.id;
	}
	tracer_stop(obj);
	for (int waited = 0; waited <= max_ms; waited += 10) {
		int alive = 0;

		for (int i = 0; i < n; i++)
			alive += prog_alive(ids[i]);
		if (!alive)
			return 0;
		usleep(10000);
	}
	return -ETIMEDOUT;
}
