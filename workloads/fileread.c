/*
 * fileread: sequential and random reads of a file that is not in the page cache (cold: its pages
 * dropped before every sample) or that is (warm), or read with O_DIRECT. The classic suite drops
 * the pages with posix_fadvise(DONTNEED) and hopes the reads missed the cache; here the kernel
 * counts the pages each step brought into the page cache, and the claim is checked against it.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "filewl.h"
#include "mb.h"

struct reader {
	struct wl_file *f;
	int fd;			/* the file, or an O_DIRECT description of it */
	char *buf;
	uint64_t block;		/* bytes per read */
	uint64_t *order;	/* random: the block numbers, shuffled; the first @reads are read */
	uint64_t nblocks, reads;
	uint64_t state;		/* xorshift64 */
	uint64_t calls;		/* read/pread calls made */
	uint64_t cached_bytes;	/* bytes read through the page cache (not O_DIRECT) */
	bool direct;
};

static uint64_t next_random(struct reader *r)
{
	r->state ^= r->state << 13;
	r->state ^= r->state >> 7;
	r->state ^= r->state << 17;
	return r->state;
}

/* Reads @n bytes at @off (pread) or at the file offset (read); 0 or -errno. */
static int read_block(struct reader *r, uint64_t off, uint64_t n, bool positional)
{
	uint64_t done = 0;

	while (done < n) {
		ssize_t got = positional ? pread(r->fd, r->buf + done, n - done, off + done)
					 : read(r->fd, r->buf + done, n - done);

		r->calls++;
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -errno : -EIO;
		done += got;
	}
	mb_use(r->buf[0]);
	if (!r->direct)
		r->cached_bytes += n;
	return 0;
}

/* The whole file, front to back, --block bytes per read(). */
static int read_seq(struct reader *r)
{
	if (lseek(r->fd, 0, SEEK_SET))
		return -errno;
	for (uint64_t off = 0; off < r->f->size; off += r->block) {
		uint64_t n = r->f->size - off < r->block ? r->f->size - off : r->block;
		int err = read_block(r, off, n, false);

		if (err)
			return err;
	}
	return 0;
}

/* --reads distinct blocks in random order, one pread() each. */
static int read_random(struct reader *r)
{
	/* a fresh partial Fisher-Yates shuffle: the first @reads entries are distinct blocks */
	for (uint64_t i = 0; i < r->reads; i++) {
		uint64_t j = i + next_random(r) % (r->nblocks - i), t = r->order[i];

		r->order[i] = r->order[j];
		r->order[j] = t;
	}
	for (uint64_t i = 0; i < r->reads; i++) {
		int err = read_block(r, r->order[i] * r->block, r->block, true);

		if (err)
			return err;
	}
	return 0;
}

static struct fileread_cfg {
	struct wl_opts wo;
	uint64_t block, reads, reps, warmup;
	const char *pattern, *cache, *claim;
	bool direct;
	int cpu;
	bool cold, claim_cold;	/* --cache cold; the claim (after "auto") is cold */
} cfg = {
	.wo = { .file_size = 64 << 20 },
	.block = 4096, .reads = 2048, .reps = 5, .warmup = 1,
	.pattern = "both", .cache = "cold", .claim = "auto",
};

static const struct mb_opt opts[] = {
	{ "pattern", MB_CHOICE, &cfg.pattern },
	{ "block", MB_SIZE, &cfg.block, 4096, 64 << 20 },
	{ "file-size", MB_SIZE, &cfg.wo.file_size, 4096, 1ULL << 40 },
	{ "reads", MB_COUNT, &cfg.reads, 1, 1ULL << 32 },
	{ "reps", MB_COUNT, &cfg.reps, 1, 100000 },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, 1000 },
	{ "cache", MB_CHOICE, &cfg.cache },
	{ "direct", MB_FLAG, &cfg.direct },
	{ "claim", MB_CHOICE, &cfg.claim },
	{ "cpu", MB_CPU, &cfg.cpu },
	{ "dir", MB_STRING, &cfg.wo.dir },
	{},
};

/* The options and their checks; 0, or -1 having said why. */
static int parse_options(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	uint64_t page = sysconf(_SC_PAGESIZE);

	cfg.wo.dir = tmp && *tmp ? tmp : "/var/tmp";
	if (mb_parse(argc, argv, "fileread", "Times sequential and random reads of a cold or warm "
		     "file; the kernel counts the pages each step read into the page cache.", opts))
		return -1;
	if (cfg.block % page) {
		fprintf(stderr, "fileread: invalid --block %" PRIu64 " (a multiple of the page size, %"
			PRIu64 ")\n", cfg.block, page);
		return -1;
	}
	if (cfg.block > cfg.wo.file_size) {
		fprintf(stderr, "fileread: invalid --block %" PRIu64 " (at most --file-size)\n", cfg.block);
		return -1;
	}
	cfg.cold = !strcmp(cfg.cache, "cold");
	cfg.wo.cache = cfg.cold ? WL_CACHE_COLD : WL_CACHE_WARM;
	if (!strcmp(cfg.claim, "auto"))
		cfg.claim = cfg.direct ? "direct" : cfg.cache;
	cfg.claim_cold = !strcmp(cfg.claim, "cold");
	return 0;
}

/* The reader's buffer and block order, the file in its cache state, and its O_DIRECT twin. */
static int setup_reader(struct reader *r, struct wl_file *f)
{
	uint64_t page = sysconf(_SC_PAGESIZE);
	int err;

	r->block = cfg.block;
	r->nblocks = cfg.wo.file_size / cfg.block;
	r->reads = cfg.reads < r->nblocks ? cfg.reads : r->nblocks;
	r->direct = cfg.direct;
	r->state = 0x2545f4914f6cdd1dULL ^ (uint64_t)getpid();
	r->order = malloc(r->nblocks * sizeof(*r->order));
	/* O_DIRECT wants an aligned buffer; a page is enough for every device here */
	if (!r->order || posix_memalign((void **)&r->buf, page, cfg.block)) {
		fprintf(stderr, "fileread: out of memory\n");
		return -1;
	}
	for (uint64_t i = 0; i < r->nblocks; i++)
		r->order[i] = i;
	if ((err = wl_file_create(&cfg.wo, "read", true, f))) {
		fprintf(stderr, "fileread: cannot make the file in %s: %s\n", cfg.wo.dir, strerror(-err));
		return -1;
	}
	r->f = f;
	r->fd = f->fd;
	if (cfg.direct) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
		r->fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (r->fd < 0) {
			fprintf(stderr, "fileread: O_DIRECT on %s: %s\n", wl_fs_name(f->fd), strerror(errno));
			return -1;
		}
	}
	if ((err = wl_file_set_cache(f, cfg.wo.cache))) {
		fprintf(stderr, "fileread: cannot set the cache state: %s\n", strerror(-err));
		return -1;
	}
	return 0;
}

/* The samples of one pattern, inside step @name: MB/s and us per read of the kept ones. */
static int sample_pattern(struct mb *m, struct reader *r, bool random, uint64_t blocks, const char *name,
			  struct mb_samples *mbs, struct mb_samples *us)
{
	int step = mb_step_begin(m, name);

	for (uint64_t s = 0; s < cfg.warmup + cfg.reps; s++) {
		uint64_t t0, t1;
		int64_t left;
		int err;

		/* every sample starts cold: drop the pages, untimed, and see that they went */
		if (cfg.cold && (left = wl_file_drop(r->f))) {
			fprintf(stderr, "fileread: %s\n", left < 0 ? strerror(-left) :
				"the file's pages would not leave the page cache");
			mb_step_end(m);
			return -1;
		}
		t0 = mb_now_ns();
		err = random ? read_random(r) : read_seq(r);
		t1 = mb_now_ns();
		if (err) {
			fprintf(stderr, "fileread: read: %s\n", strerror(-err));
			mb_step_end(m);
			return -1;
		}
		if (s >= cfg.warmup) {
			mb_samples_add(mbs, (double)blocks * cfg.block / ((t1 - t0) / 1e9) / 1e6);
			mb_samples_add(us, (t1 - t0) / 1e3 / blocks);
		}
	}
	mb_step_end(m);
	return step;
}

/* What the kernel must have counted in @step: the pages read in per --claim, one syscall a read. */
static void claim_pattern(struct mb *m, int step, const struct reader *r, bool random, uint64_t pages,
			  uint64_t calls)
{
	uint64_t samples = cfg.warmup + cfg.reps;
	char claim_text[256], measure[32];

	if (cfg.claim_cold && random)
		snprintf(claim_text, sizeof(claim_text), "each sample's %" PRIu64 " random read%s "
			 "missed the page cache and read in their own %" PRIu64 " page%s, no more "
			 "(readahead off: POSIX_FADV_RANDOM)", r->reads, r->reads == 1 ? "" : "s", pages,
			 pages == 1 ? "" : "s");
	else if (cfg.claim_cold)
		snprintf(claim_text, sizeof(claim_text), "each sample missed the page cache and "
			 "read in all %" PRIu64 " page%s of the file, no more (readahead stops at the "
			 "end of the file)", pages, pages == 1 ? "" : "s");
	else if (!strcmp(cfg.claim, "warm"))
		snprintf(claim_text, sizeof(claim_text), "every read was served from the page "
			 "cache: no page read in");
	else
		snprintf(claim_text, sizeof(claim_text), "O_DIRECT bypassed the page cache: no page "
			 "added to it");
	mb_assume(m, step, claim_text, "page_cache_pages", cfg.claim_cold ? pages * samples : 0,
		  cfg.claim_cold ? pages * samples : 0, cfg.claim_cold ? pages * samples : 0);
	snprintf(claim_text, sizeof(claim_text), "each %s entered the kernel once",
		 random ? "pread() of a block" : "read() of a block");
	snprintf(measure, sizeof(measure), "syscall:%s", random ? "pread64" : "read");
	mb_assume_exact(m, step, claim_text, measure, calls);
}

/* One pattern, sequential or random: its step, its two results and its claims. */
static int time_pattern(struct mb *m, struct reader *r, bool random)
{
	struct mb_samples mbs = {}, us = {};
	uint64_t blocks = random ? r->reads : (r->f->size + cfg.block - 1) / cfg.block;
	/* pages one sample reads: the blocks' own; the last sequential block may be short */
	uint64_t pages = random ? r->reads * (cfg.block / sysconf(_SC_PAGESIZE)) : r->f->pages;
	uint64_t calls0 = r->calls;
	char name[128];
	int step, err;

	/* readahead is the point of sequential reads and would blur random ones: off for them */
	if ((err = posix_fadvise(r->fd, 0, 0, random ? POSIX_FADV_RANDOM : POSIX_FADV_NORMAL))) {
		fprintf(stderr, "fileread: posix_fadvise: %s\n", strerror(err));
		return -1;
	}
	snprintf(name, sizeof(name), "%s %" PRIu64 "K, %s%s", random ? "random" : "seq",
		 cfg.block >> 10, cfg.cold ? "cold" : "warm", cfg.direct ? ", O_DIRECT" : "");
	step = sample_pattern(m, r, random, blocks, name, &mbs, &us);
	if (step < 0) {
		mb_samples_free(&mbs);
		mb_samples_free(&us);
		return -1;
	}
	snprintf(name + strlen(name), sizeof(name) - strlen(name), ": MB/s");
	mb_result(m, name, "MB/s", &mbs, 1, cfg.warmup);
	*strrchr(name, ':') = '\0';
	snprintf(name + strlen(name), sizeof(name) - strlen(name), ": us/read");
	mb_result(m, name, "us", &us, blocks, cfg.warmup);
	mb_samples_free(&mbs);
	mb_samples_free(&us);
	claim_pattern(m, step, r, random, pages, r->calls - calls0);
	return 0;
}

/* The notes and the report's extras; the exit code of mb_finish(). */
static int report(struct mb *m, const struct reader *r, const struct wl_file *f, int ra_kb)
{
	json_object *extra;

	if (ra_kb >= 0)
		mb_note(m, "readahead: %d KiB (the device's read_ahead_kb) for sequential reads; off for "
			"random ones (POSIX_FADV_RANDOM)", ra_kb);
	mb_note(m, "%s, %" PRIu64 " pages: %s%s", wl_fs_name(f->fd), f->pages, cfg.cold ?
		"dropped before every sample (fdatasync + POSIX_FADV_DONTNEED; mincore saw none left)" :
		"all in the page cache from the start", cfg.direct ? "; read with O_DIRECT" : "");

	extra = json_object_new_object();
	json_object_object_add(extra, "block", json_object_new_uint64(cfg.block));
	json_object_object_add(extra, "reads", json_object_new_uint64(r->reads));
	json_object_object_add(extra, "direct", json_object_new_boolean(cfg.direct));
	json_object_object_add(extra, "claim", json_object_new_string(cfg.claim));
	json_object_object_add(extra, "readahead_kb", json_object_new_int(ra_kb));
	/* what read() copied out of the page cache: zctrace's file_read_copy site must agree */
	json_object_object_add(extra, WL_KEY_BYTES, json_object_new_uint64(r->cached_bytes));
	wl_file_report(extra, &cfg.wo, f);
	return mb_finish(m, extra);
}

int main(int argc, char **argv)
{
	struct wl_file f = { .fd = -1 };
	struct reader r = { .fd = -1 };
	int ret = 1, ra_kb;
	struct mb m;

	if (parse_options(argc, argv))
		return 2;
	if (mb_pin("fileread", cfg.cpu))
		return 1;
	if (setup_reader(&r, &f))
		goto out;
	ra_kb = wl_file_readahead_kb(&f);

	mb_init(&m, "fileread", cfg.cpu);
	mb_begin(&m);
	for (int random = 0; random < 2; random++) {
		if (strcmp(cfg.pattern, "both") && strcmp(cfg.pattern, random ? "random" : "seq"))
			continue;
		if (time_pattern(&m, &r, random))
			goto out;
	}
	ret = report(&m, &r, &f, ra_kb);
out:
	if (r.fd >= 0 && r.fd != f.fd)
		close(r.fd);
	if (f.fd >= 0)
		close(f.fd);
	free(r.order);
	free(r.buf);
	return ret;
}
