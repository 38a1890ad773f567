// SPDX-License-Identifier: GPL-2.0
/*
 * File sites: file syscalls classified at entry, closed at exit (iocall.bpf.h, which closes pipe
 * syscalls too, through pipe.bpf.h, and socket calls, through sock.bpf.h); file_read_copy,
 * file_write_copy, kernel_copy by fexit, kretprobe or ext4 tracepoints; page-cache insertions.
 * One part of zctrace.bpf.c's object, compiled alone too (make bpf-alone): each site keeps all
 * its methods here, for every kernel.
 */
#include "common.bpf.h"
#include "settings.bpf.h"
#include "maps.bpf.h"
#include "filter.bpf.h"
#include "sockcall.bpf.h"
#include "slots.bpf.h"
#include "boundary.bpf.h"
#include "sock.bpf.h"
#include "file.bpf.h"
#include "fdclass.bpf.h"
#include "iocall.bpf.h"

/* ---- syscalls and page faults -------------------------------------------------------------- */

/* The running thread's I/O call for the file sites, kept at its entry or, for a read or write, now. */
static __always_inline struct io_call *rw_call(void)
{
	struct task_struct *task = current_task();
	struct io_call now = {}, *call;
	struct pt_regs *regs;
	__u64 *slot, w;

	slot = socket_lengths ? sock_call_slot() : NULL;
	w = slot ? *slot : 0;
	now.kind = SOCK_SLOT_KIND(w);
	/* a call enter_io() kept, a socket's (typed), or one this call's first event kept (marked) */
	if (!w || SOCK_SLOT_TID(w) != TASK_READ(task, pid) || (now.kind != IO_READ && now.kind != IO_WRITE))
		return task_io(task);
	if (SOCK_SLOT_TYPE(w))
		return SOCK_SLOT_TYPE(w) == RW_FILE_MARK ? task_io(task) : NULL;
	regs = task_user_regs(task);
	if (!regs)
		return NULL;
	now.nr = SOCK_SLOT_NR(w);
	rw_classify(true, task, SYSCALL_ARG(HAVE_TASK_PT_REGS, regs, 1), &now, 0);
	call = TASK_STATE(io_calls, task, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!call) {
		__sync_fetch_and_add(&misc.io_calls_dropped, 1);
		return NULL;
	}
	*call = now;
	*slot = (w & ~0xffULL) | RW_FILE_MARK;
	return call;
}

/*
 * A copy into the page cache seen by one of the write probes: user->page cache inside write(),
 * page cache->page cache inside copy_file_range/sendfile/splice to a file.
 */
static __always_inline void on_write_copy(__u32 method, __u64 bytes)
{
	struct io_call *call = bytes ? rw_call() : NULL;
	__u32 site;

	if (!call || !bytes || !(call->out & FD_REG))
		return;
	if (call->kind == IO_WRITE)
		site = SITE_FILE_WRITE_COPY;
	else if (kernel_copy_kind(call->kind))
		site = SITE_KERNEL_COPY;
	else
		return;
	call->seen_write += bytes;
	if (site_uses(site, method))
		record(current_tgid(), site, bytes);
}

/* The receives' end (the sends' is sock_send_length_btf's, send.bpf.c). */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(sock_recv_length_btf, struct sock *sk, int ret, int flags)
{
	/* no helper call: a slot that is not 0 is the running thread's */
	__u8 type = type_at_length(0, sk, true);

	if (standalone_sites)
		count_at_length(current_task(), sk, ret, flags, true, type);
	return 0;
}

/* ext4 reports every buffered write's copy per folio: len asked, copied done. */
SEC("tp_btf/ext4_da_write_end")
int BPF_PROG(ext4_da_write_end_btf, struct inode *inode, loff_t pos, unsigned int len, unsigned int copied)
{
	on_write_copy(METHOD_TP_BTF, copied);
	return 0;
}

SEC("tp_btf/ext4_write_end")
int BPF_PROG(ext4_write_end_btf, struct inode *inode, loff_t pos, unsigned int len, unsigned int copied)
{
	on_write_copy(METHOD_TP_BTF, copied);
	return 0;
}

SEC("tp_btf/ext4_journalled_write_end")
int BPF_PROG(ext4_journalled_write_end_btf, struct inode *inode, loff_t pos, unsigned int len,
	     unsigned int copied)
{
	on_write_copy(METHOD_TP_BTF, copied);
	return 0;
}

/* @pages of file @host entering the page cache on behalf of a target: read in (or new, written). */
static __always_inline void on_filemap_add(struct inode *host, __u64 pages)
{
	struct pc_key key = {};
	struct step_stats *step;
	__u64 *cnt;

	if (!host || !counting() || !is_target_memo(current_tgid()))
		return;
	key.ino = BPF_CORE_READ(host, i_ino);
	key.dev = BPF_CORE_READ(host, i_sb, s_dev);
	/* a step's pages are its files' own: filesystem metadata read through the block device
	 * (an evicted extent or bitmap block) is not what a "read in" claim is about */
	step = cur_step();
	if (step && (BPF_CORE_READ(host, i_mode) & ZCT_S_IFMT) == ZCT_S_IFREG)
		__sync_fetch_and_add(&step->pc_pages, pages);
	cnt = bpf_map_lookup_elem(&pc_adds, &key);
	if (cnt) {
		__sync_fetch_and_add(cnt, pages);
	} else {
		/* EEXIST: another CPU made the entry first; add to it */
		if (bpf_map_update_elem(&pc_adds, &key, &pages, BPF_NOEXIST)) {
			cnt = bpf_map_lookup_elem(&pc_adds, &key);
			if (cnt)
				__sync_fetch_and_add(cnt, pages);
			else
				__sync_fetch_and_add(&misc.pc_adds_dropped, 1);
		}
	}
}

/* A folio entering the page cache (5.16). */
static __always_inline void on_folio_add(struct folio *folio)
{
	__u64 flags = 0, pages = 1;

	/* folio_nr_pages(): one page unless PG_head marks a large folio */
	bpf_core_read(&flags, sizeof(flags), folio);
	if ((flags >> bpf_core_enum_value(enum pageflags, PG_head)) & 1) {
		if (bpf_core_field_exists(folio->_nr_pages))
			pages = BPF_CORE_READ(folio, _nr_pages);
		else
			pages = 1ULL << (BPF_CORE_READ(folio, _flags_1) & 0xff);
	}
	on_filemap_add(BPF_CORE_READ(folio, mapping, host), pages);
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(filemap_add_btf, struct folio *folio)
{
	on_folio_add(folio);
	return 0;
}

/* The same untyped; before folios, a page (5.10: a file's page cache holds single pages, not huge ones). */
SEC("raw_tp/mm_filemap_add_to_page_cache")
int BPF_PROG(filemap_add_raw, void *added)
{
	if (bpf_core_type_exists(struct folio))
		on_folio_add(added);
	else
		on_filemap_add(BPF_CORE_READ((struct page *)added, mapping, host), 1);
	return 0;
}

static __always_inline void on_file_read(__u32 method, long ret)
{
	struct io_call *call = ret > 0 ? rw_call() : NULL;

	if (ret > 0 && call && call->kind == IO_READ && (call->in & FD_REG) &&
	    site_uses(SITE_FILE_READ_COPY, method))
		record(current_tgid(), SITE_FILE_READ_COPY, ret);
}

/*
 * Whether @iter is user memory (ITER_UBUF, ITER_IOVEC: their values moved between kernels). The
 * standalone file sites (the census's, where no syscall is followed) tell a read() or write() of
 * a file from the kernel's own reads and writes (splice, sendfile, copy_file_range, kernel_read)
 * by it.
 */
static __always_inline bool user_iter(const struct iov_iter *iter)
{
	__u8 type = iter->iter_type;

	if (type == bpf_core_enum_value(enum iter_type, ITER_IOVEC))
		return true;
	return bpf_core_enum_value_exists(enum iter_type, ITER_UBUF) &&
	       type == bpf_core_enum_value(enum iter_type, ITER_UBUF);
}

/* A standalone file site's copy of @ret bytes: a read into user memory, a write from it or from the kernel's. */
static __always_inline void on_file_iter(__u32 site, const struct iov_iter *iter, long ret)
{
	__u32 tgid;

	if (ret <= 0)
		return;
	if (site == SITE_FILE_WRITE_COPY && !user_iter(iter))
		site = SITE_KERNEL_COPY;
	else if (!user_iter(iter))
		return;
	if (!(standalone_sites & 1U << site) || !site_uses(site, METHOD_FENTRY))
		return;
	tgid = current_tgid();
	if (is_target_memo(tgid))
		record(tgid, site, ret);
}

SEC("fexit/filemap_read")
int BPF_PROG(filemap_read_fexit, struct kiocb *iocb, struct iov_iter *iter)
{
	if (standalone_sites & 1U << SITE_FILE_READ_COPY)
		on_file_iter(SITE_FILE_READ_COPY, iter, func_ret(ctx));
	else
		on_file_read(METHOD_FENTRY, func_ret(ctx));
	return 0;
}

SEC("kretprobe/filemap_read")
int BPF_KRETPROBE(filemap_read_kretprobe, long ret)
{
	on_file_read(METHOD_KPROBE, ret);
	return 0;
}

SEC("fexit/generic_perform_write")
int BPF_PROG(generic_perform_write_fexit, struct kiocb *iocb, struct iov_iter *iter)
{
	long ret = func_ret(ctx);

	if (standalone_sites & (1U << SITE_FILE_WRITE_COPY | 1U << SITE_KERNEL_COPY))
		on_file_iter(SITE_FILE_WRITE_COPY, iter, ret);
	else if (ret > 0)
		on_write_copy(METHOD_FENTRY, ret);
	return 0;
}

SEC("kretprobe/generic_perform_write")
int BPF_KRETPROBE(generic_perform_write_kretprobe, long ret)
{
	if (ret > 0)
		on_write_copy(METHOD_KPROBE, ret);
	return 0;
}

/*
 * The syscalls' exits, the object's largest programs, last: the kernel verifies the programs in
 * the object's order, and a load it refuses (a structure this kernel lays out otherwise) is made
 * again without the refused one. Placed after the programs kernels are known to refuse (5.10's
 * three), their 5,000 instructions are verified in the load that succeeds alone, not in each
 * refused one too.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf, struct pt_regs *regs, long ret)
{
	on_sys_exit(true, regs, ret, METHOD_TP_BTF);
	return 0;
}

/* Where the kernel will not type the tracepoint (no BTF for it): the same, through raw_tp. */
SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit_raw, struct pt_regs *regs, long ret)
{
	on_sys_exit(false, regs, ret, METHOD_RAW_TP);
	return 0;
}
