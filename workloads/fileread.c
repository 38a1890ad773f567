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

int main(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	struct wl_opts wo = { .dir = tmp && *tmp ? tmp : "/var/tmp", .file_size = 64 << 20 };
	uint64_t block = 4096, reads = 2048, reps = 5, warmup = 1;
	const char *pattern = "both", *cache = "cold", *claim = "auto";
	bool direct = false;
	int cpu = 0, ret = 1, err;
	const struct mb_opt opts[] = {
		{ "pattern", MB_CHOICE, &pattern, "which reads to time (default both)",
		  .choices = "both|seq|random" },
		{ "block", MB_SIZE, &block, "bytes per read, a multiple of 4K (default 4K)", 4096, 64 << 20 },
		{ "file-size", MB_SIZE, &wo.file_size, "size of the file (default 64M)", 4096, 1ULL << 40 },
		{ "reads", MB_COUNT, &reads, "random reads per sample, distinct blocks; at most the file's "
		  "blocks (default 2048)", 1, 1ULL << 32 },
		{ "reps", MB_COUNT, &reps, "samples kept per pattern (default 5)", 1, 100000 },
		{ "warmup", MB_COUNT, &warmup, "samples run first and dropped (default 1)", 0, 1000 },
		{ "cache", MB_CHOICE, &cache, "cold: the file's pages dropped before every sample; warm: "
		  "all in the page cache (default cold)", .choices = "cold|warm" },
		{ "direct", MB_FLAG, &direct, "read with O_DIRECT, past the page cache" },
		{ "claim", MB_CHOICE, &claim, "what the reads are claimed to do: cold (miss and read "
		  "every page in), warm (bring in none), direct (bypass the cache); default: what "
		  "--cache and --direct set", .choices = "auto|cold|warm|direct" },
		{ "cpu", MB_CPU, &cpu, "pin to this CPU, -1 for none (default 0)" },
		{ "dir", MB_STRING, &wo.dir, "where to make the file, unlinked at once (default $TMPDIR "
		  "or /var/tmp)" },
		{},
	};
	struct wl_file f = { .fd = -1 };
	struct reader r = { .fd = -1 };
	bool cold, claim_cold;
	uint64_t page = sysconf(_SC_PAGESIZE), bpages;
	json_object *extra;
	struct mb m;
	int ra_kb;

	if (mb_parse(argc, argv, "fileread", "Times sequential and random reads of a cold or warm "
		     "file; the kernel counts the pages each step read into the page cache.", opts))
		return 2;
	if (block % page) {
		fprintf(stderr, "fileread: invalid --block %" PRIu64 " (a multiple of the page size, %"
			PRIu64 ")\n", block, page);
		return 2;
	}
	if (block > wo.file_size) {
		fprintf(stderr, "fileread: invalid --block %" PRIu64 " (at most --file-size)\n", block);
		return 2;
	}
	cold = !strcmp(cache, "cold");
	wo.cache = cold ? WL_CACHE_COLD : WL_CACHE_WARM;
	if (!strcmp(claim, "auto"))
		claim = direct ? "direct" : cache;
	claim_cold = !strcmp(claim, "cold");
	if (mb_pin("fileread", cpu))
		return 1;

	r.block = block;
	r.nblocks = wo.file_size / block;
	r.reads = reads < r.nblocks ? reads : r.nblocks;
	r.direct = direct;
	r.state = 0x2545f4914f6cdd1dULL ^ (uint64_t)getpid();
	bpages = block / page;
	r.order = malloc(r.nblocks * sizeof(*r.order));
	/* O_DIRECT wants an aligned buffer; a page is enough for every device here */
	if (!r.order || posix_memalign((void **)&r.buf, page, block)) {
		fprintf(stderr, "fileread: out of memory\n");
		goto out;
	}
	for (uint64_t i = 0; i < r.nblocks; i++)
		r.order[i] = i;
	if ((err = wl_file_create(&wo, "read", true, &f))) {
		fprintf(stderr, "fileread: cannot make the file in %s: %s\n", wo.dir, strerror(-err));
		goto out;
	}
	r.f = &f;
	r.fd = f.fd;
	if (direct) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/self/fd/%d", f.fd);
		r.fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
		if (r.fd < 0) {
			fprintf(stderr, "fileread: O_DIRECT on %s: %s\n", wl_fs_name(f.fd), strerror(errno));
			goto out;
		}
	}
	if ((err = wl_file_set_cache(&f, wo.cache))) {
		fprintf(stderr, "fileread: cannot set the cache state: %s\n", strerror(-err));
		goto out;
	}
	ra_kb = wl_file_readahead_kb(&f);

	mb_init(&m, "fileread", cpu);
	mb_begin(&m);
	for (int random = 0; random < 2; random++) {
		struct mb_samples mbs = {}, us = {};
		uint64_t blocks = random ? r.reads : (f.size + block - 1) / block;
		/* pages one sample reads: the blocks' own; the last sequential block may be short */
		uint64_t pages = random ? r.reads * bpages : f.pages, calls0 = r.calls;
		char name[128], claim_text[256], measure[32];
		int step;

		if (strcmp(pattern, "both") && strcmp(pattern, random ? "random" : "seq"))
			continue;
		/* readahead is the point of sequential reads and would blur random ones: off for them */
		if ((err = posix_fadvise(r.fd, 0, 0, random ? POSIX_FADV_RANDOM : POSIX_FADV_NORMAL))) {
			fprintf(stderr, "fileread: posix_fadvise: %s\n", strerror(err));
			goto out;
		}
		snprintf(name, sizeof(name), "%s %" PRIu64 "K, %s%s", random ? "random" : "seq",
			 block >> 10, cold ? "cold" : "warm", direct ? ", O_DIRECT" : "");
		step = mb_step_begin(&m, name);
		for (uint64_t s = 0; s < warmup + reps; s++) {
			uint64_t t0, t1;
			int64_t left;

			/* every sample starts cold: drop the pages, untimed, and see that they went */
			if (cold && (left = wl_file_drop(&f))) {
				fprintf(stderr, "fileread: %s\n", left < 0 ? strerror(-left) :
					"the file's pages would not leave the page cache");
				mb_step_end(&m);
				goto out;
			}
			t0 = mb_now_ns();
			err = random ? read_random(&r) : read_seq(&r);
			t1 = mb_now_ns();
			if (err) {
				fprintf(stderr, "fileread: read: %s\n", strerror(-err));
				mb_step_end(&m);
				goto out;
			}
			if (s >= warmup) {
				mb_samples_add(&mbs, (double)blocks * block / ((t1 - t0) / 1e9) / 1e6);
				mb_samples_add(&us, (t1 - t0) / 1e3 / blocks);
			}
		}
		mb_step_end(&m);
		snprintf(name + strlen(name), sizeof(name) - strlen(name), ": MB/s");
		mb_result(&m, name, "MB/s", &mbs, 1, warmup);
		*strrchr(name, ':') = '\0';
		snprintf(name + strlen(name), sizeof(name) - strlen(name), ": us/read");
		mb_result(&m, name, "us", &us, blocks, warmup);
		mb_samples_free(&mbs);
		mb_samples_free(&us);

		if (claim_cold && random)
			snprintf(claim_text, sizeof(claim_text), "each sample's %" PRIu64 " random read%s "
				 "missed the page cache and read in their own %" PRIu64 " page%s, no more "
				 "(readahead off: POSIX_FADV_RANDOM)", r.reads, r.reads == 1 ? "" : "s", pages,
				 pages == 1 ? "" : "s");
		else if (claim_cold)
			snprintf(claim_text, sizeof(claim_text), "each sample missed the page cache and "
				 "read in all %" PRIu64 " page%s of the file, no more (readahead stops at the "
				 "end of the file)", pages, pages == 1 ? "" : "s");
		else if (!strcmp(claim, "warm"))
			snprintf(claim_text, sizeof(claim_text), "every read was served from the page "
				 "cache: no page read in");
		else
			snprintf(claim_text, sizeof(claim_text), "O_DIRECT bypassed the page cache: no page "
				 "added to it");
		mb_assume(&m, step, claim_text, "page_cache_pages", claim_cold ? pages * (warmup + reps) : 0,
			  claim_cold ? pages * (warmup + reps) : 0, claim_cold ? pages * (warmup + reps) : 0);
		snprintf(claim_text, sizeof(claim_text), "each %s entered the kernel once",
			 random ? "pread() of a block" : "read() of a block");
		snprintf(measure, sizeof(measure), "syscall:%s", random ? "pread64" : "read");
		mb_assume_exact(&m, step, claim_text, measure, r.calls - calls0);
	}
	if (ra_kb >= 0)
		mb_note(&m, "readahead: %d KiB (the device's read_ahead_kb) for sequential reads; off for "
			"random ones (POSIX_FADV_RANDOM)", ra_kb);
	mb_note(&m, "%s, %" PRIu64 " pages: %s%s", wl_fs_name(f.fd), f.pages, cold ?
		"dropped before every sample (fdatasync + POSIX_FADV_DONTNEED; mincore saw none left)" :
		"all in the page cache from the start", direct ? "; read with O_DIRECT" : "");

	extra = json_object_new_object();
	json_object_object_add(extra, "block", json_object_new_uint64(block));
	json_object_object_add(extra, "reads", json_object_new_uint64(r.reads));
	json_object_object_add(extra, "direct", json_object_new_boolean(direct));
	json_object_object_add(extra, "claim", json_object_new_string(claim));
	json_object_object_add(extra, "readahead_kb", json_object_new_int(ra_kb));
	/* what read() copied out of the page cache: zctrace's file_read_copy site must agree */
	json_object_object_add(extra, WL_KEY_BYTES, json_object_new_uint64(r.cached_bytes));
	wl_file_report(extra, &wo, &f);
	ret = mb_finish(&m, extra);
out:
	if (r.fd >= 0 && r.fd != f.fd)
		close(r.fd);
	if (f.fd >= 0)
		close(f.fd);
	free(r.order);
	free(r.buf);
	return ret;
}
