/*
 * Reading the kernel's maps (kfigures.h): in batches (BPF_MAP_LOOKUP_BATCH), a few system calls
 * per map rather than one per entry, since the live view reads them all every tick.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include "os/machine.h"
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "trace/kfigures.h"
#include "zctrace.skel.h"

#define BATCH 256	/* entries per lookup */

#define MAX_SLOW_STEPS (1u << 22)	/* a walk one key at a time, bounded */

/*
 * One entry at a time: where the kernel has no batch lookup for the map. A key deleted under the
 * walk sends the next step back to the first key, so an entry may be seen twice here.
 */
static void each_entry_slowly(int fd, size_t ksz, size_t vsz, kfig_entry_fn fn, void *ctx)
{
	char key[64], next[64], *val = malloc(vsz);	/* a per-CPU value: a copy per CPU */
	void *prev = NULL;

	if (ksz > sizeof(key) || !val) {
		free(val);
		return;
	}
	for (unsigned steps = 0; steps < MAX_SLOW_STEPS && !bpf_map_get_next_key(fd, prev, next); steps++) {
		memcpy(key, next, ksz);
		prev = key;
		if (!bpf_map_lookup_elem(fd, key, val))
			fn(ctx, key, val);
	}
	free(val);
}

/*
 * Each thread's batch buffers, kept from one read to the next: the live view, the census and the
 * exporter read the same maps every tick, and need no allocation of a few hundred KiB each time.
 */
static __thread struct {
	char *keys, *vals;
	size_t kcap, vcap;	/* bytes */
} bufs;

/* Room for @n entries of @ksz and @vsz bytes in this thread's buffers. */
static bool room_for(__u32 n, size_t ksz, size_t vsz)
{
	size_t kneed = (size_t)n * ksz, vneed = (size_t)n * vsz;
	char *p;

	if (kneed > bufs.kcap) {
		p = realloc(bufs.keys, kneed);
		if (!p)
			return false;
		bufs.keys = p;
		bufs.kcap = kneed;
	}
	if (vneed > bufs.vcap) {
		p = realloc(bufs.vals, vneed);
		if (!p)
			return false;
		bufs.vals = p;
		bufs.vcap = vneed;
	}
	return true;
}

/*
 * Calls @fn on every entry of map @fd; hash and array maps alike. The batches are all read before
 * @fn sees any entry: a lookup that fails midway (EINTR past the kernel's retries, a hash bucket
 * larger than a batch) then reads the map again one entry at a time, and nothing is counted twice.
 * @fn must not read a map itself: the entries it is given are in this thread's buffers.
 */
void kfig_each_entry(int fd, size_t ksz, size_t vsz, kfig_entry_fn fn, void *ctx)
{
	__u32 in = 0, out = 0, count, n = 0;
	bool first = true;
	int err = 0;

	do {
		if (!room_for(n + BATCH, ksz, vsz)) {
			err = -ENOMEM;
			break;
		}
		count = BATCH;
		err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, bufs.keys + (size_t)n * ksz,
					   bufs.vals + (size_t)n * vsz, &count, NULL) ? -errno : 0;
		first = false;
		if (err && err != -ENOENT)
			break;
		n += count;
		in = out;
	} while (!err);	/* -ENOENT: that was the last batch */
	if (err == -ENOENT) {
		for (__u32 i = 0; i < n; i++)
			fn(ctx, bufs.keys + (size_t)i * ksz, bufs.vals + (size_t)i * vsz);
	} else {
		each_entry_slowly(fd, ksz, vsz, fn, ctx);
	}
}

static void add_proc_site(struct kfigures *k, __u32 tgid, __u32 site, const struct site_stats *st)
{
	int i;

	if (!st->count && !st->bytes)
		return;
	for (i = 0; i < k->nproc_sites && k->procs[i].tgid != tgid; i++)
		;
	if (i == k->nproc_sites) {
		if (i == MAX_PROC_SITES)
			return;
		k->procs[k->nproc_sites++] = (struct proc_sites){ .tgid = tgid };
	}
	k->procs[i].count[site] += st->count;
	k->procs[i].bytes[site] += st->bytes;
}

static void on_site(void *ctx, const void *key, const void *val)
{
	struct kfigures *k = ctx;
	const struct site_key *sk = key;
	const struct site_stats *st = val;

	if (sk->site >= NR_SITES)
		return;
	k->site[sk->site].count += st->count;
	k->site[sk->site].bytes += st->bytes;
	for (int i = 0; i < MAX_SLOTS; i++)
		k->site[sk->site].hist[i] += st->hist[i];
	add_proc_site(k, sk->tgid, sk->site, st);
}

static void on_zc_path(void *ctx, const void *key, const void *val)
{
	struct kfigures *k = ctx;

	if (k->nzp == MAX_ZC_PATHS)
		return;
	k->zp_key[k->nzp] = *(const struct zc_path_key *)key;
	k->zp[k->nzp++] = *(const struct zc_path_stats *)val;
}

/*
 * Adds to an account row: the row of the same key, or a new one; past the last row, folded into it
 * under ACCOUNT_FOLDED. A key may come twice: from the account and from CPUs' slots.
 */
static void add_account_row(struct kfigures *k, const struct account_key *key, const struct account_stats *v)
{
	struct account_stats *row = NULL;

	for (int i = 0; i < k->nacct && !row; i++)
		if (!memcmp(&k->acct_key[i], key, sizeof(*key)))
			row = &k->acct[i];
	if (!row && k->nacct < MAX_ACCOUNT_ROWS) {
		k->acct_key[k->nacct] = *key;
		row = &k->acct[k->nacct++];
	}
	if (!row) {
		k->acct_key[MAX_ACCOUNT_ROWS - 1] = (struct account_key){ .call = ACCOUNT_FOLDED, .fd_type = FT_OTHER };
		row = &k->acct[MAX_ACCOUNT_ROWS - 1];
	}
	row->calls += v->calls;
	row->bytes += v->bytes;
	row->unsized += v->unsized;
}

static void on_account(void *ctx, const void *key, const void *val)
{
	add_account_row(ctx, key, val);
}

struct per_cpu {
	kfig_entry_fn fn;
	void *ctx;
	int ncpus;
	size_t stride;
};

static void on_cpu_copies(void *ctx, const void *key, const void *val)
{
	const struct per_cpu *p = ctx;

	for (int cpu = 0; cpu < p->ncpus; cpu++)
		p->fn(p->ctx, key, (const char *)val + cpu * p->stride);
}

/*
 * Calls @fn on each CPU's copy of every entry of per-CPU map @fd (@vsz: one copy's size). The kernel
 * hands a per-CPU value as one 8-byte-aligned copy per possible CPU.
 */
static void each_cpu_copy(int fd, size_t ksz, size_t vsz, kfig_entry_fn fn, void *ctx)
{
	struct per_cpu p = { fn, ctx, libbpf_num_possible_cpus(), (vsz + 7) & ~(size_t)7 };

	if (p.ncpus > 0)
		kfig_each_entry(fd, ksz, (size_t)p.ncpus * p.stride, on_cpu_copies, &p);
}

/* A site's slot on one CPU: when taken, its target's, as a key of sites would be. */
static void on_hot_site(void *ctx, const void *key, const void *val)
{
	const struct hot_site *h = val;
	struct site_key sk = { .tgid = (__u32)h->tgid, .site = *(const __u32 *)key };

	if (h->tgid)
		on_site(ctx, &sk, &h->st);
}

/* An account slot on one CPU: when taken, its row's. */
static void on_hot_account(void *ctx, const void *key, const void *val)
{
	const struct hot_account *h = val;
	struct account_key ak = hot_account_key(h->key);

	if (h->key)
		add_account_row(ctx, &ak, &h->st);
}

/* By file type, then call. */
static int cmp_account(const void *a, const void *b)
{
	const struct account_key *x = a, *y = b;

	if (x->fd_type != y->fd_type)
		return (x->fd_type > y->fd_type) - (x->fd_type < y->fd_type);
	return (x->call > y->call) - (x->call < y->call);
}

static void on_sched(void *ctx, const void *key, const void *val)
{
	struct sched_stats *sum = ctx;
	const struct sched_stats *sc = val;

	sum->voluntary += sc->voluntary;
	sum->involuntary += sc->involuntary;
	sum->offcpu_ns += sc->offcpu_ns;
	for (int i = 0; i < MAX_SLOTS; i++)
		sum->offcpu_hist[i] += sc->offcpu_hist[i];
}

static void on_target(void *ctx, const void *key, const void *val)
{
	(*(int *)ctx)++;
}

static void on_pc_file(void *ctx, const void *key, const void *val)
{
	struct kfigures *k = ctx;

	if (k->npc == MAX_PC_FILES)
		return;
	k->pc_key[k->npc] = *(const struct pc_key *)key;
	k->pc_pages[k->npc++] = *(const __u64 *)val;
}

/* An array map of __u64 counters added into @vals (zeroed), by index; a per-CPU one's copies each. */
struct counters {
	__u64 *vals;
	__u32 n;
};

static void on_counter(void *ctx, const void *key, const void *val)
{
	struct counters *c = ctx;
	__u32 i = *(const __u32 *)key;

	if (i < c->n)
		c->vals[i] += *(const __u64 *)val;
}

static void read_counters(int fd, __u64 *vals, __u32 n)
{
	struct counters c = { vals, n };

	kfig_each_entry(fd, sizeof(__u32), sizeof(__u64), on_counter, &c);
}

/*
 * The syscall counters: in each CPU's state (one per-CPU entry), the whole run's and the measured
 * phase's side by side.
 */
static void read_syscall_counts(int fd, struct kfigures *k)
{
	int ncpus = libbpf_num_possible_cpus();
	struct cpu_state *per = ncpus > 0 ? calloc(ncpus, sizeof(*per)) : NULL;
	__u32 zero = 0;

	_Static_assert(sizeof(struct cpu_state) % 8 == 0, "a per-CPU value is read at 8-byte strides");
	if (per && !bpf_map_lookup_elem(fd, &zero, per))
		for (int cpu = 0; cpu < ncpus; cpu++)
			for (int nr = 0; nr < MAX_SYSCALLS; nr++) {
				k->syscalls[nr] += per[cpu].counts.all[nr];
				k->phase_syscalls[nr] += per[cpu].counts.phase[nr];
			}
	free(per);
}

static int cmp_proc(const void *a, const void *b)
{
	const struct proc_sites *x = a, *y = b;

	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

/* Transmit before receive, then by process and device: the order a skb meets them. */
static int cmp_zc_path(const void *a, const void *b)
{
	const struct zc_path_key *x = a, *y = b;

	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	if (x->stage != y->stage)
		return (x->stage > y->stage) - (x->stage < y->stage);
	return (x->ifindex > y->ifindex) - (x->ifindex < y->ifindex);
}

/*
 * Sorts @n keys of @ksz bytes by @cmp, the values of @vsz bytes beside them in their own array
 * moving with them: an insertion sort, the arrays being short.
 */
static void sort_pairs(void *keys, size_t ksz, void *vals, size_t vsz, int n, int (*cmp)(const void *, const void *))
{
	char *k = keys, *v = vals, tk[64], tv[sizeof(struct zc_path_stats) > sizeof(struct account_stats) ?
					      sizeof(struct zc_path_stats) : sizeof(struct account_stats)];

	for (int i = 1; i < n; i++) {
		for (int j = i; j > 0 && cmp(k + (j - 1) * ksz, k + j * ksz) > 0; j--) {
			memcpy(tk, k + j * ksz, ksz);
			memcpy(tv, v + j * vsz, vsz);
			memcpy(k + j * ksz, k + (j - 1) * ksz, ksz);
			memcpy(v + j * vsz, v + (j - 1) * vsz, vsz);
			memcpy(k + (j - 1) * ksz, tk, ksz);
			memcpy(v + (j - 1) * vsz, tv, vsz);
		}
	}
}

_Static_assert(sizeof(struct zc_path_key) <= 64 && sizeof(struct account_key) <= 64, "keys fit sort_pairs()");

/*
 * Process @p's name and network namespace: as the kernel noted them (at its fork, exec and exit),
 * else, for one still running that was never noted (a process given with -p), from /proc.
 */
static void name_proc(int idents_fd, struct proc_sites *p)
{
	struct proc_ident id;
	char path[64];
	struct stat st;
	FILE *f;

	if (!bpf_map_lookup_elem(idents_fd, &p->tgid, &id)) {
		memcpy(p->comm, id.comm, sizeof(p->comm));
		p->comm[sizeof(p->comm) - 1] = '\0';
		p->netns = id.netns;
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/comm", p->tgid);
	if ((f = fopen(path, "r"))) {
		if (fgets(p->comm, sizeof(p->comm), f))
			p->comm[strcspn(p->comm, "\n")] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%u/ns/net", p->tgid);
	if (!stat(path, &st))
		p->netns = st.st_ino;
}

void kfigures_read(struct kfigures *k, struct zctrace_bpf *obj)
{
	memset(k, 0, sizeof(*k));
	kfig_each_entry(bpf_map__fd(obj->maps.sites), sizeof(struct site_key), sizeof(struct site_stats), on_site, k);
	each_cpu_copy(bpf_map__fd(obj->maps.hot_sites), sizeof(__u32), sizeof(struct hot_site), on_hot_site, k);
	kfig_each_entry(bpf_map__fd(obj->maps.zc_path), sizeof(struct zc_path_key), sizeof(struct zc_path_stats),
		   on_zc_path, k);
	kfig_each_entry(bpf_map__fd(obj->maps.sched), sizeof(__u32), sizeof(struct sched_stats), on_sched, &k->sched);
	each_cpu_copy(bpf_map__fd(obj->maps.sched_cpu), sizeof(__u32), sizeof(struct sched_stats), on_sched, &k->sched);
	kfig_each_entry(bpf_map__fd(obj->maps.targets), sizeof(__u32), sizeof(__u8), on_target, &k->nprocs);
	kfig_each_entry(bpf_map__fd(obj->maps.pc_adds), sizeof(struct pc_key), sizeof(__u64), on_pc_file, k);
	read_syscall_counts(bpf_map__fd(obj->maps.cpu_states), k);
	kfig_each_entry(bpf_map__fd(obj->maps.account), sizeof(struct account_key), sizeof(struct account_stats),
		   on_account, k);
	each_cpu_copy(bpf_map__fd(obj->maps.hot_account), sizeof(__u32), sizeof(struct hot_account), on_hot_account, k);
	k->misc = obj->bss->misc;
	for (int i = 0; i < k->nproc_sites; i++)
		name_proc(bpf_map__fd(obj->maps.idents), &k->procs[i]);
	qsort(k->procs, k->nproc_sites, sizeof(k->procs[0]), cmp_proc);
	sort_pairs(k->zp_key, sizeof(k->zp_key[0]), k->zp, sizeof(k->zp[0]), k->nzp, cmp_zc_path);
	sort_pairs(k->acct_key, sizeof(k->acct_key[0]), k->acct, sizeof(k->acct[0]), k->nacct, cmp_account);
}

/* Whether the kernel runs @prog through trace_call_bpf(): kprobes, uprobes, classic tracepoints. */
static bool called_through_perf(const struct bpf_program *prog)
{
	static const char *const kinds[] = { "kprobe", "kretprobe", "uprobe", "uretprobe", "usdt", "tracepoint" };
	const char *sec = bpf_program__section_name(prog);

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(sec, kinds[i], strlen(kinds[i])) && strchr("/.", sec[strlen(kinds[i])]))
			return true;
	return false;
}

/* Linux 6.7 counts the runs trace_call_bpf() skips (bpf_prog_active taken); earlier ones do not. */
static bool perf_skips_counted(void)
{
	return kernel_at_least(6, 7);
}

static void add_skips(struct kfigures *k, const char *name, __u64 runs)
{
	int i = k->nskips < MAX_SKIPPED_PROGS ? k->nskips++ : MAX_SKIPPED_PROGS - 1;

	if (i == MAX_SKIPPED_PROGS - 1 && k->skips[i].runs >= runs)
		return;
	snprintf(k->skips[i].name, sizeof(k->skips[i].name), "%s", name);
	k->skips[i].runs = runs;
	/* most first: one insertion step */
	for (; i > 0 && k->skips[i - 1].runs < k->skips[i].runs; i--) {
		struct prog_skips t = k->skips[i - 1];

		k->skips[i - 1] = k->skips[i];
		k->skips[i] = t;
	}
}

/*
 * The kprobe behind @link: how many times it fired and was not run, since a kprobe was running on
 * that CPU already (the kernel's nmissed, in the link's info from 6.7). The UAPI layout of
 * struct bpf_link_info's perf_event.kprobe, which older headers lack: type 7 (BPF_LINK_TYPE_PERF_EVENT),
 * perf_event.type 3 or 4 (kprobe, kretprobe) at byte 16, missed at byte 48. 0 where not told.
 */
static __u64 kprobe_missed(struct bpf_link *link)
{
	__u64 info[8] = {};
	__u32 len = sizeof(info), type, ptype;
	int fd = link ? bpf_link__fd(link) : -1;

	if (fd < 0 || bpf_obj_get_info_by_fd(fd, info, &len) || len < 56)
		return 0;
	type = (__u32)info[0];
	ptype = (__u32)info[2];
	return type == 7 && (ptype == 3 || ptype == 4) ? info[6] : 0;
}

/*
 * The kernel does not nest BPF programs on a CPU: a tracing program that fires while it runs the
 * same one (fentry, tp_btf, raw_tp), or while any kprobe, uprobe or tracepoint program or a BPF map
 * syscall holds the CPU (kprobes and their kin), is skipped and counted in the program's
 * recursion_misses; and a kprobe that fires while another kprobe runs on its CPU is not run at
 * all (its nmissed). An interrupt's softirq that sends or receives inside a run is where it
 * happens, and a map syscall, which may even be preempted there by another task: zctrace's own
 * reads of its maps make kprobe programs skip runs of whatever else runs on their CPU, so the
 * run's figures are read after its end is marked. Kernels before 6.7 count neither for kprobes
 * and uprobes.
 */
void kfigures_mark_skips(struct skip_mark *m, struct zctrace_bpf *obj)
{
	const struct bpf_object_skeleton *sk = obj->skeleton;

	m->n = sk->prog_cnt < MAX_MARKED_PROGS ? sk->prog_cnt : MAX_MARKED_PROGS;
	for (int i = 0; i < m->n; i++) {
		const struct bpf_program *prog = *sk->progs[i].prog;
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		m->runs[i] = 0;
		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			m->runs[i] = info.recursion_misses + kprobe_missed(*sk->progs[i].link);
	}
}

size_t kfigures_skips_text(const struct kfigures *k, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int i = 0; i < k->nskips && len < n; i++)
		len += snprintf(buf + len, n - len, "%s%s %llu", i ? ", " : "", k->skips[i].name,
				(unsigned long long)k->skips[i].runs);
	return len;
}

void kfigures_read_skips(struct kfigures *k, struct zctrace_bpf *obj, const struct skip_mark *from,
			 const struct skip_mark *to)
{
	const struct bpf_object_skeleton *sk = obj->skeleton;
	bool counted = perf_skips_counted(), uncounted = false;

	k->nskips = 0;
	k->skipped = 0;
	k->skips_uncounted[0] = '\0';
	for (int i = 0; i < to->n && i < from->n; i++) {
		const struct bpf_program *prog = *sk->progs[i].prog;
		__u64 runs = to->runs[i] - from->runs[i];

		uncounted |= !counted && called_through_perf(prog) && *sk->progs[i].link;
		if (!runs || to->runs[i] < from->runs[i])
			continue;
		k->skipped += runs;
		add_skips(k, bpf_program__name(prog), runs);
	}
	if (uncounted)
		snprintf(k->skips_uncounted, sizeof(k->skips_uncounted),
			 "kernels before 6.7 do not count the runs of kprobe and uprobe programs they skip");
}

static void on_step(void *ctx, const void *key, const void *val)
{
	struct step_figures *sf = ctx;
	__u32 s = *(const __u32 *)key;

	if (s < MAX_STEPS)
		sf->stats[s] = *(const struct step_stats *)val;
}

void kfigures_read_steps(struct step_figures *sf, struct zctrace_bpf *obj)
{
	memset(sf, 0, sizeof(*sf));
	kfig_each_entry(bpf_map__fd(obj->maps.step_stats), sizeof(__u32), sizeof(struct step_stats), on_step, sf);
	/* step s, syscall nr at s * MAX_SYSCALLS + nr: the same layout as the array */
	read_counters(bpf_map__fd(obj->maps.step_syscalls), &sf->syscalls[0][0], MAX_STEPS * MAX_SYSCALLS);
}
