/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What file.bpf.c shares: the file sites of an io_uring request, counted where it completes
 * (file_uring_done(), which zerocopy.bpf.c's completions call), and file.bpf.c's page-cache map
 * (pc_adds), defined here for the place the object lays it out in.
 */
#ifndef ZCTRACE_FILE_BPF_H
#define ZCTRACE_FILE_BPF_H
#include "common.bpf.h"
#include "slots.bpf.h"

/*
 * Pages the targets brought into the page cache, by file: file.bpf.c's alone, defined here, which
 * file.bpf.c includes ahead of fdclass.bpf.h's fd_verdicts, the place the object lays it out in.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct pc_key);
	__type(value, __u64);
} pc_adds SEC(".maps");

/* Set before load: the file sites counted where an io_uring request completes (1 << enum site). */
const volatile __u32 uring_file_sites = 0;

/*
 * An io_uring read or write request (@kind: enum io_kind) on a regular file (@type: enum fd_type)
 * of process @tgid completed with @res bytes. Buffered, those bytes were copied between the page
 * cache and user memory, as a read() or write() copies what it returns; with O_DIRECT they went
 * by DMA (direct_io). Counted here on every method: the probes inside a copy (fexit, kretprobe,
 * ext4's write_end) count only inside a read or write syscall (rw_call()), and a request runs in
 * io_uring_enter(), in task work or in an io-wq worker, never there. An io-wq worker and an
 * SQPOLL thread are of the submitter's thread group: the bytes are the submitter's.
 */
static __always_inline void file_uring_done(__u32 tgid, __u8 kind, __u8 type, long res)
{
	__u32 site;

	if (kind != IO_READ && kind != IO_WRITE)
		return;
	if (type == FT_REG)
		site = kind == IO_READ ? SITE_FILE_READ_COPY : SITE_FILE_WRITE_COPY;
	else if (type == FT_REG_DIRECT)
		site = SITE_DIRECT_IO;
	else
		return;
	if (uring_file_sites & 1U << site)
		record(tgid, site, res);
}

#endif /* ZCTRACE_FILE_BPF_H */
