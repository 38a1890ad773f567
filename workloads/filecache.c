/*
 * filecache: re-read throughput of a file against its size, the classic way to find the size of
 * the file cache (the size where throughput falls off a knee). A knee in throughput alone may be
 * the CPU caches, or the page cache, or noise: here the kernel counts the pages each size's
 * re-reads brought into the page cache (0 while the cache holds the file), and mincore says which
 * sizes stayed resident.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#include "filewl.h"
#include "mb.h"

struct rereader {
	int fd;
	uint64_t size, block;
	char *buf;
	uint64_t calls;		/* read() calls made */
	uint64_t bytes;		/* bytes read through the page cache, the warming reads included */
};

/* The whole file once, front to back, --block bytes per read(). */
static int reread(struct rereader *r)
{
	uint64_t off = 0;

	if (lseek(r->fd, 0, SEEK_SET))
		return -errno;
	while (off < r->size) {
		uint64_t want = r->size - off < r->block ? r->size - off : r->block;
		ssize_t n = read(r->fd, r->buf, want);

		r->calls++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		mb_use(r->buf[0]);
		off += n;
		r->bytes += n;
	}
	return 0;
}

static const char *human(uint64_t bytes, char *buf, size_t n)
{
	if (bytes >= (1ULL << 30) && !(bytes % (1ULL << 30)))
		snprintf(buf, n, "%" PRIu64 "G", bytes >> 30);
	else if (bytes >= (1 << 20) && !(bytes % (1 << 20)))
		snprintf(buf, n, "%" PRIu64 "M", bytes >> 20);
	else if (bytes >= 1024 && !(bytes % 1024))
		snprintf(buf, n, "%" PRIu64 "K", bytes >> 10);
	else
		snprintf(buf, n, "%" PRIu64 "B", bytes);
	return buf;
}

static struct filecache_cfg {
	struct wl_opts wo;
	uint64_t min_size, max_size, block, bytes, reps, warmup;
	int cpu;
} cfg = {
	.wo = { .cache = WL_CACHE_WARM },
	.min_size = 1 << 20, .max_size = 256 << 20, .block = 64 << 10, .bytes = 1ULL << 30,
	.reps = 50, .warmup = 1,
};

static const struct mb_opt opts[] = {
	{ "min-size", MB_SIZE, &cfg.min_size, 4096, 1ULL << 40 },
	{ "max-size", MB_SIZE, &cfg.max_size, 4096, 1ULL << 40 },
	{ "block", MB_SIZE, &cfg.block, 1, 1 << 30 },
	{ "bytes", MB_SIZE, &cfg.bytes, 1, 1ULL << 44 },
	{ "reps", MB_COUNT, &cfg.reps, 1, 100000 },
	{ "warmup", MB_COUNT, &cfg.warmup, 0, 1000 },
	{ "cpu", MB_CPU, &cfg.cpu },
	{ "dir", MB_STRING, &cfg.wo.dir },
	{},
};

/* Where the page cache stopped holding the files, and the medians at the two ends. */
struct knee {
	uint64_t held;				/* largest size resident before and after */
	uint64_t lost_size, lost_pages, lost_of;	/* the first size that was not */
	double first_med, last_med;
};

/* The options and their checks; 0, or -1 having said why. */
static int parse_options(int argc, char **argv)
{
	const char *tmp = getenv("TMPDIR");
	int nsizes = 0;

	cfg.wo.dir = tmp && *tmp ? tmp : "/var/tmp";
	if (mb_parse(argc, argv, "filecache", "Re-reads files of doubling sizes from the page cache; "
		     "the kernel counts the pages each size's re-reads had to read in.", opts))
		return -1;
	if (cfg.min_size > cfg.max_size) {
		fprintf(stderr, "filecache: invalid --min-size %" PRIu64 " (at most --max-size %" PRIu64
			")\n", cfg.min_size, cfg.max_size);
		return -1;
	}
	for (uint64_t s = cfg.min_size; s <= cfg.max_size; s *= 2)
		nsizes++;
	if (nsizes > MB_MAX_STEPS) {
		fprintf(stderr, "filecache: invalid --min-size %" PRIu64 " (%d sizes up to --max-size, at "
			"most %d)\n", cfg.min_size, nsizes, MB_MAX_STEPS);
		return -1;
	}
	return 0;
}

/* A file of @size, read once whole: in the page cache, and holding what was written. */
static int make_warm_file(struct rereader *r, uint64_t size, struct wl_file *f)
{
	char h[32];
	uint32_t crc;
	int err;

	cfg.wo.file_size = size;
	if ((err = wl_file_create(&cfg.wo, "cache", true, f))) {
		fprintf(stderr, "filecache: cannot make a %" PRIu64 "-byte file in %s: %s\n", size,
			cfg.wo.dir, strerror(-err));
		if (f->fd >= 0)
			close(f->fd);
		return -1;
	}
	if ((err = wl_file_crc(f->fd, f->size, &crc)) || crc != f->crc) {
		fprintf(stderr, "filecache: reading the %s file back: %s\n", human(size, h, sizeof(h)),
			err ? strerror(-err) : "contents differ");
		close(f->fd);
		return -1;
	}
	r->bytes += f->size;
	return 0;
}

/* The re-reads of one file inside step @name, --warmup dropped and at most @n kept (MB/s). */
static int sample_size(struct mb *m, struct rereader *r, const char *name, uint64_t n,
		       struct mb_samples *s)
{
	int step = mb_step_begin(m, name), err = 0;

	for (uint64_t i = 0; i < cfg.warmup + n && !err; i++) {
		uint64_t t0 = mb_now_ns(), t1;

		err = reread(r);
		t1 = mb_now_ns();
		if (!err && i >= cfg.warmup)
			mb_samples_add(s, (double)r->size / ((t1 - t0) / 1e9) / 1e6);
	}
	mb_step_end(m);
	return err ? err : step;
}

/* One size's result with its residency, its entry in "sizes", and what it says of the knee. */
static void record_size(struct mb *m, const char *name, int step, const struct wl_file *f,
			uint64_t before, uint64_t after, struct mb_samples *s, json_object *sizes,
			struct knee *k)
{
	json_object *o = mb_result(m, name, "MB/s", s, 1, cfg.warmup);

	json_object_object_add(o, WL_KEY_FILE_SIZE, json_object_new_uint64(f->size));
	json_object_object_add(o, WL_KEY_PAGES, json_object_new_uint64(f->pages));
	json_object_object_add(o, WL_KEY_RESIDENT_BEFORE, json_object_new_uint64(before));
	json_object_object_add(o, "resident_after", json_object_new_uint64(after));
	if (f->size == cfg.min_size)
		k->first_med = mb_percentile(s, 50);
	k->last_med = mb_percentile(s, 50);
	o = json_object_new_object();
	json_object_object_add(o, WL_KEY_FILE_SIZE, json_object_new_uint64(f->size));
	json_object_object_add(o, "step", json_object_new_int(step));
	json_object_object_add(o, WL_KEY_RESIDENT_BEFORE, json_object_new_uint64(before));
	json_object_object_add(o, "resident_after", json_object_new_uint64(after));
	json_object_array_add(sizes, o);

	if (before == f->pages && after == f->pages && !k->lost_size) {
		k->held = f->size;
	} else if (!k->lost_size) {
		k->lost_size = f->size;
		k->lost_pages = before < after ? before : after;
		k->lost_of = f->pages;
	}
}

/* One size: its file made and warmed, its re-reads timed, its result and claims. */
static int time_size(struct mb *m, struct rereader *r, uint64_t size, json_object *sizes,
		     struct knee *k)
{
	uint64_t n = cfg.bytes / size, calls0, before, after;
	struct mb_samples s = {};
	struct wl_file f;
	char name[96], claim[160], h[32];
	int step;

	/* --bytes bounds the run: fewer samples of the larger files, one at least */
	n = n < 1 ? 1 : n > cfg.reps ? cfg.reps : n;
	if (make_warm_file(r, size, &f))
		return -1;
	r->fd = f.fd;
	r->size = f.size;
	before = wl_file_resident(f.fd, f.size);

	snprintf(name, sizeof(name), "re-read %s file", human(size, h, sizeof(h)));
	calls0 = r->calls;
	step = sample_size(m, r, name, n, &s);
	after = wl_file_resident(f.fd, f.size);
	close(f.fd);	/* unlinked already: its pages go, and the next size starts clean */
	r->fd = -1;
	if (step < 0) {
		fprintf(stderr, "filecache: read: %s\n", strerror(-step));
		mb_samples_free(&s);
		return -1;
	}

	snprintf(name + strlen(name), sizeof(name) - strlen(name), ": MB/s");
	record_size(m, name, step, &f, before, after, &s, sizes, k);
	mb_samples_free(&s);

	snprintf(claim, sizeof(claim), "the re-reads of the %s file were served from the page "
		 "cache: no page read in", human(size, h, sizeof(h)));
	mb_assume_exact(m, step, claim, "page_cache_pages", 0);
	snprintf(claim, sizeof(claim), "each read() of the %s file entered the kernel once",
		 human(size, h, sizeof(h)));
	mb_assume_exact(m, step, claim, "syscall:read", r->calls - calls0);
	return 0;
}

/* The notes on the knee and the report's extras; the exit code of mb_finish(). */
static int report(struct mb *m, const struct rereader *r, json_object *sizes, const struct knee *k)
{
	json_object *extra;
	struct sysinfo si;
	char h1[32], h2[32];

	sysinfo(&si);
	if (k->held)
		mb_note(m, "largest file served entirely from the page cache: %s (mincore: all its pages "
			"resident before and after its re-reads)", human(k->held, h1, sizeof(h1)));
	if (k->lost_size)
		mb_note(m, "the page cache stopped holding the file at %s: %" PRIu64 " of its %" PRIu64
			" pages resident", human(k->lost_size, h1, sizeof(h1)), k->lost_pages, k->lost_of);
	else
		mb_note(m, "no knee up to --max-size %s: this machine has %.1f GiB of RAM; raise "
			"--max-size past it to find the page cache's size",
			human(cfg.max_size, h1, sizeof(h1)), (double)si.totalram * si.mem_unit / (1 << 30));
	mb_note(m, "median %.0f MB/s at %s, %.0f MB/s at %s: %s", k->first_med,
		human(cfg.min_size, h1, sizeof(h1)), k->last_med, human(cfg.max_size, h2, sizeof(h2)),
		k->lost_size ? "past the knee the re-reads went to the disk" :
		"the page cache held every size, so any fall is the CPU caches', not the page cache's");

	extra = json_object_new_object();
	json_object_object_add(extra, "block", json_object_new_uint64(cfg.block));
	json_object_object_add(extra, "sizes", sizes);
	json_object_object_add(extra, "largest_cached", json_object_new_uint64(k->held));
	json_object_object_add(extra, "ram_bytes", json_object_new_uint64((uint64_t)si.totalram * si.mem_unit));
	/* what read() and pread() copied out of the page cache: zctrace's file_read_copy site */
	json_object_object_add(extra, WL_KEY_BYTES, json_object_new_uint64(r->bytes));
	return mb_finish(m, extra);
}

int main(int argc, char **argv)
{
	struct rereader r = { .fd = -1 };
	struct knee k = {};
	json_object *sizes;
	int ret = 1;
	struct mb m;

	if (parse_options(argc, argv))
		return 2;
	if (mb_pin("filecache", cfg.cpu))
		return 1;
	r.block = cfg.block;
	r.buf = malloc(cfg.block);
	if (!r.buf) {
		fprintf(stderr, "filecache: out of memory\n");
		return 1;
	}
	sizes = json_object_new_array();

	mb_init(&m, "filecache", cfg.cpu);
	mb_begin(&m);
	for (uint64_t size = cfg.min_size; size <= cfg.max_size; size *= 2) {
		if (time_size(&m, &r, size, sizes, &k))
			goto out;
	}
	ret = report(&m, &r, sizes, &k);
	sizes = NULL;
out:
	if (sizes)
		json_object_put(sizes);
	free(r.buf);
	return ret;
}
