/*
 * The machine-wide census (census.h). The kernel keeps raw per-(process, site) counters and a
 * per-(call, file type, process) boundary account in LRU maps; this file keeps, per process, the
 * raw values it last read and the totals it has added up from their differences. A key the kernel
 * evicted and made again reads lower than before: its new value is all new. A process that is gone
 * gets its last delta, then its keys are removed so that its tgid can serve another.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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
#include "boundary.h"
#include "census.h"
#include "clock.h"
#include "kfigures.h"
#include "tracer.h"
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
	struct census_proc out;
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

int census_open(struct census **cp, const struct census_opts *o)
{
	struct census *c = calloc(1, sizeof(*c));
	struct tracer_opts to = {
		.cap = o->cap,
		.machine_wide = true,
		.max_keys = o->max_keys ? o->max_keys : DEFAULT_MAX_KEYS,
		/* what the census reports needs none of these, and they fire for every process */
		.skip = 1ULL << PROBE_PAGE_CACHE | 1ULL << PROBE_ZC_PATH | 1ULL << PROBE_SCHED |
			1ULL << PROBE_SYSCALLS | 1ULL << PROBE_PAGE_FAULTS | 1ULL << SITE_USER_COPY,
		.skip_why = "the machine-wide census does not use it",
	};
	int err;

	*cp = NULL;
	if (!c)
		return -ENOMEM;
	c->max_keys = to.max_keys;
	find_cgroup_root();
	if ((err = tracer_start(&c->obj, c->choice, &to))) {
		free(c);
		return err;
	}
	c->last = now_s();
	*cp = c;
	return 0;
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
 * Its name and cgroup now, from /proc: a process can exec, rename itself or move, and its figures
 * go to what it is at each read. Once gone, it is what the kernel noted as it exited.
 */
static void name_proc(struct census *c, struct cproc *p)
{
	struct proc_ident id;
	char line[CENSUS_CGROUP_LEN + 8];

	if (proc_line(p->tgid, "comm", "", line, sizeof(line))) {
		snprintf(p->out.comm, sizeof(p->out.comm), "%.15s", line);
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

static uint64_t grow(uint64_t now, uint64_t before)
{
	/* lower than before: the key was evicted and made again, so all of it is new */
	return now >= before ? now - before : now;
}

/* This read's raw values less the last read's: the delta, added to the totals. */
static void settle(struct census *c, struct cproc *p)
{
	struct census_figs *d = &p->out.delta, *t = &p->out.total;
	uint64_t unattr = 0;

	for (int s = 0; s < NR_SITES; s++) {
		struct site_stats now = d->site[s], *was = &p->raw[s];

		d->site[s].count = grow(now.count, was->count);
		d->site[s].bytes = grow(now.bytes, was->bytes);
		t->site[s].count += d->site[s].count;
		t->site[s].bytes += d->site[s].bytes;
		for (int k = 0; k < MAX_SLOTS; k++) {
			d->site[s].hist[k] = grow(now.hist[k], was->hist[k]);
			t->site[s].hist[k] += d->site[s].hist[k];
		}
		*was = now;
	}
	d->from_user = d->to_user = 0;
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
		if (f->site[s].count)
			return true;
	return f->from_user || f->to_user;
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
	int n = 0;

	drop_exited(c);
	for (int i = 0; i < c->nlist; i++) {
		memset(&c->list[i]->out.delta, 0, sizeof(c->list[i]->out.delta));
		c->list[i]->seen = false;
	}
	keys = read_sites(c);
	read_account(c);
	if (c->capsnap < c->nlist) {
		struct census_proc *s = realloc(c->snap, c->nlist * sizeof(*s));

		if (!s)
			return -ENOMEM;
		c->snap = s;
		c->capsnap = c->nlist;
	}
	for (int i = 0; i < c->nlist; i++) {
		struct cproc *p = c->list[i];

		settle(c, p);
		name_proc(c, p);
		/*
		 * Gone at the last read, whatever it did between that read of the maps and its exit is in
		 * this one: only now are its keys removed.
		 */
		p->out.exited_now = false;
		if (!p->seen || p->dead) {
			p->out.exited_now = !p->dead && !alive(p->tgid);
			p->out.exited = p->dead || p->out.exited_now;
			forget(c, p->tgid);
			p->gone = true;
		} else if (!alive(p->tgid)) {
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
	snap->dropped = misc.sites_dropped + misc.account_dropped;
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
	tracer_stop(c->obj);
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
