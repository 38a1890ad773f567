/* The checks of a ledger (checks.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ledger/checks.h"
#include "ledger/costs.h"
#include "os/machine.h"
#include "os/sysnames.h"

/* ---- checks ---- */
void add_check(struct ledger *l, bool ok, const char *name, const char *fmt, ...)
{
	struct check *c;
	va_list ap;

	if (l->nchecks >= MAX_CHECKS)
		return;
	c = &l->checks[l->nchecks++];
	c->ok = ok;
	snprintf(c->name, sizeof(c->name), "%s", name);
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
}

/* The sending end of a network workload alone (--connect), its bytes leaving by a real device. */
static bool sender_on_device(const struct ledger *l)
{
	return l->rep.remote_role && !strcmp(l->rep.remote_role, "sender") && l->rep.remote_dev_kind &&
	       !strcmp(l->rep.remote_dev_kind, "device");
}

/*
 * What site @s must show: the workload's expectation, for the end of it this run was (--listen,
 * --connect) and the device its bytes left by. The receiving end alone copies out what it
 * received; every send site is the other end's, and so is the copy on delivery of the sender's
 * pinned pages (charged to their owner). The sending end's pinned pages or page references are
 * copied on delivery over loopback and veth (deferred_copy), by the kernel on transmit to a
 * device without scatter-gather (tx_copy, each retransmission again), and by no CPU on one with it.
 */
static enum expect site_expectation(const struct ledger *l, int s)
{
	enum expect e = l->def->site[s];
	bool pages = l->def->site[SITE_ZC_PIN] == EXP_SENT || l->def->site[SITE_SPLICE_REF] == EXP_SENT;
	bool udp_zc = l->def->site[SITE_ZC_PIN] == EXP_SENT && l->def->site[SITE_UDP_RECV_COPY] != EXP_ZERO;

	/*
	 * Before 5.19 a UDP zerocopy send copies the head of each datagram into the skb (up to
	 * MAX_HEADER with the headers, __ip_append_data()) and pins the rest: the sites share the
	 * payload, held by check_udp_zc_head()
	 */
	if (udp_zc && !l->rep.remote_role && !kernel_at_least(5, 19) &&
	    (s == SITE_ZC_PIN || s == SITE_UDP_SEND_COPY || s == SITE_DEFERRED_COPY))
		return EXP_ANY;
	if (!l->rep.remote_role)
		return e;
	if (!strcmp(l->rep.remote_role, "receiver"))
		return e == EXP_RECEIVED || e == EXP_ANY ? e : EXP_ZERO;
	if (!sender_on_device(l))
		return e;
	if (s == SITE_DEFERRED_COPY)
		return EXP_ZERO;
	/*
	 * UDP pins only for a device that takes page frags and checksums (__ip_append_data()): for
	 * any other the kernel copies each datagram at the send, and its notice says COPIED
	 */
	if (udp_zc && (l->rep.remote_dev_sg == 0 || l->rep.remote_dev_csum == 0))
		return s == SITE_ZC_PIN ? EXP_ZERO : s == SITE_UDP_SEND_COPY ? EXP_SENT : s == SITE_TX_COPY ? EXP_ZERO : e;
	if (udp_zc && (l->rep.remote_dev_sg < 0 || l->rep.remote_dev_csum < 0) &&
	    (s == SITE_ZC_PIN || s == SITE_UDP_SEND_COPY))
		return EXP_ANY;
	if (udp_zc && s == SITE_TX_COPY)
		return EXP_ZERO;
	if (s == SITE_TX_COPY && pages)
		return l->rep.remote_dev_sg == 0 ? EXP_SENT_AND_RETRANSMITTED : l->rep.remote_dev_sg == 1 ? EXP_ZERO : EXP_ANY;
	return e;
}

/* site_expectation()'s UDP zerocopy before 5.19: what the send did not pin it copied, and delivery copied the pins. */
static void check_udp_zc_head(struct ledger *l)
{
	__u64 pinned = l->k.site[SITE_ZC_PIN].bytes, copied = l->k.site[SITE_UDP_SEND_COPY].bytes;

	if (site_expectation(l, SITE_ZC_PIN) != EXP_ANY || l->def->site[SITE_ZC_PIN] != EXP_SENT ||
	    site_expectation(l, SITE_UDP_SEND_COPY) != EXP_ANY)
		return;
	add_check(l, l->rep.bytes.found && pinned && pinned + copied == l->rep.bytes.v,
		  "zc_pin + udp_send_copy == bytes sent", "kernel %" PRIu64 " pinned + %" PRIu64
		  " copied (each datagram's head, before 5.19), workload %" PRIu64 " sent",
		  (uint64_t)pinned, (uint64_t)copied, (uint64_t)l->rep.bytes.v);
	if (!sender_on_device(l))
		add_check(l, l->k.site[SITE_DEFERRED_COPY].bytes == pinned, "deferred_copy bytes == zc_pin bytes",
			  "kernel %" PRIu64 " copied on delivery, %" PRIu64 " pinned",
			  (uint64_t)l->k.site[SITE_DEFERRED_COPY].bytes, (uint64_t)pinned);
}

static void check_site(struct ledger *l, int site, enum expect exp)
{
	bool found = true;
	__u64 want = 0, got = l->k.site[site].bytes;
	const char *what = "0";
	char name[80], with_report[64];

	if (exp == EXP_ANY)
		return;
	if (exp == EXP_SENT || exp == EXP_COPIED_OR_CLONED) {
		want = l->rep.bytes.v;
		found = l->rep.bytes.found;
		/* a file duplicated moves its size; a file served is sent */
		what = l->rep.kind == WL_KIND_FILE_COPY
		       ? "file size" : l->def && l->def->micro && site == SITE_FILE_READ_COPY
		       ? "bytes read through the page cache" : "bytes sent";
	} else if (exp == EXP_SENT_AND_RETRANSMITTED) {
		want = l->rep.bytes.v + l->rep.retransmitted.v;
		found = l->rep.bytes.found && l->rep.retransmitted.found;
		what = "bytes sent + retransmitted";
	} else if (exp == EXP_RECEIVED) {
		want = l->rep.bytes_received.v;
		found = l->rep.bytes_received.found;
		what = "bytes received";
	} else if (exp == EXP_SENT_AND_REQUESTS || exp == EXP_RECEIVED_AND_REQUESTS) {
		const struct wl_count *c = exp == EXP_SENT_AND_REQUESTS ? &l->rep.bytes : &l->rep.bytes_received;

		want = c->v + l->rep.request_bytes.v;
		found = c->found && l->rep.request_bytes.found;
		what = exp == EXP_SENT_AND_REQUESTS ? "bytes sent + requests" : "bytes received + requests";
	} else if (exp == EXP_READ_BUFFERED || exp == EXP_WRITTEN_BUFFERED || exp == EXP_DIRECT_RW) {
		/* a file copy's own counts: through the page cache, or past it (O_DIRECT) */
		const struct wl_count *rd = &l->rep.bytes_read, *wr = &l->rep.bytes_written;
		bool direct = l->rep.direct == 1;

		found = rd->found && wr->found && l->rep.direct >= 0;
		if (exp == EXP_DIRECT_RW) {
			want = direct ? rd->v + wr->v : 0;
			what = direct ? "bytes read + written (O_DIRECT)" : "0 (buffered)";
		} else if (direct) {
			what = "0 (O_DIRECT)";
		} else {
			want = exp == EXP_READ_BUFFERED ? rd->v : wr->v;
			what = exp == EXP_READ_BUFFERED ? "bytes read" : "bytes written";
		}
	}
	/* counted over the whole run (--no-phase), the report the workload wrote to zctrace crossed a pipe */
	if (site == SITE_PIPE_WRITE_COPY && !l->phase_gated && found) {
		snprintf(with_report, sizeof(with_report), "%s + its report to zctrace", what);
		want += l->report_bytes;
		what = with_report;
	}
	snprintf(name, sizeof(name), "%s bytes == %s", site_name(site), what);
	/*
	 * The built-in workloads send over loopback and veth, which take page frags: nothing is copied
	 * on transmit there. Where that copy is not counted (no fentry or kprobes, or no zerocopy
	 * send to watch), no check stands on it.
	 */
	if (site == SITE_TX_COPY && exp == EXP_ZERO && l->method[site] == METHOD_NONE)
		return;
	if (l->method[site] == METHOD_NONE) {
		add_check(l, false, name, "site not attached on this kernel: not measured");
		return;
	}
	if (!found) {
		add_check(l, false, name, "the workload did not report '%s'", what);
		return;
	}
	if (site == SITE_DEFERRED_COPY && exp == EXP_SENT) {
		__u64 delivered;

		if (zc_redelivered(l, &delivered) && delivered > want) {
			snprintf(name, sizeof(name), "deferred_copy bytes == zerocopy bytes delivered");
			add_check(l, got == delivered, name, "kernel %" PRIu64 ", delivered %" PRIu64 " (bytes sent %"
				  PRIu64 " + %" PRIu64 " sent again, copied again on delivery) (%s)", (uint64_t)got,
				  (uint64_t)delivered, (uint64_t)want, (uint64_t)(delivered - want),
				  method_name(l->method[site]));
			return;
		}
	}
	if (exp == EXP_COPIED_OR_CLONED && got == 0 && want && l->k.misc.file_bytes_unseen == want) {
		bool known = l->rep.dest.shared_bytes.found;
		__u64 shared = l->rep.dest.shared_bytes.v;

		/* no copy seen: a clone if the filesystem says the new file shares the source's blocks */
		if (known && shared >= want)
			add_check(l, true, name, "kernel 0: the filesystem (%s) cloned all %" PRIu64
				  " bytes (reflink; FIEMAP: extents shared), no copy",
				  (l->rep.fs ?: "?"), (uint64_t)want);
		else
			add_check(l, false, name, "not measured: %" PRIu64 " bytes reached the file with no "
				  "copy seen and %s; writes on %s are invisible to this probe path", (uint64_t)want,
				  known ? "no shared extents" : "no FIEMAP answer", (l->rep.fs ?: "?"));
		return;
	}
	add_check(l, got == want, name, "kernel %" PRIu64 ", expected %" PRIu64 " (%s)", (uint64_t)got,
		  (uint64_t)want, method_name(l->method[site]));
}

/*
 * A cold run must read (nearly) every page of the source into the cache during the measured phase,
 * a warm one (nearly) none: the kernel's insertions say which it really was.
 */
static void check_cache(struct ledger *l)
{
	const char *cache = l->rep.cache;
	__u64 pages = l->rep.source.pages.v, added = 0;
	__u64 resident = l->rep.source.resident_before.v;
	char name[80];

	if (!cache || !file_pages_added(l, &l->rep.source, &added))
		return;
	snprintf(name, sizeof(name), "%s cache: source pages read into the page cache", cache);
	if (!ledger_has(l, PROBE_PAGE_CACHE)) {
		add_check(l, false, name, "page-cache insertions not traced on this kernel");
		return;
	}
	if (!strcmp(cache, "cold"))
		add_check(l, added * 100 >= pages * 99, name,
			  "%" PRIu64 " of %" PRIu64 " pages (%.1f%%, want >= 99%%); %" PRIu64
			  " resident before (mincore)", (uint64_t)added, (uint64_t)pages,
			  pages ? 100.0 * added / pages : 0, (uint64_t)resident);
	else
		add_check(l, added * 100 <= pages, name,
			  "%" PRIu64 " of %" PRIu64 " pages (%.1f%%, want <= 1%%); %" PRIu64
			  " resident before (mincore)", (uint64_t)added, (uint64_t)pages,
			  pages ? 100.0 * added / pages : 0, (uint64_t)resident);
}

/*
 * The workload counts its own calls; the kernel's count in the measured phase must equal it, and
 * both must match the chunking: ceil(file size / --size) chunks, per_chunk calls each, plus at
 * most 1% more for short transfers the program resumed.
 */
static void check_calls(struct ledger *l)
{
	bool have_chunks = l->rep.chunks.found;
	__u64 chunks = l->rep.chunks.v;

	if (!l->rep.has_calls)
		return;
	for (size_t i = 0; i < l->rep.ncalls; i++) {
		const struct wl_call *c = &l->rep.calls[i];
		int nr = syscall_nr(c->name);
		__u64 own = c->calls, kernel = nr >= 0 ? l->k.phase_syscalls[nr] : 0;
		__u64 want = chunks * c->per_chunk, slack = want / 100;
		char cname[80];

		snprintf(cname, sizeof(cname), "%s calls: kernel == workload", c->name);
		if (!ledger_has(l, PROBE_SYSCALLS) || nr < 0) {
			add_check(l, false, cname, nr < 0 ? "unknown syscall" : "syscalls not traced");
			continue;
		}
		add_check(l, kernel == own, cname, "kernel %" PRIu64 ", workload %" PRIu64 " (measured phase)",
			  (uint64_t)kernel, (uint64_t)own);
		if (!have_chunks)
			continue;
		snprintf(cname, sizeof(cname), "%s calls ~ chunks", c->name);
		add_check(l, kernel >= want && kernel <= want + slack, cname,
			  "%" PRIu64 " for %" PRIu64 " chunks x %" PRIu64 " (allowed +%" PRIu64
			  " resumed short transfers)", (uint64_t)kernel, (uint64_t)chunks,
			  (uint64_t)c->per_chunk, (uint64_t)slack);
	}
	if (l->rep.ncalls_listed > l->rep.ncalls)
		add_check(l, false, "calls checked", "%zu of %zu the workload counted (more than zctrace checks)",
			  l->rep.ncalls, l->rep.ncalls_listed);
}

static void check_file(struct ledger *l)
{
	if (l->rep.verified >= 0)
		add_check(l, l->rep.verified, "the data arrived intact",
			  l->rep.verified ? "sizes and CRC-32 equal" : "size or CRC-32 differs");
	check_cache(l);
	check_calls(l);
}

static void check_notices(struct ledger *l)
{
	/* io_uring's notifications say whether the data was copied only when the workload asked */
	bool unsaid = l->rep.zc_usage_reports == 0;
	const struct {
		const char *bpf, *wl;
		__u64 kernel;
		struct wl_count own;
		bool unsaid;
	} pairs[] = {
		{ "notices", "zerocopy.notices", l->k.misc.zc_notices, l->rep.zc_notices },
		{ "notices_copied", "zerocopy.notices_copied", l->k.misc.zc_notices_copied, l->rep.zc_notices_copied,
		  unsaid },
		{ "calls_completed", "zerocopy.completed", l->k.misc.zc_calls_completed, l->rep.zc_completed },
	};
	char name[80];

	for (unsigned i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		bool found = pairs[i].own.found;
		__u64 want = pairs[i].own.v, got = pairs[i].kernel;

		snprintf(name, sizeof(name), "zerocopy %s == workload's count", pairs[i].bpf);
		if (!ledger_has(l, PROBE_ZC_NOTICES))
			add_check(l, false, name, "completion notices not traced on this kernel");
		else if (pairs[i].unsaid)
			add_check(l, got == 0, name, "kernel %" PRIu64 ": the workload's notifications carry no "
				  "usage report, so none may say copied", (uint64_t)got);
		else if (!found)
			add_check(l, false, name, "the workload did not report %s", pairs[i].wl);
		else
			add_check(l, got == want, name, "kernel %" PRIu64 ", workload %" PRIu64,
				  (uint64_t)got, (uint64_t)want);
	}
	/* a COPIED notice means the kernel copied those sends: the bytes must match the deferred site */
	snprintf(name, sizeof(name), "deferred_copy bytes == bytes of COPIED notices");
	/* on a device the kernel copies on transmit, not on delivery: check_copied_notices() holds them */
	if (ledger_has(l, PROBE_ZC_NOTICES) && l->method[SITE_DEFERRED_COPY] != METHOD_NONE && !unsaid &&
	    !sender_on_device(l)) {
		__u64 delivered, sent = l->rep.bytes.v, again = 0;

		/* per-skb probes also see the copies of segments delivered twice; the notices do not */
		if (zc_redelivered(l, &delivered) && delivered > sent)
			again = delivered - sent;
		add_check(l, l->k.site[SITE_DEFERRED_COPY].bytes == l->k.misc.zc_bytes_copied_notice + again, name,
			  "deferred_copy %" PRIu64 ", COPIED notices cover %" PRIu64 " + %" PRIu64 " delivered again",
			  (uint64_t)l->k.site[SITE_DEFERRED_COPY].bytes, (uint64_t)l->k.misc.zc_bytes_copied_notice,
			  (uint64_t)again);
	}
}

/*
 * perf's context-switches and the sched_switch count cover different windows: perf counts from the
 * exec (enable_on_exec) and stops at each task's perf_event_exit_task(), before its last
 * switch-outs (the last one, and any preemption on the rest of the exit path); the tracer counts
 * from the fork to the end. So the tracer must exceed perf by the switches it saw before the exec
 * (noted at sched_process_exec) plus at most those of tasks already exiting (PF_EXITING is set
 * before perf_event_exit_task(); a slow or busy machine preempts an exit several times), give or
 * take 2 for the few instructions between perf's enable and the exec tracepoint. Runs with many threads or long
 * setup still show perf a little lower, up to about 1% of the count, for a reason not pinned
 * down: 1% more is allowed, and stated.
 */
static void check_sched(struct ledger *l)
{
	const struct perf_counter *pc = l->perf ? perf_find(l->perf, "context-switches") : NULL;
	__u64 bpf = l->k.sched.voluntary + l->k.sched.involuntary;
	double before = l->k.misc.exec_seen ? (double)l->k.misc.switches_before_exec : 0, diff, lo, hi;
	/* perf's enable_on_exec fires inside execve, before the exec tracepoint: the switches of
	 * the exec itself (a busy machine preempts it) may fall on either side */
	double at_execve = l->k.misc.execve_seen ? (double)l->k.misc.switches_at_execve : before;

	if (!ledger_has(l, PROBE_SCHED) || !pc || !pc->counted)
		return;
	diff = (double)bpf - pc->value;
	lo = (at_execve < before ? at_execve : before) - 2;
	hi = before + (double)l->k.misc.switches_exiting + 2 + (l->k.misc.exec_seen ? 0 : 2) + (double)(bpf / 100);
	add_check(l, diff >= lo && diff <= hi, "context switches: sched_switch ~ perf",
		  "tracer %" PRIu64 " (%.0f before execve, %.0f before exec, %" PRIu64 " exiting), perf %.0f, "
		  "difference %+.0f, allowed %+.0f..%+.0f (before execve..exec, exiting, 2, 1%%)", (uint64_t)bpf,
		  at_execve, before, (uint64_t)l->k.misc.switches_exiting, pc->value, diff, lo, hi);
}

/*
 * With the receiver in its own process, each side's ledger is checked on its own: everything the
 * sender put on the wire, and everything the receiver copied out, is under the right pid. The
 * receiver's requests (remote-fileread) are the only bytes going the other way.
 */
static void check_net_sides(struct ledger *l)
{
	static const int send_sites[] = { SITE_SEND_COPY, SITE_ZC_PIN, SITE_SPLICE_REF };
	const struct proc_sites *snd = ledger_proc_of(l, "sender"), *rcv = ledger_proc_of(l, "receiver");
	__u64 sent = l->rep.bytes.v, recvd = l->rep.bytes_received.v, req = l->rep.request_bytes.v;
	__u64 s_out = 0, r_out = 0, s_in = snd ? snd->bytes[SITE_RECV_COPY] : 0;
	__u64 r_in = rcv ? rcv->bytes[SITE_RECV_COPY] : 0;

	if (l->method[SITE_SEND_COPY] == METHOD_NONE || l->method[SITE_RECV_COPY] == METHOD_NONE)
		return;
	for (unsigned i = 0; i < sizeof(send_sites) / sizeof(send_sites[0]); i++) {
		s_out += snd ? snd->bytes[send_sites[i]] : 0;
		r_out += rcv ? rcv->bytes[send_sites[i]] : 0;
	}
	add_check(l, s_out == sent, "sender's send sites == bytes sent",
		  "sender (pid %" PRIu64 ") send_copy + zc_pin + splice_ref %" PRIu64 ", sent %" PRIu64,
		  (uint64_t)l->rep.sender_pid.v, (uint64_t)s_out, (uint64_t)sent);
	add_check(l, r_in == recvd, "receiver's recv_copy == bytes received",
		  "receiver (pid %" PRIu64 ") recv_copy %" PRIu64 ", received %" PRIu64,
		  (uint64_t)l->rep.receiver_pid.v, (uint64_t)r_in, (uint64_t)recvd);
	add_check(l, r_out == req && s_in == req, "the other way: requests only",
		  "receiver sent %" PRIu64 ", sender received %" PRIu64 ", requests %" PRIu64,
		  (uint64_t)r_out, (uint64_t)s_in, (uint64_t)req);
}

/* The same for a pipe's two ends in two processes: the writer wrote, the reader read, no more. */
static void check_pipe_sides(struct ledger *l)
{
	const struct proc_sites *wr = ledger_proc_of(l, "sender"), *rd = ledger_proc_of(l, "receiver");
	__u64 w_out = wr ? wr->bytes[SITE_PIPE_WRITE_COPY] : 0, r_in = rd ? rd->bytes[SITE_PIPE_READ_COPY] : 0;
	__u64 w_in = wr ? wr->bytes[SITE_PIPE_READ_COPY] : 0, r_out = rd ? rd->bytes[SITE_PIPE_WRITE_COPY] : 0;

	if (l->method[SITE_PIPE_WRITE_COPY] == METHOD_NONE || l->method[SITE_PIPE_READ_COPY] == METHOD_NONE)
		return;
	add_check(l, w_out == l->rep.bytes.v, "writer's pipe_write_copy == bytes sent",
		  "writer (pid %" PRIu64 ") pipe_write_copy %" PRIu64 ", sent %" PRIu64,
		  (uint64_t)l->rep.sender_pid.v, (uint64_t)w_out, (uint64_t)l->rep.bytes.v);
	add_check(l, r_in == l->rep.bytes_received.v, "reader's pipe_read_copy == bytes received",
		  "reader (pid %" PRIu64 ") pipe_read_copy %" PRIu64 ", received %" PRIu64,
		  (uint64_t)l->rep.receiver_pid.v, (uint64_t)r_in, (uint64_t)l->rep.bytes_received.v);
	add_check(l, w_in == 0 && r_out == 0, "the other way through the pipes: nothing",
		  "writer read %" PRIu64 ", reader wrote %" PRIu64, (uint64_t)w_in, (uint64_t)r_out);
}

/* Each side on its own, by what the workload moves its payload through: a socket or a pipe. */
static void check_sides(struct ledger *l)
{
	if (l->def->site[SITE_RECV_COPY] != EXP_ZERO)
		check_net_sides(l);
	if (l->def->site[SITE_PIPE_READ_COPY] == EXP_RECEIVED)
		check_pipe_sides(l);
}

/* The kernel side aggregates in maps: a full map loses figures, and says so here. */
static void check_dropped(struct ledger *l)
{
	char what[160];
	__u64 total = dropped_summary(l, what, sizeof(what));

	if (total)
		add_check(l, false, "kernel maps kept up", "%" PRIu64 " updates failed (map full): %s",
			  (uint64_t)total, what);
	else
		add_check(l, true, "kernel maps kept up", "no map update failed, no figure lost");
}

/*
 * The kernel skips a program rather than nest BPF programs on one CPU (kfigures_read_skips()):
 * each skipped run is a figure lost, named here by program.
 */
static void check_skips(struct ledger *l)
{
	char what[200];
	bool fentry = false, kprobe = false;

	kfigures_skips_text(&l->k, what, sizeof(what));
	for (int i = 0; i < l->k.nskips; i++) {
		const char *end = strrchr(l->k.skips[i].name, '_');

		fentry |= end && (!strcmp(end, "_fentry") || !strcmp(end, "_fexit"));
		kprobe |= end && (!strcmp(end, "_kprobe") || !strcmp(end, "_kretprobe"));
	}
	if (l->k.skipped)
		add_check(l, false, "no program run skipped",
			  "the kernel skipped %" PRIu64 " runs (a BPF program held the CPU): %s%s; "
			  "the figures they count may be short%s%s", (uint64_t)l->k.skipped, what,
			  l->k.nskips == MAX_SKIPPED_PROGS ? ", ..." : "",
			  fentry && kernel_preempt_rt() ? "; on PREEMPT_RT, fentry programs are preempted inside "
			  "their runs: leave --method fentry out" : "",
			  kprobe && kernel_preempt_rt() ? "; on PREEMPT_RT, kprobe programs are skipped while a "
			  "task preempted in a bpf() map call (any tracer's) holds their CPU" : "");
	else
		add_check(l, true, "no program run skipped", "the kernel ran every program%s%s",
			  l->k.skips_uncounted[0] ? " whose skips it counts; " : "", l->k.skips_uncounted);
}

/*
 * A UDP zerocopy pin seen by the tracepoint path only when a queueing device sent its skb, after
 * the send call returned: udp_send_copy counted those bytes as copied too. Shown where it happened.
 */
static void check_udp_pins(struct ledger *l)
{
	__u64 late = l->k.misc.udp_pins_late;

	if (late)
		add_check(l, false, "UDP zerocopy pins seen in their send call",
			  "%" PRIu64 " B pinned were seen after their send returned (a queueing device): "
			  "udp_send_copy counts them as copies too", (uint64_t)late);
}

/*
 * The kernel's own word on zerocopy sends: a COPIED notice says it copied that send's pinned data.
 * For a command or a process (a built-in workload holds each notice to its own count above), the
 * bytes those notices cover must be in a copy site: a copy no site saw (on transmit, for a device
 * without scatter-gather or checksum offload) fails the run instead of reading as a send that held.
 */
/* tx_copy's bytes ("N B"), or why it is not measured. */
static const char *tx_copy_figure(const struct ledger *l, char *buf, size_t n)
{
	if (l->method[SITE_TX_COPY] == METHOD_NONE)
		snprintf(buf, n, "not measured (%s)", refusal_of(l, SITE_TX_COPY));
	else
		snprintf(buf, n, "%" PRIu64 " B", (uint64_t)l->k.site[SITE_TX_COPY].bytes);
	return buf;
}

static void check_copied_notices(struct ledger *l)
{
	char buf[320], linked[96];

	__u64 copied = l->k.misc.zc_bytes_copied_notice;
	__u64 sites = l->k.site[SITE_DEFERRED_COPY].bytes + l->k.site[SITE_TX_COPY].bytes;

	if ((l->def && !sender_on_device(l)) || !ledger_has(l, PROBE_ZC_NOTICES) || !l->k.misc.zc_notices_copied)
		return;
	if (l->method[SITE_DEFERRED_COPY] == METHOD_NONE) {
		add_check(l, false, "COPIED notices' bytes in a copy site", "not measured: %s",
			  refusal_of(l, SITE_DEFERRED_COPY));
		return;
	}
	snprintf(linked, sizeof(linked), " (%" PRIu64 " of them linked io_uring notifications of uncopied data)",
		 (uint64_t)l->k.misc.zc_notices_copied_linked);
	add_check(l, sites >= copied, "COPIED notices' bytes in a copy site",
		  "%" PRIu64 " notices say COPIED%s, covering %" PRIu64 " B; deferred_copy %" PRIu64 " B, tx_copy %s%s",
		  (uint64_t)l->k.misc.zc_notices_copied, l->k.misc.zc_notices_copied_linked ? linked : "",
		  (uint64_t)copied, (uint64_t)l->k.site[SITE_DEFERRED_COPY].bytes, tx_copy_figure(l, buf, sizeof(buf)),
		  sites >= copied ? "" : ": the kernel copied pinned data where no site counts it");
}

/* Every byte the workload's calls moved across the user/kernel boundary is in a site. */
static void check_unattributed(struct ledger *l)
{
	char what[160];

	if (!l->bnd.measured) {
		add_check(l, false, "no unattributed bytes", "not measured: %s", refusal_of(l, PROBE_BOUNDARY));
		return;
	}
	boundary_summary(&l->bnd, what, sizeof(what));
	if (l->bnd.unattributed)
		add_check(l, false, "no unattributed bytes", "%" PRIu64 " B no site explains: %s",
			  (uint64_t)l->bnd.unattributed, what);
	else
		add_check(l, true, "no unattributed bytes", "every byte the calls moved is in a site");
}

/* The sampled CPU time against task-clock: a sampler that lost or invented time fails here. */
static void check_cost(struct ledger *l)
{
	char detail[200];
	bool ok;

	if (cost_total_check(l, &ok, detail, sizeof(detail)))
		add_check(l, ok, "sampled CPU time == task-clock, within its band", "%s", detail);
	for (int s = 0; s < NR_SITES; s++) {
		char name[80];

		if (l->copy_bound[s] <= 0)
			continue;
		ok = cost_bound_ok(l, s, detail, sizeof(detail));
		snprintf(name, sizeof(name), "%s copies no faster than memcpy", site_name(s));
		add_check(l, ok, name, "%s", detail);
	}
}

void ledger_check(struct ledger *l)
{
	l->nchecks = 0;
	if (l->exit_status >= 0)
		add_check(l, l->exit_status == 0, "workload succeeded", "exit status %d", l->exit_status);
	if (l->def) {
		if (!l->workload) {
			add_check(l, false, "workload figures", "the workload reported no figures");
		} else {
			for (int s = 0; s < NR_SITES; s++)
				check_site(l, s, site_expectation(l, s));
			check_udp_zc_head(l);
			/* the notices are the sending end's: the receiving end alone has none */
			if (l->def->zc_notices && !(l->rep.remote_role && !strcmp(l->rep.remote_role, "receiver")))
				check_notices(l);
			if (l->def->file)
				check_file(l);
			if (ledger_two_sides(l))
				check_sides(l);
			check_unattributed(l);
		}
		if (l->phase_gated)
			add_check(l, l->k.misc.phase_begins == 1 && l->k.misc.phase_ends == 1,
				  "one measured phase seen", "%" PRIu64 " begin, %" PRIu64 " end markers",
				  (uint64_t)l->k.misc.phase_begins, (uint64_t)l->k.misc.phase_ends);
	}
	check_sched(l);
	check_copied_notices(l);
	check_udp_pins(l);
	check_dropped(l);
	check_skips(l);
	check_cost(l);
}

bool ledger_ok(const struct ledger *l)
{
	for (int i = 0; i < l->nchecks; i++)
		if (!l->checks[i].ok)
			return false;
	return true;
}