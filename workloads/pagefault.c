/*
 * pagefault: the service time of a page fault that must read its page from the disk, and of one
 * that finds its page in the page cache. A scratch file (unlinked at once) is written, synced and
 * dropped from the page cache (POSIX_FADV_DONTNEED); mapped shared and read-only, one byte per page
 * is touched and each touch timed.
 *
 * The classic method assumes one fault per touched page, each reading its page in. On Linux that
 * is false unless made true: readahead reads the neighbours of a faulting page in, and fault-around
 * (filemap_map_pages) maps up to 16 neighbours already in the page cache without a fault of their
 * own. MADV_RANDOM turns readahead off, so each fault reads only its own page and finds no cached
 * neighbour to map: then faults = pages touched, and pages read in = pages touched, which the
 * kernel checks. --advice normal shows the classic assumption failing.
 *
 * The warm step maps the file again once its pages are all cached: every touch is a minor fault or
 * none, as fault-around maps each fault's 16-page window (fault_around_bytes) at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>
#include "mb.h"
#include "quiet.h"

/* The kernel's fault-around window: debugfs says, if mounted; else its default, 64 KiB. */
static uint64_t fault_around_bytes(void)
{
	FILE *f = fopen("/sys/kernel/debug/fault_around_bytes", "r");
	unsigned long long v = 0;

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v ? v : 65536;
}

/* Writes @size bytes of a pattern (no holes: every page must come from the disk) and syncs. */
static int fill_file(int fd, uint64_t size)
{
	static char buf[1 << 20];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 131 + 7);
	for (uint64_t off = 0; off < size;) {
		size_t len = size - off < sizeof(buf) ? size - off : sizeof(buf);
		ssize_t n = pwrite(fd, buf, len, off);

		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += n;
	}
	return fsync(fd) ? -errno : 0;
}

/* Pages of the mapping now in the page cache, by mincore(). */
static uint64_t resident_pages(void *map, uint64_t pages, long page)
{
	unsigned char *vec = malloc(pages);
	uint64_t n = 0;

	if (!vec || mincore(map, pages * page, vec)) {
		free(vec);
		return UINT64_MAX;
	}
	for (uint64_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	free(vec);
	return n;
}

/* Maps the file anew with @advice; exits on failure (the file is already unlinked). */
static char *map_file(int fd, uint64_t size, int advice)
{
	char *map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);

	if (map == MAP_FAILED) {
		perror("pagefault: mmap");
		exit(1);
	}
	if (madvise(map, size, advice)) {
		perror("pagefault: madvise");
		exit(1);
	}
	return map;
}

/*
 * Touches one byte per page in order, timing each touch: one sample per page. Not instrumented by
 * ASan: its shadow of the mapping would take faults of its own, and the claim is one per page.
 */
__attribute__((no_sanitize("address")))
static void touch_pages(const char *map, uint64_t pages, long page, struct mb_samples *s)
{
	for (uint64_t i = 0; i < pages; i++) {
		uint64_t t0 = mb_now_ns();

		mb_use(*(volatile const char *)(map + i * page));
		mb_samples_add(s, (double)(mb_now_ns() - t0));
	}
}

/* One step of touches into an emptied @s (already reserved); *@total_ns = the time of them all. */
static int touch_step(struct mb *m, const char *name, const char *map, uint64_t pages, long page,
		      struct mb_samples *s, double *total_ns)
{
	int step;

	s->n = 0;
	step = mb_step_begin(m, name);
	touch_pages(map, pages, page, s);
	mb_step_end(m);
	*total_ns = 0;
	for (size_t i = 0; i < s->n; i++)
		*total_ns += s->v[i];
	return step;
}

static struct pagefault_cfg {
	uint64_t size;
	const char *dir, *advice_name;
	int cpu;
} cfg = {
	.size = 64 << 20, .dir = "/var/tmp", .advice_name = "random",
};

static const struct mb_opt opts[] = {
	{ "file-size", MB_SIZE, &cfg.size, 4096, 4ULL << 30 },
	{ "dir", MB_STRING, &cfg.dir },
	{ "advice", MB_CHOICE, &cfg.advice_name },
	{ "cpu", MB_CPU, &cfg.cpu },
	{},
};

/* The scratch file and what the steps share of it. */
struct scratch {
	int fd;
	int advice;		/* MADV_RANDOM or MADV_NORMAL, from --advice */
	long page;
	uint64_t pages;
	struct mb_samples s;	/* one sample per touched page, reserved before the measured phase */
};

/* The scratch file on a disk, unlinked, written and dropped from the page cache; -1 having said why. */
static int make_file(struct scratch *sc)
{
	char path[4096];
	struct statfs fs;
	int err;

	if (statfs(cfg.dir, &fs)) {
		fprintf(stderr, "pagefault: %s: %s\n", cfg.dir, strerror(errno));
		return -1;
	}
	if (fs.f_type == TMPFS_MAGIC || fs.f_type == RAMFS_MAGIC) {
		fprintf(stderr, "pagefault: %s is in memory (tmpfs): no disk to fault pages from; try --dir "
			"/var/tmp\n", cfg.dir);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/zctrace-pagefault.XXXXXX", cfg.dir);
	sc->fd = mkstemp(path);
	if (sc->fd < 0) {
		fprintf(stderr, "pagefault: cannot create a file in %s: %s\n", cfg.dir, strerror(errno));
		return -1;
	}
	unlink(path);	/* nothing to clean up, however the run ends */
	err = fill_file(sc->fd, cfg.size);
	if (!err)
		err = -posix_fadvise(sc->fd, 0, cfg.size, POSIX_FADV_DONTNEED);
	if (err) {
		fprintf(stderr, "pagefault: writing %" PRIu64 " bytes in %s: %s\n", cfg.size, cfg.dir,
			strerror(-err));
		return -1;
	}
	return 0;
}

/* The file mapped with none of its pages cached; NULL having said why. *@resident: cached before. */
static char *map_cold(struct scratch *sc, uint64_t *resident)
{
	char *map = map_file(sc->fd, cfg.size, sc->advice);

	/* a page still cached would be mapped by fault-around, with no fault and no read */
	for (int tries = 0; (*resident = resident_pages(map, sc->pages, sc->page)) && tries < 5; tries++) {
		fdatasync(sc->fd);
		posix_fadvise(sc->fd, 0, cfg.size, POSIX_FADV_DONTNEED);
	}
	if (*resident) {
		fprintf(stderr, "pagefault: %" PRIu64 " of the file's pages stay cached after dropping them\n",
			*resident);
		return NULL;
	}
	return map;
}

/* The cold step: each touch faults and reads its page from the disk. */
static void cold_step(struct mb *m, struct scratch *sc, char *map, uint64_t resident)
{
	char claim[200];
	double total_ns = 0;
	int step;

	step = touch_step(m, "cold: touch a page out of the page cache", map, sc->pages, sc->page, &sc->s,
			  &total_ns);
	mb_result(m, "cold fault (page read from the disk)", "ns", &sc->s, 1, 0);
	snprintf(claim, sizeof(claim), "cold, advice %s: one fault per touched page (%" PRIu64 " pages)",
		 cfg.advice_name, sc->pages);
	mb_assume_exact(m, step, claim, "page_faults", sc->pages);
	snprintf(claim, sizeof(claim), "cold, advice %s: the faults read each touched page in, once",
		 cfg.advice_name);
	mb_assume_exact(m, step, claim, "page_cache_pages", sc->pages);
	mb_assume_exact(m, step, "cold: the touches made no syscall (the faults alone did the reads)",
			"syscalls", 0);
	mb_note(m, "cold: %" PRIu64 " of %" PRIu64 " pages were cached before (mincore); %.1f us per "
		"touched page on average", resident, sc->pages, total_ns / sc->pages / 1e3);
	munmap(map, cfg.size);
}

/* The warm step: the same pages, now all in the page cache, in a new mapping (no PTE yet). */
static void warm_step(struct mb *m, struct scratch *sc, uint64_t around)
{
	char *map = map_file(sc->fd, cfg.size, sc->advice);
	uint64_t resident = resident_pages(map, sc->pages, sc->page), windows;
	char claim[200];
	double total_ns = 0;
	int step;

	/* fault-around maps the window around a fault, aligned in the address space */
	windows = (((uintptr_t)map + cfg.size - 1) / (around * sc->page)) -
		  ((uintptr_t)map / (around * sc->page)) + 1;
	step = touch_step(m, "warm: touch a page in the page cache", map, sc->pages, sc->page, &sc->s,
			  &total_ns);
	mb_result(m, "warm touch (page cached, new mapping)", "ns", &sc->s, 1, 0);
	snprintf(claim, sizeof(claim), "warm: one fault per %" PRIu64 "-page fault-around window (%"
		 PRIu64 " windows), not one per page", around, windows);
	mb_assume_exact(m, step, claim, "page_faults", windows);
	mb_assume_exact(m, step, "warm: no page was read in (all were cached)", "page_cache_pages", 0);
	mb_note(m, "warm: %" PRIu64 " of %" PRIu64 " pages cached before (mincore); %.2f us per fault "
		"(time of all touches / %" PRIu64 " faults)", resident, sc->pages, total_ns / windows / 1e3,
		windows);
	munmap(map, cfg.size);
}

int main(int argc, char **argv)
{
	struct scratch sc = { .fd = -1, .page = sysconf(_SC_PAGESIZE) };
	uint64_t resident, around;
	struct mb m;
	char *map;

	if (mb_parse(argc, argv, "pagefault", "Times page faults on a file mapping: cold (each reads its "
		     "page from the disk) and warm (pages cached); the kernel counts faults and pages read.",
		     opts))
		return 2;
	sc.advice = !strcmp(cfg.advice_name, "random") ? MADV_RANDOM : MADV_NORMAL;
	sc.pages = cfg.size / sc.page;
	cfg.size = sc.pages * sc.page;
	if (mb_pin("pagefault", cfg.cpu))
		return 1;
	if (make_file(&sc))
		return 1;
	/* every touch a sample: no allocation (no syscall, no fault of ours) in the timed loops */
	quiet_reserve(&sc.s, sc.pages);
	map = map_cold(&sc, &resident);
	if (!map)
		return 1;
	around = fault_around_bytes() / sc.page;
	if (around < 1)
		around = 1;
	mb_init(&m, "pagefault", cfg.cpu);
	mb_begin(&m);
	cold_step(&m, &sc, map, resident);
	warm_step(&m, &sc, around);
	close(sc.fd);
	mb_samples_free(&sc.s);
	return mb_finish(&m, NULL);
}
