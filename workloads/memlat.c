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

int main(int argc, char **argv)
{
	uint64_t min_size = 4096, max_size = 512ULL << 20, iters = 100000, reps = 15, warmup = 1;
	uint64_t line, seed = 0x9e3779b97f4a7c15ULL, nsizes = 0, mapped, huge, warm_cap;
	bool hugepages = false;
	int cpu = 0, ncaches;
	const struct mb_opt opts[] = {
		{ "min-size", MB_SIZE, &min_size, "smallest working set, a power of two (default 4K)",
		  256, 4ULL << 30 },
		{ "max-size", MB_SIZE, &max_size, "largest working set: sizes double from --min-size up "
		  "to this (default 512M)", 256, 4ULL << 30 },
		{ "iters", MB_COUNT, &iters, "loads per sample (default 100000)", 1, 1000000000 },
		{ "reps", MB_COUNT, &reps, "samples kept per size (default 15)", 1, 100000 },
		{ "warmup", MB_COUNT, &warmup, "chain passes run first, each at most 2x the largest cache (default 1)", 0, 100 },
		{ "hugepages", MB_FLAG, &hugepages, "back the buffer with 2 MiB pages (MADV_HUGEPAGE); "
		  "default 4 KiB pages (MADV_NOHUGEPAGE)" },
		{ "cpu", MB_CPU, &cpu, "pin to this CPU, -1 for none (default 0)" },
		{},
	};
	struct cache caches[MAX_CACHES];
	struct point pt[32];
	struct mb_samples s = {};
	uint32_t *order;
	char *map, *buf;
	json_object *extra;
	void **p;
	double hz;
	struct mb m;

	if (mb_parse(argc, argv, "memlat", "Times dependent loads over a random cyclic chain of "
		     "cache lines, working sets doubling; plateaus against sysfs cache sizes.", opts))
		return 2;
	if (min_size & (min_size - 1)) {
		fprintf(stderr, "memlat: invalid --min-size %" PRIu64 " (a power of two)\n", min_size);
		return 2;
	}
	if (max_size < min_size) {
		fprintf(stderr, "memlat: --max-size %" PRIu64 " is below --min-size %" PRIu64 "\n", max_size,
			min_size);
		return 2;
	}
	if (mb_pin("memlat", cpu))
		return 1;
	ncaches = read_caches(caches, &line);
	if (min_size < 2 * line) {
		fprintf(stderr, "memlat: invalid --min-size %" PRIu64 " (at least two %" PRIu64 "-byte "
			"lines)\n", min_size, line);
		return 2;
	}
	while (min_size << nsizes <= max_size)
		nsizes++;
	max_size = min_size << (nsizes - 1);	/* the largest size chased */
	iters = (iters + UNROLL - 1) / UNROLL * UNROLL;
	/*
	 * A warm-up pass puts every line of a set that fits a cache into it; past twice the largest
	 * cache, a pass of that many loads leaves the caches as full of the chain as a whole one would.
	 */
	warm_cap = ncaches ? 2 * caches[ncaches - 1].size / line : UINT64_MAX;

	/* aligned to a huge page, so that with --hugepages every part of it can be one */
	mapped = max_size + HUGE_PAGE;
	map = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "memlat: cannot map %" PRIu64 " bytes: %s\n", mapped, strerror(errno));
		return 1;
	}
	buf = (char *)(((uintptr_t)map + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
	if (madvise(buf, max_size, hugepages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE))
		fprintf(stderr, "memlat: madvise(%s): %s\n", hugepages ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE",
			strerror(errno));
	/* pre-fault every page now: no chase may take a fault (the kernel checks it) */
	memset(buf, 1, max_size);
	order = malloc(max_size / line * sizeof(*order));
	if (!order) {
		fprintf(stderr, "memlat: cannot allocate the shuffle: %s\n", strerror(errno));
		munmap(map, mapped);
		return 1;
	}
	memset(order, 1, max_size / line * sizeof(*order));
	/* before the measured phase: reading smaps is a file read the ledger would count */
	huge = huge_bytes(buf);
	hz = mb_tsc_hz();
	mb_init(&m, "memlat", cpu);
	mb_begin(&m);
	for (uint64_t i = 0; i < nsizes; i++) {
		uint64_t size = min_size << i, n = size / line;
		uint64_t warm = (warmup * (n < warm_cap ? n : warm_cap) + UNROLL - 1) / UNROLL * UNROLL;
		char name[48], claim[160], sz[24];
		long before, nivcsw;
		json_object *r;
		int step;

		human(size, sz, sizeof(sz));
		p = build_chain(buf, size, line, order, &seed);
		quiet_reserve(&s, reps);
		snprintf(name, sizeof(name), "chase over %s", sz);
		before = quiet_nivcsw();
		step = mb_step_begin(&m, name);
		p = chase(p, warm);	/* every line once: what fits a cache is in it */
		for (uint64_t r = 0; r < reps; r++) {
			uint64_t t0 = mb_now_ns();

			p = chase(p, iters);
			s.v[s.n++] = (double)(mb_now_ns() - t0) / iters;
		}
		mb_step_end(&m);
		nivcsw = quiet_nivcsw() - before;
		mb_use(p);

		snprintf(claim, sizeof(claim), "%s: no page fault (the buffer was pre-faulted)", name);
		mb_assume_exact(&m, step, claim, "page_faults", 0);
		snprintf(claim, sizeof(claim), "%s: no system call", name);
		mb_assume_exact(&m, step, claim, "syscalls", 0);
		r = mb_result(&m, name, "ns", &s, iters, 0);
		pt[i] = (struct point){ size, mb_percentile(&s, 50) };
		json_object_object_add(r, WL_KEY_SIZE, json_object_new_uint64(size));
		json_object_object_add(r, "warmup_loads", json_object_new_uint64(warm));
		if (hz > 0)
			json_object_object_add(r, "median_tsc_cycles", json_object_new_double(pt[i].ns * hz / 1e9));
		if (nivcsw > 0)
			mb_note(&m, "%s: %ld involuntary switches in the step (getrusage)", name, nivcsw);
	}
	extra = json_object_new_object();
	{
		char list[160] = "", sz[24];
		size_t off = 0;

		for (int k = 0; k < ncaches; k++) {
			human(caches[k].size, sz, sizeof(sz));
			off += snprintf(list + off, sizeof(list) - off, "%sL%d%s %s", k ? ", " : "",
					caches[k].level, !strcmp(caches[k].type, "Data") ? "d" : "", sz);
			if (off >= sizeof(list))
				break;
		}
		mb_note(&m, "caches of CPU 0 (sysfs): %s; line %" PRIu64 " B; TSC %.3f GHz", ncaches ? list : "unknown",
			line, hz / 1e9);
	}
	mb_note(&m, "plateaus: runs of two or more consecutive sizes whose medians lie within %.0f%% of "
		"each other; the sizes between them are transitions", (PLATEAU_SPREAD - 1) * 100);
	json_object_object_add(extra, "plateaus", plateaus(&m, pt, nsizes, caches, ncaches, hz));
	{
		mb_note(&m, "pages: %s; %" PRIu64 " of %" PRIu64 " MiB backed by 2 MiB pages%s", hugepages ?
			"MADV_HUGEPAGE" : "4 KiB (MADV_NOHUGEPAGE)", huge >> 20, max_size >> 20, hugepages ? "" :
			"; past the TLB's reach each load also walks the page table (--hugepages to compare)");
		json_object_object_add(extra, "hugepages", json_object_new_boolean(hugepages));
		json_object_object_add(extra, "huge_page_bytes", json_object_new_uint64(huge));
	}
	mb_note(&m, "each size: %" PRIu64 " warm-up pass(es) over the chain first (at most %" PRIu64
		" loads each), then %" PRIu64 " samples "
		"of %" PRIu64 " loads; one pointer per %" PRIu64 "-byte line, random single cycle (Sattolo)",
		warmup, warm_cap, reps, iters, line);
	mb_samples_free(&s);
	free(order);
	munmap(map, mapped);
	return mb_finish(&m, extra);
}
