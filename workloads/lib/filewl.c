/* Files for the file-* and serve-* workloads. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <zlib.h>
#include "filewl.h"

#define IO_CHUNK (1 << 20)

static uint64_t page_size(void)
{
	return (uint64_t)sysconf(_SC_PAGESIZE);
}

static int write_all(int fd, const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf += w;
		n -= w;
	}
	return 0;
}

int wl_file_create(const struct wl_opts *o, const char *tag, bool fill, struct wl_file *f)
{
	char path[4096];
	struct stat st;
	uint64_t state = 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid(), left;
	uint64_t *buf = NULL;
	int err = 0;

	*f = (struct wl_file){ .fd = -1 };
	if (snprintf(path, sizeof(path), "%s/zctrace-%s-XXXXXX", o->dir, tag) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	f->fd = mkstemp(path);
	if (f->fd < 0)
		return -errno;
	unlink(path);
	if (fstat(f->fd, &st))
		return -errno;
	f->dev_major = major(st.st_dev);
	f->dev_minor = minor(st.st_dev);
	f->ino = st.st_ino;
	if (!fill)
		return 0;

	buf = malloc(IO_CHUNK);
	if (!buf)
		return -ENOMEM;
	f->crc = crc32(0L, Z_NULL, 0);
	for (left = o->file_size; left && !err;) {
		size_t n = left < IO_CHUNK ? left : IO_CHUNK;

		for (size_t i = 0; i < IO_CHUNK / 8; i++) {	/* xorshift64: incompressible, reproducible */
			state ^= state << 13;
			state ^= state >> 7;
			state ^= state << 17;
			buf[i] = state;
		}
		f->crc = crc32(f->crc, (const Bytef *)buf, n);
		err = write_all(f->fd, (const char *)buf, n);
		left -= n;
	}
	free(buf);
	if (err)
		return err;
	if (fsync(f->fd))
		return -errno;
	f->size = o->file_size;
	f->pages = (f->size + page_size() - 1) / page_size();
	return 0;
}

uint64_t wl_file_resident(int fd, uint64_t size)
{
	uint64_t ps = page_size(), pages = (size + ps - 1) / ps, n = 0;
	unsigned char *vec;
	void *map;

	if (!size)
		return 0;
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return 0;
	vec = malloc(pages);
	if (vec && !mincore(map, size, vec)) {
		for (uint64_t i = 0; i < pages; i++)
			n += vec[i] & 1;
	}
	free(vec);
	munmap(map, size);
	return n;
}

int wl_file_crc(int fd, uint64_t size, uint32_t *crc)
{
	uint64_t off = 0;
	char *buf;

	/* page-aligned: @fd may be open O_DIRECT (uring-file --direct) */
	if (posix_memalign((void **)&buf, 4096, IO_CHUNK))
		return -ENOMEM;
	*crc = crc32(0L, Z_NULL, 0);
	while (off < size) {
		ssize_t n = pread(fd, buf, size - off < IO_CHUNK ? size - off : IO_CHUNK, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return n < 0 ? -errno : -EIO;
		}
		*crc = crc32(*crc, (const Bytef *)buf, n);
		off += n;
	}
	free(buf);
	return 0;
}

int wl_file_set_cache(struct wl_file *f, enum wl_cache cache)
{
	int err;

	if (cache == WL_CACHE_COLD) {
		/* the pages are clean after the fsync, so DONTNEED really drops them */
		if (fdatasync(f->fd))
			return -errno;
		if ((err = posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED)))
			return -err;
	} else if (wl_file_resident(f->fd, f->size) < f->pages) {
		uint32_t crc;

		if ((err = wl_file_crc(f->fd, f->size, &crc)))
			return err;
	}
	/* the measured phase starts with no writeback of ours pending on this filesystem */
	if (syncfs(f->fd))
		return -errno;
	f->resident_before = wl_file_resident(f->fd, f->size);
	return 0;
}

int64_t wl_file_drop(struct wl_file *f)
{
	uint64_t left = f->pages;
	int err;

	if (fdatasync(f->fd))
		return -errno;
	/*
	 * A page another CPU still holds in its LRU batch is skipped by one DONTNEED (the kernel
	 * drains those batches when it falls short, but may race a new one): a few tries.
	 */
	for (int i = 0; i < 5 && left; i++) {
		if ((err = posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED)))
			return -err;
		left = wl_file_resident(f->fd, f->size);
	}
	return left;
}

int wl_file_readahead_kb(const struct wl_file *f)
{
	char path[96];
	FILE *fp;
	int kb = -1;

	/* the bdi of a partition is its disk's: /sys/dev/block/M:m/queue, or ../queue for a partition */
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/read_ahead_kb", f->dev_major, f->dev_minor);
	fp = fopen(path, "r");
	if (!fp) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/read_ahead_kb", f->dev_major,
			 f->dev_minor);
		fp = fopen(path, "r");
	}
	if (!fp)
		return -1;
	if (fscanf(fp, "%d", &kb) != 1)
		kb = -1;
	fclose(fp);
	return kb;
}

int wl_file_reopen(const struct wl_file *f)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	return open(path, O_RDONLY | O_CLOEXEC);
}

const char *wl_fs_name(int fd)
{
	static const struct {
		unsigned long magic;
		const char *name;
	} fs[] = {
		{ EXT4_SUPER_MAGIC, "ext4" }, { XFS_SUPER_MAGIC, "xfs" }, { BTRFS_SUPER_MAGIC, "btrfs" },
		{ TMPFS_MAGIC, "tmpfs" }, { OVERLAYFS_SUPER_MAGIC, "overlayfs" }, { NFS_SUPER_MAGIC, "nfs" },
		{ F2FS_SUPER_MAGIC, "f2fs" }, { 0x2fc12fc1, "zfs" }, { 0x65735546, "fuse" },
	};
	struct statfs sfs;

	if (fstatfs(fd, &sfs))
		return "unknown";
	for (unsigned i = 0; i < sizeof(fs) / sizeof(fs[0]); i++)
		if ((unsigned long)sfs.f_type == fs[i].magic)
			return fs[i].name;
	return "other";
}

int64_t wl_file_shared_bytes(int fd)
{
	enum { N = 256 };
	struct fiemap *fm = calloc(1, sizeof(*fm) + N * sizeof(struct fiemap_extent));
	uint64_t start = 0;
	int64_t shared = 0;
	bool last = false;

	if (!fm)
		return -1;
	while (!last) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = start;
		fm->fm_length = FIEMAP_MAX_OFFSET - start;
		fm->fm_extent_count = N;
		if (ioctl(fd, FS_IOC_FIEMAP, fm)) {
			shared = -1;	/* this filesystem cannot say */
			break;
		}
		if (!fm->fm_mapped_extents)
			break;
		for (unsigned i = 0; i < fm->fm_mapped_extents; i++) {
			const struct fiemap_extent *e = &fm->fm_extents[i];

			if (e->fe_flags & FIEMAP_EXTENT_SHARED)
				shared += e->fe_length;
			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				last = true;
			start = e->fe_logical + e->fe_length;
		}
	}
	free(fm);
	return shared;
}

json_object *wl_file_json(const struct wl_file *f)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, WL_KEY_DEV_MAJOR, json_object_new_int(f->dev_major));
	json_object_object_add(o, WL_KEY_DEV_MINOR, json_object_new_int(f->dev_minor));
	json_object_object_add(o, WL_KEY_INO, json_object_new_uint64(f->ino));
	json_object_object_add(o, WL_KEY_PAGES, json_object_new_uint64(f->pages));
	json_object_object_add(o, WL_KEY_RESIDENT_BEFORE, json_object_new_uint64(f->resident_before));
	return o;
}

void wl_file_report(json_object *r, const struct wl_opts *o, const struct wl_file *src)
{
	json_object_object_add(r, WL_KEY_FILE_SIZE, json_object_new_uint64(src->size));
	json_object_object_add(r, WL_KEY_CACHE, json_object_new_string(o->cache == WL_CACHE_COLD ? "cold" : "warm"));
	json_object_object_add(r, WL_KEY_FS, json_object_new_string(wl_fs_name(src->fd)));
	json_object_object_add(r, "page_size", json_object_new_uint64(page_size()));
	json_object_object_add(r, WL_KEY_SOURCE, wl_file_json(src));
}
