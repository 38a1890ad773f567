/* What zctrace probes prints: the method each probe site takes here, why each better candidate was
 * refused, and what the census's programs run on. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "report/report_probes.h"
#include "trace/tracer.h"
#include "zctrace.skel.h"

/* Whether candidate @c's method and reason were printed for an earlier candidate of the site. */
static bool said_before(const struct probe_site *ps, const struct probe_choice *ch, int c)
{
	for (int e = 0; e < c; e++)
		if (ps->cands[e].method == ps->cands[c].method && !strcmp(ch->why_not[e], ch->why_not[c]))
			return true;
	return false;
}

void print_probes(FILE *f, const struct probe_choice *choice)
{
	fprintf(f, "%-16s %-8s %s\n", "SITE", "METHOD", "ATTACHED / WHY BETTER ONES WERE REFUSED");
	for (int s = 0; s < NR_PROBES; s++) {
		const struct probe_site *ps = &probe_sites[s];
		const struct probe_choice *ch = &choice[s];

		if (ch->chosen >= 0)
			fprintf(f, "%-16s %-8s %s\n", ps->name, method_name(ps->cands[ch->chosen].method),
				ps->cands[ch->chosen].label);
		else if (ch->skip)
			fprintf(f, "%-16s %-8s %s\n", ps->name, "none", ch->why_not[0]);
		else if (!strcmp(probe_refusal(choice, s), NEEDS_SYSCALL_TPS_WHY))
			fprintf(f, "%-16s %-8s %s\n", ps->name, "none", probe_refusal(choice, s));
		else
			fprintf(f, "%-16s %-8s %s\n", ps->name, "none", "not supported on this kernel");
		/*
		 * The better ones: those listed before the chosen one, and on PREEMPT_RT those of an
		 * earlier round listed after it (send_copy's kprobe refused, then fentry taken).
		 */
		for (int c = 0; c < MAX_CANDIDATES && ps->cands[c].label && !ch->skip; c++) {
			if (c == ch->chosen ||
			    (ch->chosen >= 0 && c > ch->chosen && ch->round[c] >= ch->round[ch->chosen]))
				continue;
			if (!ch->why_not[c][0])
				continue;	/* set aside with no reason: not this mode's (the census's) */
			if (said_before(ps, ch, c))
				continue;	/* a variant of a candidate above, refused for the same reason */
			fprintf(f, "%-16s %-8s   refused %s: %s\n", "", "", method_name(ps->cands[c].method),
				ch->why_not[c]);
		}
	}
	print_io_hooks(f, choice);
}

/*
 * How often a program at each attach point runs, for the census's cost (zctrace probes --census):
 * the work it adds is on that path, once a run. Matched on the section's point (after the '/').
 */
enum { RUNS_CALL = 1, RUNS_PACKET };

static const struct {
	const char *points;	/* space-separated, each between spaces */
	const char *when;
	int per_message;	/* runs on a plain TCP send or receive: RUNS_CALL, or RUNS_PACKET on its packets or skbs */
} run_kinds[] = {
	{ " sock_send_length sock_recv_length ", "each send or receive call, on any socket", RUNS_CALL },
	{ " tcp_sendmsg_locked ", "each TCP send call (and its iterations)", RUNS_CALL },
	{ " skb_copy_datagram_iter skb_copy_datagram_iovec ", "each skb a receive copies", RUNS_PACKET },
	{ " net_dev_start_xmit netif_receive_skb __pskb_pull_tail ", "each packet", RUNS_PACKET },
	{ " sys_enter sys_exit ", "each system call", RUNS_CALL },
	{ " udp_sendmsg udp_recvmsg udpv6_sendmsg udpv6_recvmsg ", "each UDP send or receive call", false },
	{ " unix_stream_sendmsg unix_dgram_sendmsg unix_stream_recvmsg unix_dgram_recvmsg ",
	  "each Unix socket send or receive call", false },
	{ " skb_zerocopy_iter_stream __zerocopy_sg_from_iter ", "each MSG_ZEROCOPY send iteration", false },
	{ " splice_to_socket do_tcp_sendpages skb_splice_from_iter tcp_splice_read ",
	  "each sendfile or splice call on a socket (before 6.5: each page)", false },
	{ " skb_copy_ubufs skb_segment ", "each zerocopy skb copied or segmented", false },
	{ " pipe_read pipe_write ", "each pipe read or write", false },
	{ " filemap_read generic_perform_write ext4_da_write_end ext4_write_end ext4_journalled_write_end "
	  "mm_filemap_add_to_page_cache ", "each file read or write (or page written or cached)", false },
	{ " io_uring_complete ", "each io_uring completion", false },
	{ " inet_sock_set_state tcp_destroy_sock ", "each TCP state change (a few a connection)", false },
	{ " sched_process_fork sched_process_exit sched_process_exec ", "each process or thread made, run or ended", false },
	{ " sched_switch ", "each context switch", false },
	{ " page_fault_user page_fault_kernel ", "each page fault", false },
	{ " task_file task ", "each census read: once a thread, or once an open file, on the machine", false },
};

/* The kind of run of a program at section @sec ("tp_btf/sock_send_length"); -1 if none fits. */
static int run_kind(const char *sec)
{
	const char *slash = strchr(sec, '/');
	char key[96];

	if (!slash)
		return -1;
	snprintf(key, sizeof(key), " %s ", slash + 1);
	for (size_t k = 0; k < sizeof(run_kinds) / sizeof(run_kinds[0]); k++)
		if (strstr(run_kinds[k].points, key))
			return (int)k;
	return -1;
}

void print_census_runs(FILE *f, struct zctrace_bpf *obj, const struct probe_choice *choice)
{
	enum { N_KINDS = sizeof(run_kinds) / sizeof(run_kinds[0]) };
	struct bpf_program *p;
	int runs[3] = { 0 };

	fprintf(f, "\nWHAT THE CENSUS RUNS, AND WHEN (each run is work on the path it sits on)\n");
	for (int k = -1; k < N_KINDS; k++) {
		bool said = false;

		bpf_object__for_each_program(p, obj->obj) {
			const char *sec = bpf_program__section_name(p), *name = bpf_program__name(p);
			bool first = true;

			if (!bpf_program__autoload(p) || run_kind(sec) != k)
				continue;
			if (!said)
				fprintf(f, "  %s\n", k < 0 ? "not classified" : run_kinds[k].when);
			said = true;
			runs[k >= 0 ? run_kinds[k].per_message : 0]++;
			fprintf(f, "      %s %s", sec, name);
			for (int s = 0; s < NR_PROBES; s++) {
				const struct candidate *c = choice[s].chosen >= 0 ?
							    &probe_sites[s].cands[choice[s].chosen] : NULL;

				for (int i = 0; c && i < MAX_PROGS && c->progs[i]; i++)
					if (!strcmp(c->progs[i], name)) {
						fprintf(f, "%s%s", first ? " (" : ", ", probe_sites[s].name);
						first = false;
						break;
					}
			}
			fprintf(f, "%s\n", first ? "" : ")");
		}
	}
	if (runs[RUNS_CALL] || runs[RUNS_PACKET])
		fprintf(f, "on a plain TCP send or receive: %d a call, %d a packet or skb\n", runs[RUNS_CALL],
			runs[RUNS_PACKET]);
	else
		fprintf(f, "on a plain TCP send or receive: no program\n");
	fprintf(f, "(make bench's fleet section counts the runs of a stream: program runs per write)\n");
}

/* How the I/O syscalls are followed, where a command's run would rather not take the tracepoints. */
void print_io_hooks(FILE *f, const struct probe_choice *choice)
{
	const struct probe_choice *sc = &choice[PROBE_SYSCALLS];

	if (sc->io == IO_HOOKS_FENTRY)
		fprintf(f, "%-16s %-8s fentry/fexit on the %d I/O syscalls' own functions, where the rows above "
			"say sys_enter/sys_exit (add --complete for the tracepoints)\n", "io_syscalls", "fentry",
			nr_io_fentry_progs / 2);
	else if (sc->io_why[0])
		fprintf(f, "%-16s %-8s the raw syscall tracepoints (fentry refused: %s)\n", "io_syscalls",
			"tp", sc->io_why);
}
