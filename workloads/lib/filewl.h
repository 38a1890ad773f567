/* Files for the file-* and serve-* workloads: made, cached or dropped, checked, described. */
#ifndef FILEWL_H
#define FILEWL_H

#include <stdint.h>
#include <json-c/json.h>
#include "wl.h"

struct wl_file {
	int fd;
	uint64_t size;
	unsigned dev_major, dev_minor;
	uint64_t ino;
	uint64_t pages;			/* pages the file spans */
	uint64_t resident_before;	/* of them in the page cache when the measured phase starts */
	uint32_t crc;			/* CRC-32 of the contents (zlib) */
};

/*
 * Makes a file in @o->dir and unlinks it at once, so nothing outlives the process. With @fill it
 * is @o->file_size bytes of pseudo-random data, written back to disk (clean pages), its CRC kept.
 */
int wl_file_create(const struct wl_opts *o, const char *tag, bool fill, struct wl_file *f);
/* Cold: drops the file's pages (posix_fadvise DONTNEED); warm: reads them all in. */
int wl_file_set_cache(struct wl_file *f, enum wl_cache cache);
/*
 * Drops @f's pages from the page cache (fdatasync first, so they are clean and DONTNEED really
 * drops them), again while some stay. Returns the pages still resident (0 when all went), or -errno.
 */
int64_t wl_file_drop(struct wl_file *f);
/* The readahead window of @f's device in KiB (its bdi's read_ahead_kb), or -1 if unknown. */
int wl_file_readahead_kb(const struct wl_file *f);
/* Pages of the first @size bytes of @fd that are in the page cache (mincore). */
uint64_t wl_file_resident(int fd, uint64_t size);
/* CRC-32 of the first @size bytes of @fd; @fd may be open O_DIRECT (size whole blocks). */
int wl_file_crc(int fd, uint64_t size, uint32_t *crc);
/* A second open file description of @f (its own offset), through /proc/self/fd. */
int wl_file_reopen(const struct wl_file *f);
/* The filesystem holding @fd: "ext4", "xfs", "btrfs", "tmpfs", ... */
const char *wl_fs_name(int fd);
/* Bytes of @fd in extents shared with another file (a reflink clone), by FIEMAP; -1 if unknown. */
int64_t wl_file_shared_bytes(int fd);
json_object *wl_file_json(const struct wl_file *f);
/* The figures every file workload reports: file size, cache mode, filesystem, source file. */
void wl_file_report(json_object *r, const struct wl_opts *o, const struct wl_file *src);

#endif
