/*
 * memlat: the latency of dependent loads over working sets from a few KiB to beyond the last-level
 * cache, the curve whose plateaus are L1, L2, the LLC and DRAM. Each working set is one pointer
 * per cache line, linked in a random cyclic permutation (Sattolo's algorithm: a single cycle
 * through every line) so that each load's address comes from the previous load and no prefetcher
 * can guess it. The plateaus are found from the curve itself and printed next to the cache sizes
 * sysfs reports. The buffer is touched before the measured phase, so the kernel must count no
 * page fault, and no system call, while a chain is chased.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "quiet.h"

#define HUGE_PAGE (2ULL << 20)
#define UNROLL 16		/* loads per trip of the chase loop */
#define PLATEAU_SPREAD 1.25	/* a plateau's highest median is at most 25% above its lowest */
#define MAX_CACHES 8

struct cache {
	int level;
	char type[16];
	uint64_t size;
};

static bool read_sysfs(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, n, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* The data and unified caches of CPU 0, smallest level first, as sysfs lists them. */
static int read_caches(struct cache *c, uint64_t *line)
{
	char path[96], buf[64];
	int n = 0;

	*line = 64;
	if (read_sysfs("/sys/devices/system/cpu/cpu0/cache/index0/coherency_line_size", buf, sizeof(buf)) &&
	    atoi(buf) > 0)
		*line = atoi(buf);
	for (int i = 0; i < 16 && n < MAX_CACHES; i++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
		if (!read_sysfs(path, c[n].type, sizeof(c[n].type)))
			break;
		if (!strcmp(c[n].type, "Instruction"))
			continue;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		if (!read_sysfs(path, buf, sizeof(buf)))
			continue;
		c[n].level = atoi(buf);
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (!read_sysfs(path, buf, sizeof(buf)) || wl_parse_size(buf, &c[n].size))
			continue;
		n++;
	}
	return n;
}

/* Bytes of [@start, ...) that the kernel backs with transparent huge pages (smaps AnonHugePages). */
static uint64_t huge_bytes(const void *start)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[256];
	bool in = false;
	uint64_t kb = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo == (unsigned long)start;
		else if (in && sscanf(line, "AnonHugePages: %" SCNu64 " kB", &kb) == 1)
			break;
	}
	fclose(f);
	return kb << 10;
}

static void human(uint64_t bytes, char *buf, size_t n)
{
	if (bytes >= (1ULL << 30) && !(bytes & ((1ULL << 30) - 1)))
		snprintf(buf, n, "%" PRIu64 "G", bytes >> 30);
	else if (bytes >= (1ULL << 20) && !(bytes & ((1ULL << 20) - 1)))
		snprintf(buf, n, "%" PRIu64 "M", bytes >> 20);
	else if (bytes >= 1024 && !(bytes & 1023))
		snprintf(buf, n, "%" PRIu64 "K", bytes >> 10);
	else
		snprintf(buf, n, "%" PRIu64 "B", bytes);
}

static uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Links the first @size bytes of @buf, one pointer per @line, in a random single cycle: Sattolo's
 * shuffle of the line numbers (j < i, never j == i) leaves a permutation with one cycle, and line
 * i points to line order[i]. @order has room for size / line entries.
 */
static void **build_chain(char *buf, uint64_t size, uint64_t line, uint32_t *order, uint64_t *seed)
{
	uint64_t n = size / line;

	for (uint64_t i = 0; i < n; i++)
		order[i] = i;
	for (uint64_t i = n - 1; i > 0; i--) {
		uint64_t j = xorshift64(seed) % i;
		uint32_t t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (uint64_t i = 0; i < n; i++)
		*(void **)(buf + i * line) = buf + (uint64_t)order[i] * line;
	return (void **)buf;
}

/* @loads dependent loads (a multiple of UNROLL): each address is the value the last load read. */
static __attribute__((noinline)) void **chase(void **p, uint64_t loads)
{
#define HOP p = (void **)*p;
	for (uint64_t k = 0; k < loads; k += UNROLL) {
		HOP HOP HOP HOP HOP HOP HOP HOP
		HOP HOP HOP HOP HOP HOP HOP HOP
	}
#undef HOP
	return p;
}

struct point {
	uint64_t size;
	double ns;	/* median per load */
};

/*
 * The plateaus of the curve: runs of two or more consecutive sizes whose latencies all lie within
 * PLATEAU_SPREAD of each other (highest / lowest), each compared with the smallest cache that
 * sysfs says holds its largest working set (or none: DRAM). Sizes between runs are transitions.
 */
static json_object *plateaus(struct mb *m, const struct point *pt, int n, const struct cache *c,
			     int ncaches, double hz)
{
	json_object *all = json_object_new_array();

	for (int i = 0, j; i < n; i = j + 1) {
		double lo = pt[i].ns, hi = pt[i].ns, sum = pt[i].ns, ns;
		char first[24], last[24], where[48];
		json_object *o;
		int k;

		for (j = i; j + 1 < n; j++) {
			double x = pt[j + 1].ns;

			if ((x > hi ? x : hi) > (x < lo ? x : lo) * PLATEAU_SPREAD)
				break;
			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
			sum += x;
		}
		if (j == i)
			continue;
		ns = sum / (j - i + 1);
		for (k = 0; k < ncaches && c[k].size < pt[j].size; k++)
			;
		human(pt[i].size, first, sizeof(first));
		human(pt[j].size, last, sizeof(last));
		if (k < ncaches) {
			char sz[24];

			human(c[k].size, sz, sizeof(sz));
			snprintf(where, sizeof(where), "within L%d%s (%s)", c[k].level,
				 !strcmp(c[k].type, "Data") ? "d" : "", sz);
		} else {
			snprintf(where, sizeof(where), "beyond the caches: DRAM");
		}
		mb_note(m, "plateau %s..%s: %.2f ns = %.1f TSC cycles per load; by sysfs size %s", first, last, ns,
			ns * hz / 1e9, where);
		o = json_object_new_object();
		json_object_object_add(o, "first_size", json_object_new_uint64(pt[i].size));
		json_object_object_add(o, "last_size", json_object_new_uint64(pt[j].size));
		json_object_object_add(o, "ns", json_object_new_double(ns));
		json_object_object_add(o, "sysfs", json_object_new_string(where));
		json_object_array_add(all, o);
	}
	return all;
}

static struct memlat_cfg {
	uint64_t min_size, max_size, iters, reps, warmup;
	bool hugepages;
	int cpu;
} cfg = {
	.min_size = 4096, .max_size = 512ULL << 20, .iters = 100000, .reps = 15, .warmup = 1,
};

static const struct mb_opt opts[] = {
	{ "min-size", MB_SIZE, &cfg.min_size, 256, 4ULL << 30 },
	{ "max-size", MB_SIZE, &cfg.max_size, 256, 4ULL << 30 },
	{ "iters", MB_COUNT, &cfg.iters, 1, 1000000000 },
	{ "reps", MB_COUNT, &cfg.reps, 1, 100000 },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, 100 },
	{ "hugepages", MB_FLAG, &cfg.hugepages },
	{ "cpu", MB_CPU, &cfg.cpu },
	{},
};

/* The caches, the sizes to chase, and the buffer the chains are built in. */
struct arena {
	struct cache caches[MAX_CACHES];
	int ncaches;
	uint64_t line, nsizes;
	uint64_t warm_cap;	/* warm-up loads per pass, at most */
	char *map, *buf;	/* the mapping, and its part aligned to a huge page */
	uint64_t mapped;
	uint64_t huge;		/* bytes of it backed by huge pages */
	uint32_t *order;	/* room for the shuffle of the largest size's lines */
	double hz;
};

/* The options and their checks; 0, or -1 having said why. */
static int parse_options(int argc, char **argv)
{
	if (mb_parse(argc, argv, "memlat", "Times dependent loads over a random cyclic chain of "
		     "cache lines, working sets doubling; plateaus against sysfs cache sizes.", opts))
		return -1;
	if (cfg.min_size & (cfg.min_size - 1)) {
		fprintf(stderr, "memlat: invalid --min-size %" PRIu64 " (a power of two)\n", cfg.min_size);
		return -1;
	}
	if (cfg.max_size < cfg.min_size) {
		fprintf(stderr, "memlat: --max-size %" PRIu64 " is below --min-size %" PRIu64 "\n",
			cfg.max_size, cfg.min_size);
		return -1;
	}
	return 0;
}

/* The caches, and from their line the sizes chased and the warm-up's length; -1 having said why. */
static int plan_sizes(struct arena *a)
{
	a->ncaches = read_caches(a->caches, &a->line);
	if (cfg.min_size < 2 * a->line) {
		fprintf(stderr, "memlat: invalid --min-size %" PRIu64 " (at least two %" PRIu64 "-byte "
			"lines)\n", cfg.min_size, a->line);
		return -1;
	}
	while (cfg.min_size << a->nsizes <= cfg.max_size)
		a->nsizes++;
	cfg.max_size = cfg.min_size << (a->nsizes - 1);	/* the largest size chased */
	cfg.iters = (cfg.iters + UNROLL - 1) / UNROLL * UNROLL;
	/*
	 * A warm-up pass puts every line of a set that fits a cache into it; past twice the largest
	 * cache, a pass of that many loads leaves the caches as full of the chain as a whole one would.
	 */
	a->warm_cap = a->ncaches ? 2 * a->caches[a->ncaches - 1].size / a->line : UINT64_MAX;
	return 0;
}

/* The buffer, pre-faulted, and the shuffle's room: 0, or -1 having said why. */
static int map_arena(struct arena *a)
{
	/* aligned to a huge page, so that with --hugepages every part of it can be one */
	a->mapped = cfg.max_size + HUGE_PAGE;
	a->map = mmap(NULL, a->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->map == MAP_FAILED) {
		fprintf(stderr, "memlat: cannot map %" PRIu64 " bytes: %s\n", a->mapped, strerror(errno));
		return -1;
	}
	a->buf = (char *)(((uintptr_t)a->map + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (madvise(a->buf, cfg.max_size, cfg.hugepages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		fprintf(stderr, "memlat: madvise(%s): %s\n", cfg.hugepages ? "MADV_HUGEPAGE" :
			"MADV_NOHUGEPAGE", strerror(errno));
	/* pre-fault every page now: no chase may take a fault (the kernel checks it) */
	memset(a->buf, 1, cfg.max_size);
	a->order = malloc(cfg.max_size / a->line * sizeof(*a->order));
	if (!a->order) {
		fprintf(stderr, "memlat: cannot allocate the shuffle: %s\n", strerror(errno));
		munmap(a->map, a->mapped);
		return -1;
	}
	memset(a->order, 1, cfg.max_size / a->line * sizeof(*a->order));
	/* before the measured phase: reading smaps is a file read the ledger would count */
	a->huge = huge_bytes(a->buf);
	return 0;
}

/* The chase over @size: a fresh chain, warmed, then --reps samples in one step; its claims. */
static void time_chase(struct mb *m, struct arena *a, uint64_t size, uint64_t *seed,
		       struct mb_samples *s, struct point *pt)
{
	uint64_t n = size / a->line;
	uint64_t warm = (cfg.warmup * (n < a->warm_cap ? n : a->warm_cap) + UNROLL - 1) / UNROLL * UNROLL;
	char name[48], claim[160], sz[24];
	long before, nivcsw;
	json_object *r;
	void **p;
	int step;

	human(size, sz, sizeof(sz));
	p = build_chain(a->buf, size, a->line, a->order, seed);
	quiet_reserve(s, cfg.reps);
	snprintf(name, sizeof(name), "chase over %s", sz);
	before = quiet_nivcsw();
	step = mb_step_begin(m, name);
	p = chase(p, warm);	/* every line once: what fits a cache is in it */
	for (uint64_t r = 0; r < cfg.reps; r++) {
		uint64_t t0 = mb_now_ns();

		p = chase(p, cfg.iters);
		s->v[s->n++] = (double)(mb_now_ns() - t0) / cfg.iters;
	}
	mb_step_end(m);
	nivcsw = quiet_nivcsw() - before;
	mb_use(p);

	snprintf(claim, sizeof(claim), "%s: no page fault (the buffer was pre-faulted)", name);
	mb_assume_exact(m, step, claim, "page_faults", 0);
	snprintf(claim, sizeof(claim), "%s: no system call", name);
	mb_assume_exact(m, step, claim, "syscalls", 0);
	r = mb_result(m, name, "ns", s, cfg.iters, 0);
	*pt = (struct point){ size, mb_percentile(s, 50) };
	json_object_object_add(r, WL_KEY_SIZE, json_object_new_uint64(size));
	json_object_object_add(r, "warmup_loads", json_object_new_uint64(warm));
	if (a->hz > 0)
		json_object_object_add(r, "median_tsc_cycles", json_object_new_double(pt->ns * a->hz / 1e9));
	if (nivcsw > 0)
		mb_note(m, "%s: %ld involuntary switches in the step (getrusage)", name, nivcsw);
}

/* The notes (caches, plateaus, pages, the method) and the report's extras. */
static json_object *report_extras(struct mb *m, const struct arena *a, const struct point *pt)
{
	json_object *extra = json_object_new_object();
	char list[160] = "", sz[24];
	size_t off = 0;

	for (int k = 0; k < a->ncaches; k++) {
		human(a->caches[k].size, sz, sizeof(sz));
		off += snprintf(list + off, sizeof(list) - off, "%sL%d%s %s", k ? ", " : "",
				a->caches[k].level, !strcmp(a->caches[k].type, "Data") ? "d" : "", sz);
		if (off >= sizeof(list))
			break;
	}
	mb_note(m, "caches of CPU 0 (sysfs): %s; line %" PRIu64 " B; TSC %.3f GHz",
		a->ncaches ? list : "unknown", a->line, a->hz / 1e9);
	mb_note(m, "plateaus: runs of two or more consecutive sizes whose medians lie within %.0f%% of "
		"each other; the sizes between them are transitions", (PLATEAU_SPREAD - 1) * 100);
	json_object_object_add(extra, "plateaus", plateaus(m, pt, a->nsizes, a->caches, a->ncaches, a->hz));
	mb_note(m, "pages: %s; %" PRIu64 " of %" PRIu64 " MiB backed by 2 MiB pages%s", cfg.hugepages ?
		"MADV_HUGEPAGE" : "4 KiB (MADV_NOHUGEPAGE)", a->huge >> 20, cfg.max_size >> 20,
		cfg.hugepages ? "" :
		"; past the TLB's reach each load also walks the page table (--hugepages to compare)");
	json_object_object_add(extra, "hugepages", json_object_new_boolean(cfg.hugepages));
	json_object_object_add(extra, "huge_page_bytes", json_object_new_uint64(a->huge));
	mb_note(m, "each size: %" PRIu64 " warm-up pass(es) over the chain first (at most %" PRIu64
		" loads each), then %" PRIu64 " samples "
		"of %" PRIu64 " loads; one pointer per %" PRIu64 "-byte line, random single cycle (Sattolo)",
		cfg.warmup, a->warm_cap, cfg.reps, cfg.iters, a->line);
	return extra;
}

int main(int argc, char **argv)
{
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	struct arena a = {};
	struct point pt[32];
	struct mb_samples s = {};
	json_object *extra;
	struct mb m;

	if (parse_options(argc, argv))
		return 2;
	if (mb_pin("memlat", cfg.cpu))
		return 1;
	if (plan_sizes(&a))
		return 2;
	if (map_arena(&a))
		return 1;
	a.hz = mb_tsc_hz();
	mb_init(&m, "memlat", cfg.cpu);
	mb_begin(&m);
	for (uint64_t i = 0; i < a.nsizes; i++)
		time_chase(&m, &a, cfg.min_size << i, &seed, &s, &pt[i]);
	extra = report_extras(&m, &a, pt);
	mb_samples_free(&s);
	free(a.order);
	munmap(a.map, a.mapped);
	return mb_finish(&m, extra);
}
