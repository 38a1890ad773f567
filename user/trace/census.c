/*
 * The machine-wide census (census.h). The kernel keeps each thread's counters in the thread, raw
 * per-(process, site) counters of what it counts elsewhere and a per-(call, file type, process)
 * boundary account in LRU maps; this file keeps, per thread and per process, the raw values it
 * last read and the totals it has added up from their differences. A key the kernel evicted and
 * made again reads lower than before: its new value is all new. A thread that exits sends its
 * last counters once, and is forgotten. A process that is gone gets its last delta, then its keys
 * are removed so that its tgid can serve another.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <mntent.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "trace/boundary.h"
#include "trace/tracer.h"
#include "trace/census.h"
#include "os/clock.h"
#include "trace/kfigures.h"
#include "trace/tracer.h"
#include "zctrace.skel.h"

#define DEFAULT_MAX_KEYS 16384

struct cproc {
	uint32_t tgid;
	bool seen;				/* found in this read's maps */
	bool named;				/* comm and cgroup known (the last known, once gone) */
	bool dead;				/* found gone at a read: forgotten at the next */
	bool gone;				/* forgotten: freed at the next read */
	struct site_stats raw[NR_SITES];	/* the kernel's counters at the last read */
	uint64_t raw_acct[16];			/* its account by boundary group at the last read */
	uint64_t now_acct[16];			/* ... at this read */
	uint64_t acct_total[16];		/* the account's totals by group */
	uint64_t unattributed;			/* at the last read, before the delta */
	struct census_counts threads[NR_SITES];	/* what its threads counted since the last read */
	uint64_t cpu_raw[NR_SITES];		/* its copy samples (--cost) at the last read */
	uint64_t cpu_now[NR_SITES];		/* ... at this read (kept where its key was not read) */
	struct tcp_flow tcp_raw, tcp_now;	/* its sockets' TCP bytes at the last read, and at this one */
	uint64_t derived[2];			/* send_copy's and recv_copy's bytes from those (census_derived()) */
	struct census_proc out;
};

/* A thread the census has read, by its serial: its counters at the last read. */
struct cthread {
	uint64_t serial;
	uint32_t tgid;
	uint32_t misses;			/* reads in a row that met it in neither the iterator nor the ring */
	bool met;				/* met in this read */
	struct census_counts last[NR_SITES];
};

struct census {
	struct zctrace_bpf *obj;
	struct probe_choice choice[NR_PROBES];
	void *procs;				/* tsearch tree of struct cproc by tgid */
	struct cproc **list;			/* every process, for one pass */
	int nlist, caplist;
	struct census_proc *snap;
	int capsnap;
	uint64_t deleted;			/* keys removed by the census itself */
	uint64_t evicted;
	double last;
	uint32_t max_keys;
	struct ring_buffer *exits;		/* exited threads' last counters */
	void *threads;				/* tsearch tree of struct cthread by serial */
	struct cthread **tlist;			/* every thread, for one pass */
	int ntlist, captlist;
	uint64_t hist[NR_SITES][MAX_SLOTS];	/* census_hists summed over the CPUs, at the last read */
	void *hist_buf;				/* one read of census_hists: a value per CPU */
	struct skip_mark skips0, skips;		/* program runs the kernel skipped: at the start, now */
	char skips_uncounted[96];		/* which skips this kernel does not count, or "" */
	uint64_t sample_ns;			/* --cost: the CPU time of one sample; 0 without it */
};

/* Where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1. */
static char cgroup_root[256];

static void find_cgroup_root(void)
{
	struct mntent *m;
	FILE *f = setmntent("/proc/self/mounts", "r");

	cgroup_root[0] = 0;
	while (f && (m = getmntent(f)))
		if (!strcmp(m->mnt_type, "cgroup2")) {
			snprintf(cgroup_root, sizeof(cgroup_root), "%s", m->mnt_dir);
			break;
		}
	if (f)
		endmntent(f);
}

static int cmp_tgid(const void *a, const void *b)
{
	uint32_t x = ((const struct cproc *)a)->tgid, y = ((const struct cproc *)b)->tgid;

	return x < y ? -1 : x > y;
}

void census_tracer_opts(const struct census_opts *o, struct tracer_opts *to)
{
	*to = (struct tracer_opts){
		.cap = o->cap,
		.machine_wide = true,
		.max_keys = o->max_keys ? o->max_keys : DEFAULT_MAX_KEYS,
		/* what the census reports needs none of these, and they fire for every process */
		.skip = 1ULL << PROBE_PAGE_CACHE | 1ULL << PROBE_ZC_PATH | 1ULL << PROBE_SCHED |
			1ULL << PROBE_SYSCALLS | 1ULL << PROBE_PAGE_FAULTS | 1ULL << SITE_USER_COPY |
			1ULL << SITE_TX_COPY | 1ULL << PROBE_ZC_NOTICES,
		.skip_why = "the machine-wide census does not use it",
		.no_syscall_tps = !o->complete,
		.sample_hz = o->cost_hz,
		.per_call = o->per_call,
	};
}

static int on_thread_exit(void *ctx, void *data, size_t size);

/* The exited threads' ring and room for one read of census_hists, where the census counts in threads. */
static int open_threads(struct census *c)
{
	int ncpus = libbpf_num_possible_cpus();

	if (ncpus < 1)
		return ncpus < 0 ? ncpus : -EINVAL;
	c->hist_buf = calloc(ncpus, sizeof(struct census_hists));
	if (!c->hist_buf)
		return -ENOMEM;
	if (!probe_attached(c->choice, PROBE_CENSUS))
		return 0;
	c->exits = ring_buffer__new(bpf_map__fd(c->obj->maps.census_exits), on_thread_exit, c, NULL);
	return c->exits ? 0 : -errno;
}

int census_open(struct census **cp, const struct census_opts *o)
{
	struct census *c = calloc(1, sizeof(*c));
	struct tracer_opts to;
	int err;

	*cp = NULL;
	if (!c)
		return -ENOMEM;
	census_tracer_opts(o, &to);
	c->max_keys = to.max_keys;
	find_cgroup_root();
	if ((err = tracer_start(&c->obj, c->choice, &to))) {
		free(c);
		return err;
	}
	if ((err = open_threads(c))) {
		census_close(c);
		return err;
	}
	kfigures_mark_skips(&c->skips0, c->obj);
	/* the sampler's period, as cost_attach() sets it */
	c->sample_ns = o->cost_hz && probe_attached(c->choice, PROBE_COST) ? 1000000000ULL / o->cost_hz : 0;
	c->last = now_s();
	*cp = c;
	return 0;
}

/*
 * The runs of the census's programs the kernel skipped since the start, with the programs that
 * skipped most in @what (kfigures_mark_skips(): a program that fires while another holds its CPU,
 * or while it was preempted inside itself, on PREEMPT_RT). Their counts may be short by those runs.
 */
static uint64_t read_skips(struct census *c, char *what, size_t n)
{
	struct kfigures *k = calloc(1, sizeof(*k));
	uint64_t total;

	what[0] = '\0';
	if (!k)
		return 0;
	kfigures_mark_skips(&c->skips, c->obj);
	kfigures_read_skips(k, c->obj, &c->skips0, &c->skips);
	kfigures_skips_text(k, what, n);
	snprintf(c->skips_uncounted, sizeof(c->skips_uncounted), "%s", k->skips_uncounted);
	total = k->skipped;
	free(k);
	return total;
}

const char *census_cost_refused(const struct census *c, const struct census_opts *o)
{
	return o->cost_hz && !c->sample_ns ? probe_refusal(c->choice, PROBE_COST) : NULL;
}

bool census_has_account(const struct census *c)
{
	return probe_attached(c->choice, PROBE_BOUNDARY);
}

bool census_has_tcp_counters(const struct census *c)
{
	return probe_attached(c->choice, PROBE_TCP_COUNTERS);
}

unsigned census_derived(const struct census *c)
{
	unsigned bits = 0;

	for (int s = 0; s < NR_SITES; s++)
		if (c->choice[s].chosen >= 0 && probe_sites[s].cands[c->choice[s].chosen].from_counters)
			bits |= s == SITE_SEND_COPY ? TCP_DERIVED_SEND : TCP_DERIVED_RECV;
	return bits;
}

int census_unmeasured(const struct census *c, const char **names, const char **whys, int n)
{
	int k = 0;

	for (int s = 0; s < NR_SITES && k < n; s++)
		if (!c->choice[s].skip && site_method_of(c->choice, s, NULL) == METHOD_NONE) {
			names[k] = site_name(s);
			whys[k++] = probe_refusal(c->choice, s);
		}
	if (!census_has_account(c) && k < n) {
		names[k] = "unattributed";
		whys[k++] = probe_refusal(c->choice, PROBE_BOUNDARY);
	}
	if (!census_has_tcp_counters(c) && k < n) {
		names[k] = "tcp_counters";
		whys[k++] = probe_refusal(c->choice, PROBE_TCP_COUNTERS);
	}
	for (int i = 0; i < 2 && k < n; i++)
		if (census_derived(c) & (i ? TCP_DERIVED_RECV : TCP_DERIVED_SEND)) {
			names[k] = i ? "recv_copy copies" : "send_copy copies";
			whys[k++] = "the bytes come from the sockets' own counters, with no program per call: "
				    "their calls and sizes are not counted (--per-call counts them)";
		}
	return k;
}

const struct probe_choice *census_choice(const struct census *c)
{
	return c->choice;
}

struct zctrace_bpf *census_object(struct census *c)
{
	return c->obj;
}

static struct cproc *proc_of(struct census *c, uint32_t tgid)
{
	struct cproc key = { .tgid = tgid }, *p, **found;

	found = tfind(&key, &c->procs, cmp_tgid);
	if (found)
		return *found;
	if (!(p = calloc(1, sizeof(*p))))
		return NULL;
	p->tgid = p->out.tgid = tgid;
	if (!tsearch(p, &c->procs, cmp_tgid)) {
		free(p);
		return NULL;
	}
	if (c->nlist == c->caplist) {
		int cap = c->caplist ? 2 * c->caplist : 256;
		struct cproc **l = realloc(c->list, cap * sizeof(*l));

		if (!l) {
			tdelete(p, &c->procs, cmp_tgid);
			free(p);
			return NULL;
		}
		c->list = l;
		c->caplist = cap;
	}
	c->list[c->nlist++] = p;
	return p;
}

/* The path of cgroup v2 id @id (its directory's inode number) under the root, by a walk. */
static bool cgroup_walk(const char *dir, size_t rootlen, uint64_t id, char *out, size_t n, int depth)
{
	DIR *d;
	struct dirent *e;
	bool found = false;

	if (depth > 16 || !(d = opendir(dir)))
		return false;
	while (!found && (e = readdir(d))) {
		char sub[4096];
		struct stat st;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name) >= (int)sizeof(sub) || stat(sub, &st))
			continue;
		if ((uint64_t)st.st_ino == id) {
			snprintf(out, n, "%.*s", (int)n - 1, sub + rootlen);
			found = true;
		} else {
			found = cgroup_walk(sub, rootlen, id, out, n, depth + 1);
		}
	}
	closedir(d);
	return found;
}

/* A short process's cgroup is mostly one that others have just been seen in: the last paths found. */
#define CGROUP_CACHE 64
static struct {
	uint64_t id;
	char path[CENSUS_CGROUP_LEN];
} cgroup_cache[CGROUP_CACHE];

static void cgroup_path(uint64_t id, char *out, size_t n)
{
	struct stat st;
	unsigned slot = id % CGROUP_CACHE;

	if (id && cgroup_cache[slot].id == id) {
		snprintf(out, n, "%s", cgroup_cache[slot].path);
		return;
	}
	snprintf(out, n, "?");
	if (!cgroup_root[0])
		return;
	if (!stat(cgroup_root, &st) && (uint64_t)st.st_ino == id)
		snprintf(out, n, "/");
	else if (!cgroup_walk(cgroup_root, strlen(cgroup_root), id, out, n, 0))
		return;
	cgroup_cache[slot].id = id;
	snprintf(cgroup_cache[slot].path, sizeof(cgroup_cache[slot].path), "%s", out);
}

/*
 * The first line of /proc/TGID/@file that starts with @prefix (any line for ""), without its
 * newline; false if there is none or the process is gone.
 */
static bool proc_line(uint32_t tgid, const char *file, const char *prefix, char *out, size_t n)
{
	char path[64];
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/%s", tgid, file);
	if (!(f = fopen(path, "r")))
		return false;
	while (!ok && fgets(out, n, f))
		ok = !strncmp(out, prefix, strlen(prefix));
	fclose(f);
	if (ok)
		out[strcspn(out, "\n")] = 0;
	return ok;
}

/*
 * /proc/TGID/comm, whole: a name may hold a newline of its own (prctl(PR_SET_NAME) takes any
 * bytes), so only the one the kernel adds is taken off. False if the process is gone.
 */
static bool proc_comm(uint32_t tgid, char *out, size_t n)
{
	char path[64], buf[CENSUS_COMM_LEN + 1];	/* 15 bytes, the newline, and one to see more */
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/comm", tgid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	len = read(fd, buf, sizeof(buf));
	close(fd);
	if (len <= 0)
		return false;
	if (buf[len - 1] == '\n')
		len--;
	snprintf(out, n, "%.*s", (int)len, buf);
	return true;
}

/*
 * Its name and cgroup now, from /proc: a process can exec, rename itself or move, and its figures
 * go to what it is at each read. Once gone, it is what the kernel noted as it exited.
 */
static void name_proc(struct census *c, struct cproc *p)
{
	struct proc_ident id;
	char line[CENSUS_CGROUP_LEN + 8];

	if (proc_comm(p->tgid, p->out.comm, sizeof(p->out.comm))) {
		p->out.cgroup_id = 0;
		snprintf(p->out.cgroup, sizeof(p->out.cgroup), "?");
		/* the v2 hierarchy's line; beside v1 hierarchies it comes last */
		if (proc_line(p->tgid, "cgroup", "0::", line, sizeof(line))) {
			char dir[CENSUS_CGROUP_LEN + sizeof(cgroup_root)];
			struct stat st;

			snprintf(p->out.cgroup, sizeof(p->out.cgroup), "%.*s", CENSUS_CGROUP_LEN - 1, line + 3);
			snprintf(dir, sizeof(dir), "%s%s", cgroup_root, p->out.cgroup);
			if (cgroup_root[0] && !stat(dir, &st)) {
				unsigned slot = st.st_ino % CGROUP_CACHE;

				p->out.cgroup_id = st.st_ino;
				cgroup_cache[slot].id = st.st_ino;
				snprintf(cgroup_cache[slot].path, sizeof(cgroup_cache[slot].path), "%s", p->out.cgroup);
			}
		}
		p->named = true;
		return;
	}
	/* gone: what the kernel noted as it exited, else the last names read */
	if (bpf_map_lookup_elem(bpf_map__fd(c->obj->maps.idents), &p->tgid, &id)) {
		if (!p->named) {
			snprintf(p->out.comm, sizeof(p->out.comm), "?");
			snprintf(p->out.cgroup, sizeof(p->out.cgroup), "?");
		}
		p->named = true;
		return;
	}
	snprintf(p->out.comm, sizeof(p->out.comm), "%.15s", id.comm);
	if (!p->named || id.cgroup != p->out.cgroup_id)
		cgroup_path(id.cgroup, p->out.cgroup, sizeof(p->out.cgroup));
	p->out.cgroup_id = id.cgroup;
	p->named = true;
}

static bool alive(uint32_t tgid)
{
	return !kill(tgid, 0) || errno != ESRCH;
}

/*
 * Whether process @tgid has exited, its parent yet to reap it or not: gone, or a zombie with no
 * thread left but its leader (/proc/TGID/status: "State: Z" or "X", and "Threads: 1"). A leader
 * that called pthread_exit() is a zombie too while the other threads run on; they keep it alive.
 */
static bool ended(uint32_t tgid)
{
	char path[40], line[128];
	bool zombie = false;
	long threads = -1;
	FILE *f;

	if (!alive(tgid))
		return true;
	snprintf(path, sizeof(path), "/proc/%u/status", tgid);
	if (!(f = fopen(path, "re")))
		return !alive(tgid);	/* gone since, or hidden (hidepid): not known to have ended */
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "State:", 6)) {
			const char *st = line + 6 + strspn(line + 6, " \t");

			zombie = *st == 'Z' || *st == 'X';
		} else if (!strncmp(line, "Threads:", 8)) {
			threads = strtol(line + 8, NULL, 10);
		}
	}
	fclose(f);
	return zombie && threads == 1;
}

struct site_read {
	struct census *c;
	uint64_t keys;
};

static void on_site(void *ctx, const void *k, const void *v)
{
	const struct site_key *key = k;
	struct site_read *r = ctx;
	struct cproc *p;

	if (key->site >= NR_SITES)
		return;
	r->keys++;
	if (!(p = proc_of(r->c, key->tgid)))
		return;
	p->seen = true;
	p->out.delta.site[key->site] = *(const struct site_stats *)v;	/* the raw value; made a delta below */
}

/*
 * Reads the (process, site) counters into each process's raw values; the keys held. In batches:
 * the kernel evicts keys while they are read, and each must be met once.
 */
static uint64_t read_sites(struct census *c)
{
	struct site_read r = { .c = c };

	kfig_each_entry(bpf_map__fd(c->obj->maps.sites), sizeof(struct site_key), sizeof(struct site_stats),
			on_site, &r);
	return r.keys;
}

static void on_account(void *ctx, const void *k, const void *v)
{
	const struct account_key *key = k;
	struct cproc *p = proc_of(ctx, key->tgid);
	int g = boundary_group_of(key);

	if (!p || g < 0 || g >= 16)
		return;
	p->seen = true;
	p->now_acct[g] += ((const struct account_stats *)v)->bytes;
}

/* Reads the boundary account into each process's groups: each key once, or a group would count it twice. */
static void read_account(struct census *c)
{
	kfig_each_entry(bpf_map__fd(c->obj->maps.account), sizeof(struct account_key), sizeof(struct account_stats),
			on_account, c);
}

static void on_cpu_samples(void *ctx, const void *k, const void *v)
{
	const struct census_cpu *cpu = v;
	struct cproc *p = proc_of(ctx, *(const __u32 *)k);

	if (!p)
		return;
	p->seen = true;
	memcpy(p->cpu_now, cpu->samples, sizeof(p->cpu_now));
}

/* The sampler's copy samples by process (--cost). */
static void read_cpu_samples(struct census *c)
{
	if (c->sample_ns)
		kfig_each_entry(bpf_map__fd(c->obj->maps.census_cpu), sizeof(__u32), sizeof(struct census_cpu),
				on_cpu_samples, c);
}

static void on_tcp_flow(void *ctx, const void *k, const void *v)
{
	struct cproc *p = proc_of(ctx, *(const __u32 *)k);

	if (!p)
		return;
	p->seen = true;
	p->tcp_now = *(const struct tcp_flow *)v;
}

/*
 * Each process's TCP bytes: a sweep over every socket first (tcpcount.bpf.c), so that what each
 * moved up to now is in tcp_flows, then the map. 0 or -errno.
 */
static int read_tcp_flows(struct census *c)
{
	char buf[64];
	ssize_t n;
	int fd;

	if (!census_has_tcp_counters(c))
		return 0;
	c->obj->bss->tcp_sweep++;
	if ((fd = bpf_iter_create(bpf_link__fd(c->obj->links.tcp_sweep_iter))) < 0)
		return -errno;
	/* the sweep writes nothing: past a million descriptors a read says EAGAIN, and goes on at the next */
	while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && (errno == EINTR || errno == EAGAIN)))
		;
	n = n < 0 ? -errno : 0;
	close(fd);
	if (n)
		return n;
	kfig_each_entry(bpf_map__fd(c->obj->maps.tcp_flows), sizeof(__u32), sizeof(struct tcp_flow), on_tcp_flow, c);
	return 0;
}

static uint64_t grow(uint64_t now, uint64_t before)
{
	/* lower than before: the key was evicted and made again, so all of it is new */
	return now >= before ? now - before : now;
}

static int cmp_serial(const void *a, const void *b)
{
	uint64_t x = ((const struct cthread *)a)->serial, y = ((const struct cthread *)b)->serial;

	return x < y ? -1 : x > y;
}

/* The thread of @serial, met now for the first time if it must be. */
static struct cthread *thread_of(struct census *c, const struct census_thread *now)
{
	struct cthread key = { .serial = now->serial }, *t, **found;

	found = tfind(&key, &c->threads, cmp_serial);
	if (found)
		return *found;
	if (c->ntlist == c->captlist) {
		int cap = c->captlist ? 2 * c->captlist : 256;
		struct cthread **l = realloc(c->tlist, cap * sizeof(*l));

		if (!l)
			return NULL;
		c->tlist = l;
		c->captlist = cap;
	}
	if (!(t = calloc(1, sizeof(*t))))
		return NULL;
	t->serial = now->serial;
	t->tgid = now->tgid;
	if (!tsearch(t, &c->threads, cmp_serial)) {
		free(t);
		return NULL;
	}
	c->tlist[c->ntlist++] = t;
	return t;
}

/* What thread @now counted since the census last met it, added to its process's delta. */
static void add_thread(struct census *c, const struct census_thread *now)
{
	struct cthread *t = thread_of(c, now);
	struct cproc *p = proc_of(c, now->tgid);

	if (!t || !p)
		return;
	p->seen = true;
	for (int s = 0; s < NR_SITES; s++) {
		p->threads[s].count += grow(now->site[s].count, t->last[s].count);
		p->threads[s].bytes += grow(now->site[s].bytes, t->last[s].bytes);
		t->last[s] = now->site[s];
	}
	t->met = true;
}

/* A thread's last counters, as it exited: added, and the thread is done (misses past the bound). */
static int on_thread_exit(void *ctx, void *data, size_t size)
{
	struct census *c = ctx;
	struct census_thread now;
	struct cthread *t;

	if (size < sizeof(now))
		return 0;
	memcpy(&now, data, sizeof(now));
	add_thread(c, &now);
	if ((t = thread_of(c, &now)))
		t->misses = UINT32_MAX;
	return 0;
}

/* The live threads' counters, from the census's task iterator. 0 or -errno. */
static int read_live_threads(struct census *c)
{
	struct census_thread recs[64];
	size_t have = 0;
	ssize_t n;
	int fd = bpf_iter_create(bpf_link__fd(c->obj->links.census_iter));

	if (fd < 0)
		return -errno;
	/* a read may end inside a record: the rest comes with the next */
	while ((n = read(fd, (char *)recs + have, sizeof(recs) - have)) > 0 || (n < 0 && errno == EINTR)) {
		size_t whole;

		if (n < 0)
			continue;
		have += n;
		whole = have / sizeof(recs[0]);
		for (size_t i = 0; i < whole; i++)
			add_thread(c, &recs[i]);
		have -= whole * sizeof(recs[0]);
		memmove(recs, (char *)recs + whole * sizeof(recs[0]), have);
	}
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

/*
 * Every thread's counters since the last read: the ring first, then the iterator, which passes by
 * a thread marked exited before its record went to the ring. A thread met in neither had just
 * exited (its record comes with the next read): its process is kept meanwhile. Met in neither
 * twice, its record was lost (census_exits_dropped) and it is forgotten. 0 or -errno.
 */
static int read_threads(struct census *c)
{
	int n = 0, err;

	if (!c->exits)
		return 0;
	if ((err = ring_buffer__consume(c->exits)) < 0 || (err = read_live_threads(c)))
		return err;
	for (int i = 0; i < c->ntlist; i++) {
		struct cthread *t = c->tlist[i];
		struct cproc *p;

		if (!t->met && t->misses != UINT32_MAX && ++t->misses < 2 && (p = proc_of(c, t->tgid)))
			p->seen = true;
		if (t->met && t->misses != UINT32_MAX)
			t->misses = 0;
		if (t->misses >= 2) {
			tdelete(t, &c->threads, cmp_serial);
			free(t);
			continue;
		}
		t->met = false;
		c->tlist[n++] = t;
	}
	c->ntlist = n;
	return 0;
}

/* The census's copy sizes since the last read, over every CPU and process, into @snap. */
static int read_hists(struct census *c, struct census_snap *snap)
{
	const struct census_hists *per_cpu = c->hist_buf;
	int ncpus = libbpf_num_possible_cpus();
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(c->obj->maps.census_hists), &zero, c->hist_buf))
		return -errno;
	for (int s = 0; s < NR_SITES; s++)
		for (int k = 0; k < MAX_SLOTS; k++) {
			uint64_t sum = 0;

			for (int cpu = 0; cpu < ncpus; cpu++)
				sum += per_cpu[cpu].hist[s][k];
			snap->hist[s][k] = grow(sum, c->hist[s][k]);
			c->hist[s][k] = sum;
		}
	return 0;
}

/* Without the boundary account, what the sites took from user memory and gave to it. */
static void sites_moved(struct census_figs *d)
{
	for (int g = 0; g < nr_boundary_groups; g++) {
		const struct boundary_group *bg = &boundary_groups[g];
		uint64_t *to = bg->dir == BOUNDARY_FROM_USER ? &d->from_user :
			       bg->dir == BOUNDARY_TO_USER ? &d->to_user : NULL;

		for (int i = 0; to && i < bg->nsites; i++)
			*to += d->site[bg->sites[i]].bytes;
	}
}

/*
 * TCP's copies where the census takes them from the sockets' counters (census_derived()): what
 * the counters moved less what was not copied, never less than at the last read (a pin is counted
 * before write_seq moves past it, so a read can find it before its bytes). Calls not counted.
 */
static void derive(const struct census *c, struct cproc *p, struct census_figs *d, struct census_figs *t)
{
	unsigned derived = census_derived(c);
	const struct tcp_flow *f = &p->tcp_now;

	for (int i = 0; i < 2; i++) {
		int site = i ? SITE_RECV_COPY : SITE_SEND_COPY;
		uint64_t moved = i ? f->received : f->sent;
		uint64_t not = i ? f->received_not_copied : f->sent_not_copied;
		uint64_t now = moved > not ? moved - not : 0;

		if (!(derived & (i ? TCP_DERIVED_RECV : TCP_DERIVED_SEND)) || now <= p->derived[i])
			continue;
		d->site[site].bytes += now - p->derived[i];
		t->site[site].bytes += now - p->derived[i];
		p->derived[i] = now;
	}
}

/* This read's raw values less the last read's: the delta, added to the totals. */
static void settle(struct census *c, struct cproc *p)
{
	struct census_figs *d = &p->out.delta, *t = &p->out.total;
	uint64_t unattr = 0;

	for (int s = 0; s < NR_SITES; s++) {
		struct site_stats now = d->site[s], *was = &p->raw[s];

		d->site[s].count = grow(now.count, was->count) + p->threads[s].count;
		d->site[s].bytes = grow(now.bytes, was->bytes) + p->threads[s].bytes;
		t->site[s].count += d->site[s].count;
		t->site[s].bytes += d->site[s].bytes;
		for (int k = 0; k < MAX_SLOTS; k++) {
			d->site[s].hist[k] = grow(now.hist[k], was->hist[k]);
			t->site[s].hist[k] += d->site[s].hist[k];
		}
		*was = now;
		d->cpu_samples[s] = grow(p->cpu_now[s], p->cpu_raw[s]);
		p->cpu_raw[s] = p->cpu_now[s];
		t->cpu_samples[s] += d->cpu_samples[s];
	}
	memset(p->threads, 0, sizeof(p->threads));
	derive(c, p, d, t);
	d->tcp_sent = grow(p->tcp_now.sent, p->tcp_raw.sent);
	d->tcp_received = grow(p->tcp_now.received, p->tcp_raw.received);
	t->tcp_sent += d->tcp_sent;
	t->tcp_received += d->tcp_received;
	p->out.tcp_shared = census_has_tcp_counters(c) && p->tcp_now.shared_sweep == c->obj->bss->tcp_sweep;
	p->tcp_raw = p->tcp_now;
	d->from_user = d->to_user = 0;
	if (!census_has_account(c)) {
		sites_moved(d);
		t->from_user += d->from_user;
		t->to_user += d->to_user;
		return;
	}
	for (int g = 0; g < nr_boundary_groups && g < 16; g++) {
		uint64_t add = grow(p->now_acct[g], p->raw_acct[g]), sites = 0;

		p->raw_acct[g] = p->now_acct[g];
		p->now_acct[g] = 0;
		p->acct_total[g] += add;
		if (boundary_groups[g].dir & BOUNDARY_FROM_USER)
			d->from_user += add;
		else
			d->to_user += add;
		for (int i = 0; i < boundary_groups[g].nsites; i++) {
			int site = boundary_groups[g].sites[i];

			if (site_method_of(c->choice, site, NULL) != METHOD_NONE)
				sites += t->site[site].bytes;
		}
		if (p->acct_total[g] > sites)
			unattr += p->acct_total[g] - sites;
	}
	t->from_user += d->from_user;
	t->to_user += d->to_user;
	/* the sites can catch up with the account later (a deferred copy): totals never go back */
	d->unattributed = unattr > p->unattributed ? unattr - p->unattributed : 0;
	p->unattributed = unattr > p->unattributed ? unattr : p->unattributed;
	t->unattributed += d->unattributed;
}

/* Removes a gone process's keys, so that what its tgid does next starts from zero. */
static void forget(struct census *c, uint32_t tgid)
{
	int sfd = bpf_map__fd(c->obj->maps.sites), afd = bpf_map__fd(c->obj->maps.account);
	struct account_key key, next, *prev = NULL;

	for (uint32_t s = 0; s < NR_SITES; s++) {
		struct site_key k = { .tgid = tgid, .site = s };

		if (!bpf_map_delete_elem(sfd, &k))
			c->deleted++;
	}
	bpf_map_delete_elem(bpf_map__fd(c->obj->maps.idents), &tgid);
	bpf_map_delete_elem(bpf_map__fd(c->obj->maps.census_cpu), &tgid);
	bpf_map_delete_elem(bpf_map__fd(c->obj->maps.tcp_flows), &tgid);
	/* a kept key evicted under the walk starts it over: bounded, what is left goes at a later read */
	uint64_t steps = 4 * (uint64_t)bpf_map__max_entries(c->obj->maps.account) + 16;

	while (steps-- && !bpf_map_get_next_key(afd, prev, &next)) {
		if (next.tgid == tgid) {
			bpf_map_delete_elem(afd, &next);
			continue;	/* the walk goes on from the last key kept */
		}
		key = next;
		prev = &key;
	}
}

static bool any(const struct census_figs *f)
{
	for (int s = 0; s < NR_SITES; s++)
		if (f->site[s].count || f->cpu_samples[s])
			return true;
	return f->from_user || f->to_user || f->tcp_sent || f->tcp_received;
}

/* Frees the processes forgotten at the last read. */
static void drop_exited(struct census *c)
{
	int n = 0;

	for (int i = 0; i < c->nlist; i++) {
		struct cproc *p = c->list[i];

		if (p->gone) {
			tdelete(p, &c->procs, cmp_tgid);
			free(p);
		} else {
			c->list[n++] = p;
		}
	}
	c->nlist = n;
}

int census_read(struct census *c, struct census_snap *snap)
{
	struct misc_stats misc = c->obj->bss->misc;
	double now = now_s();
	uint64_t keys, evicted;
	int n = 0, err;

	snap->skipped = read_skips(c, snap->skipped_what, sizeof(snap->skipped_what));
	snap->skips_uncounted = c->skips_uncounted;
	drop_exited(c);
	for (int i = 0; i < c->nlist; i++) {
		memset(&c->list[i]->out.delta, 0, sizeof(c->list[i]->out.delta));
		c->list[i]->seen = false;
	}
	if ((err = read_threads(c)) || (err = read_hists(c, snap)))
		return err;
	if ((err = read_tcp_flows(c)))
		return err;
	keys = read_sites(c);
	read_account(c);
	read_cpu_samples(c);
	if (c->capsnap < c->nlist) {
		struct census_proc *s = realloc(c->snap, c->nlist * sizeof(*s));

		if (!s)
			return -ENOMEM;
		c->snap = s;
		c->capsnap = c->nlist;
	}
	for (int i = 0; i < c->nlist; i++) {
		struct cproc *p = c->list[i];

		/* nothing of its own read: a sampler's key it had was evicted, and one made later is all new */
		if (!p->seen)
			memset(p->cpu_now, 0, sizeof(p->cpu_now));
		settle(c, p);
		name_proc(c, p);
		/*
		 * Gone at the last read, whatever it did between that read of the maps and its exit is in
		 * this one: only now are its keys removed. One that no read met (no thread of its own,
		 * no key) and that has not ended (the threads that counted have exited while others run
		 * on, or the kernel evicted its keys) is kept with its totals until it ends, so that it
		 * is shown exited then; what it counts meanwhile adds to them.
		 */
		p->out.exited_now = false;
		if (p->dead || (!p->seen && ended(p->tgid))) {
			p->out.exited_now = !p->dead;
			p->out.exited = true;
			forget(c, p->tgid);
			p->gone = true;
		} else if (p->seen && !alive(p->tgid)) {
			p->dead = p->out.exited = p->out.exited_now = true;
		}
		if (any(&p->out.total))
			c->snap[n++] = p->out;
	}
	/* every key made is held, was removed here, or was evicted by the kernel */
	evicted = misc.sites_made > keys + c->deleted ? misc.sites_made - keys - c->deleted : 0;
	if (evicted > c->evicted)
		c->evicted = evicted;
	snap->procs = c->snap;
	snap->nprocs = n;
	snap->evicted = c->evicted;
	snap->dropped = misc.sites_dropped + misc.account_dropped + misc.census_exits_dropped +
			misc.census_samples_dropped;
	/*
	 * A call followed from its entry to its return (a TCP send by kprobe, a zerocopy or splicing
	 * send at the tracepoint, a file call under --complete) keeps what its entry saw in the
	 * thread's task storage. A thread's first such call makes that storage, which the kernel
	 * refuses while another task holds the CPU's task-storage count (on PREEMPT_RT a preempted
	 * one may): the call's bytes are then lost, or counted at another site.
	 */
	snap->unfollowed = misc.send_calls_dropped + misc.io_calls_dropped;
	snap->sample_ns = c->sample_ns;
	snap->tcp_unowned_sent = c->obj->bss->tcp_unowned_sent;
	snap->tcp_unowned_received = c->obj->bss->tcp_unowned_received;
	snap->dropped += c->obj->bss->tcp_flows_dropped;
	snap->keys = keys;
	snap->max_keys = c->max_keys;
	snap->interval_s = now - c->last;
	c->last = now;
	return 0;
}

static void free_node(void *p)
{
	free(p);
}

void census_close(struct census *c)
{
	if (!c)
		return;
	ring_buffer__free(c->exits);
	/* top and export end at once; a child of theirs waits out the kernel's grace periods */
	tracer_stop_background(c->obj, NULL, 0);
	tdestroy(c->threads, free_node);
	free(c->tlist);
	free(c->hist_buf);
	tdestroy(c->procs, free_node);
	free(c->list);
	free(c->snap);
	free(c);
}

uint64_t census_payload(const struct census_figs *f)
{
	uint64_t most = f->from_user > f->to_user ? f->from_user : f->to_user;
	const int moved[] = { SITE_SPLICE_REF, SITE_PIPE_REF, SITE_KERNEL_COPY, SITE_ZC_PIN };

	/* sendfile, splice and copy_file_range move bytes that never cross to user memory */
	for (size_t i = 0; i < sizeof(moved) / sizeof(moved[0]); i++)
		if (f->site[moved[i]].bytes > most)
			most = f->site[moved[i]].bytes;
	return most;
}

uint64_t census_cpu_copied(const struct census_figs *f)
{
	uint64_t copied = 0;

	for (int s = 0; s < NR_SITES; s++)
		if (is_cpu_copy(s))
			copied += f->site[s].bytes;
	return copied;
}

double census_copies_per_byte(const struct census_figs *f)
{
	uint64_t payload = census_payload(f);

	return payload ? (double)census_cpu_copied(f) / payload : -1;
}
