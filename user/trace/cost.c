/*
 * The sampler's user side (cost.h): which kernel functions its walk (bpf/costwalk.h) knows and in
 * what role, built at attach (ktable.c: from kallsyms or the boot's copy of it, and the JITed BPF
 * programs); a cpu-clock sampling event on every online CPU
 * with the program attached to each; the counts, summed over the CPUs.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "costwalk.h"
#include "trace/cost.h"
#include "trace/ktable.h"
#include "trace/sites.h"
#include "trace/usercopy.h"
#include "zctrace.skel.h"

/* A name the walk knows: exact, or (prefix) every name that starts so. */
struct cost_rule {
	const char *name;
	__u32 role;
	__u32 cls;
	bool prefix;
};

#define COPY(n) { n, ROLE_COPY, 0, false }
#define PASS(n) { n, ROLE_NONE, 0, false }
#define KIND(n, c) { n, ROLE_KIND, c, false }
#define KINDS(n, c) { n, ROLE_KIND, c, true }
#define SPLICE(n) { n, ROLE_SPLICE, COST_PAGE_REF, false }
#define SYSCALL(n) { n, ROLE_SYSCALL, COST_SYSCALL, false }
#define SYSCALLS(n) { n, ROLE_SYSCALL, COST_SYSCALL, true }
#define DISPLACE(n) { n, ROLE_DISPLACE, COST_DISPLACED, false }
#define JITED(n) { n, ROLE_BPF, COST_TRACER, true }

/*
 * Exact names first (a site's own functions, from the probe table, before all), then prefixes,
 * the first that matches. Names a kernel lacks cost nothing: each kernel names its copy routines
 * its own way (5.10's copy_user_enhanced_fast_string, 6.2's rep_movs_alternative).
 */
static const struct cost_rule cost_rules[] = {
	/* the routines that move the bytes, and the iov_iter and skb walks around them */
	COPY("_copy_to_iter"), COPY("_copy_from_iter"), COPY("_copy_from_iter_nocache"),
	COPY("_copy_from_iter_flushcache"), COPY("copy_page_to_iter"), COPY("copy_page_from_iter"),
	COPY("copy_page_from_iter_atomic"), COPY("copy_folio_from_iter_atomic"), COPY("copy_to_user_iter"),
	COPY("copy_from_user_iter"), COPY("copyout"), COPY("copyin"), COPY("__copy_user_nocache"),
	COPY("__copy_user_flushcache"), COPY("rep_movs_alternative"), COPY("copy_user_generic_string"),
	COPY("copy_user_generic_unrolled"), COPY("copy_user_enhanced_fast_string"), COPY("copy_mc_to_user"),
	COPY("memcpy"), COPY("__memcpy"), COPY("__pi_memcpy"), COPY("memcpy_orig"), COPY("memcpy_erms"), COPY("memmove"),
	COPY("__memmove"), COPY("_copy_to_user"), COPY("_copy_from_user"), COPY("__check_object_size"),
	COPY("check_heap_object"), COPY("__check_heap_object"), COPY("simple_copy_to_iter"),
	COPY("__skb_datagram_iter"), COPY("skb_copy_datagram_iter"), COPY("skb_copy_datagram_from_iter"),
	COPY("skb_copy_bits"), COPY("csum_and_copy_from_iter"), COPY("csum_and_copy_from_iter_full"),
	COPY("csum_and_copy_to_iter"), COPY("csum_partial_copy_generic"), COPY("csum_partial_copy_nocheck"),
	COPY("csum_and_copy_from_user"), COPY("csum_and_copy_to_user"), COPY("ip_generic_getfrag"),
	COPY("copy_from_iter_full"), COPY("skb_copy_and_csum_datagram"), COPY("_copy_from_iter_full"),
	COPY("_copy_from_iter_full_nocache"), COPY("skb_do_copy_data_nocache"), COPY("skb_copy_to_page_nocache"),
	COPY("memmove_erms"),
	/*
	 * the datagram paths' loops around their payload copy, of no kind of their own: the walk
	 * passes them by, so a copy under them is the send call's, and their own time the protocol's
	 */
	PASS("__ip_append_data"), PASS("ip_append_data"), PASS("__ip6_append_data"), PASS("ip6_append_data"),
	PASS("ip_make_skb"), PASS("ip6_make_skb"),
	/* pinning user pages and the zerocopy completions */
	KIND("skb_zerocopy_iter_stream", COST_ZEROCOPY), KIND("skb_zerocopy_iter_dgram", COST_ZEROCOPY),
	KIND("__zerocopy_sg_from_iter", COST_ZEROCOPY), KIND("zerocopy_fill_skb_from_iter", COST_ZEROCOPY),
	KIND("zerocopy_sg_from_iter", COST_ZEROCOPY), KIND("msg_zerocopy_realloc", COST_ZEROCOPY),
	KIND("msg_zerocopy_alloc", COST_ZEROCOPY), KIND("msg_zerocopy_callback", COST_ZEROCOPY),
	KIND("__msg_zerocopy_callback", COST_ZEROCOPY), KIND("msg_zerocopy_put_abort", COST_ZEROCOPY),
	KIND("mm_account_pinned_pages", COST_ZEROCOPY), KIND("mm_unaccount_pinned_pages", COST_ZEROCOPY),
	KIND("ip_recv_error", COST_ZEROCOPY), KIND("ipv6_recv_error", COST_ZEROCOPY),
	KIND("sock_recv_errqueue", COST_ZEROCOPY), KIND("sock_dequeue_err_skb", COST_ZEROCOPY),
	KIND("__skb_zcopy_downgrade_managed", COST_ZEROCOPY), KIND("iov_iter_get_pages2", COST_ZEROCOPY),
	KIND("iov_iter_get_pages_alloc2", COST_ZEROCOPY), KIND("__iov_iter_get_pages_alloc", COST_ZEROCOPY),
	KINDS("sock_zerocopy_", COST_ZEROCOPY), KINDS("io_notif_", COST_ZEROCOPY),
	KINDS("io_send_zc", COST_ZEROCOPY), KINDS("io_sendmsg_zc", COST_ZEROCOPY),
	KINDS("io_tx_ubuf", COST_ZEROCOPY), KINDS("io_sg_from_iter", COST_ZEROCOPY),
	/* page references: sendfile, splice, vmsplice and their pipes */
	SPLICE("do_splice_direct"), SPLICE("splice_direct_to_actor"), SPLICE("do_splice_direct_actor"),
	SPLICE("vfs_copy_file_range"), SPLICE("iter_file_splice_write"), SPLICE("do_splice"),
	SPLICE("__do_splice"), SPLICE("do_sendfile"), SPLICE("generic_copy_file_range"),
	SPLICE("splice_file_range"), SPLICE("do_splice_from"), SPLICE("direct_splice_actor"),
	KIND("skb_splice_from_iter", COST_PAGE_REF), KIND("do_tcp_sendpages", COST_PAGE_REF),
	KIND("tcp_sendpage", COST_PAGE_REF), KIND("tcp_sendpage_locked", COST_PAGE_REF),
	KIND("splice_to_socket", COST_PAGE_REF), KIND("filemap_splice_read", COST_PAGE_REF),
	KIND("generic_file_splice_read", COST_PAGE_REF), KIND("splice_to_pipe", COST_PAGE_REF),
	KIND("add_to_pipe", COST_PAGE_REF), KIND("__splice_from_pipe", COST_PAGE_REF),
	KIND("splice_from_pipe", COST_PAGE_REF), KIND("splice_folio_into_pipe", COST_PAGE_REF),
	KIND("iter_to_pipe", COST_PAGE_REF), KIND("vmsplice_to_pipe", COST_PAGE_REF),
	KIND("tcp_splice_read", COST_PAGE_REF), KIND("skb_splice_bits", COST_PAGE_REF),
	KIND("__skb_splice_bits", COST_PAGE_REF), KIND("pipe_to_sendpage", COST_PAGE_REF),
	KINDS("splice_", COST_PAGE_REF), KINDS("do_tee", COST_PAGE_REF), KINDS("link_pipe", COST_PAGE_REF),
	/* where a sample due while interrupts were off lands */
	DISPLACE("_raw_spin_unlock_irqrestore"), DISPLACE("_raw_spin_unlock_irq"), DISPLACE("handle_softirqs"),
	DISPLACE("__do_softirq"), DISPLACE("__softirqentry_text_start"), DISPLACE("__local_bh_enable_ip"), DISPLACE("_raw_write_unlock_irqrestore"),
	DISPLACE("_raw_read_unlock_irqrestore"), DISPLACE("_raw_write_unlock_irq"),
	/* the syscall layer */
	SYSCALL("entry_SYSCALL_64"), SYSCALL("entry_SYSCALL_64_after_hwframe"), SYSCALL("do_syscall_64"),
	SYSCALL("x64_sys_call"), SYSCALL("syscall_exit_to_user_mode"), SYSCALL("syscall_exit_to_user_mode_prepare"),
	SYSCALL("exit_to_user_mode_prepare"), SYSCALL("exit_to_user_mode_loop"), SYSCALL("syscall_trace_enter"),
	SYSCALL("__fget_light"), SYSCALL("fdget"), SYSCALL("__fdget"), SYSCALL("__fdget_pos"), SYSCALL("fdget_pos"),
	SYSCALL("__fget_files"), SYSCALL("fput"), SYSCALL("sockfd_lookup_light"), SYSCALL("import_iovec"),
	SYSCALL("__import_iovec"), SYSCALL("import_single_range"), SYSCALL("copy_msghdr_from_user"),
	SYSCALL("__copy_msghdr"), SYSCALL("syscall_enter_from_user_mode"), SYSCALL("ksys_read"),
	SYSCALL("ksys_write"), SYSCALLS("__x64_sys_"), SYSCALLS("__do_sys_"), SYSCALLS("__se_sys_"),
	SYSCALLS("__sys_"), SYSCALLS("___sys_"), SYSCALLS("entry_SYSCALL"), SYSCALLS("do_syscall"),
	/*
	 * the tracer's own programs; the trampoline an fentry/fexit program is called from is passed
	 * by, as it also calls the traced function (a copy under fexit'd skb_copy_datagram_iter()
	 * has it between the copy and tcp_recvmsg_locked())
	 */
	JITED("bpf_prog_"), JITED("bpf_trampoline_"), KINDS("__bpf_trace_", COST_TRACER),
	KINDS("bpf_trace_run", COST_TRACER), KINDS("__bpf_prog_enter", COST_TRACER),
	KINDS("__bpf_prog_exit", COST_TRACER), KINDS("bpf_", COST_TRACER), KINDS("__bpf", COST_TRACER),
	KINDS("htab_", COST_TRACER), KINDS("__htab", COST_TRACER), KINDS("array_map_", COST_TRACER),
	KINDS("pcpu_freelist", COST_TRACER), KINDS("copy_from_kernel_nofault", COST_TRACER),
	KINDS("uprobe_", COST_TRACER), KINDS("handle_swbp", COST_TRACER), KINDS("perf_trace_", COST_TRACER),
	/* page faults */
	KINDS("asm_exc_page_fault", COST_FAULT), KINDS("exc_page_fault", COST_FAULT),
	KINDS("do_user_addr_fault", COST_FAULT), KINDS("handle_mm_fault", COST_FAULT),
	KINDS("__handle_mm_fault", COST_FAULT), KINDS("do_anonymous_page", COST_FAULT),
	KINDS("do_fault", COST_FAULT), KINDS("do_wp_page", COST_FAULT), KINDS("fault_in_", COST_FAULT),
	/* the scheduler */
	KINDS("__schedule", COST_SCHED), KINDS("schedule", COST_SCHED), KINDS("preempt_schedule", COST_SCHED), KINDS("finish_task_switch", COST_SCHED),
	KINDS("try_to_wake_up", COST_SCHED), KINDS("__wake_up", COST_SCHED), KINDS("wake_up", COST_SCHED),
	KINDS("psi_", COST_SCHED), KINDS("ttwu_", COST_SCHED), KINDS("enqueue_", COST_SCHED),
	KINDS("dequeue_", COST_SCHED), KINDS("pick_next_", COST_SCHED), KINDS("update_curr", COST_SCHED),
	KINDS("__switch_to", COST_SCHED), KINDS("switch_mm", COST_SCHED), KINDS("select_task_rq", COST_SCHED),
	KINDS("set_next_entity", COST_SCHED), KINDS("put_prev_", COST_SCHED), KINDS("update_load_avg", COST_SCHED),
	KINDS("newidle_balance", COST_SCHED), KINDS("sched_balance", COST_SCHED),
	KINDS("autoremove_wake_function", COST_SCHED), KINDS("default_wake_function", COST_SCHED),
	KINDS("prepare_to_wait", COST_SCHED), KINDS("finish_wait", COST_SCHED), KINDS("futex_", COST_SCHED),
	KINDS("do_futex", COST_SCHED), KINDS("hrtimer_", COST_SCHED), KINDS("do_nanosleep", COST_SCHED),
	KINDS("check_preempt", COST_SCHED), KINDS("resched_", COST_SCHED), KINDS("wait_woken", COST_SCHED),
	/* memory: allocating and freeing */
	KINDS("kmem_cache_", COST_ALLOC), KINDS("__kmem_cache", COST_ALLOC), KINDS("kmalloc", COST_ALLOC),
	KINDS("__kmalloc", COST_ALLOC), KINDS("kfree", COST_ALLOC), KINDS("__alloc_pages", COST_ALLOC),
	KINDS("alloc_pages", COST_ALLOC), KINDS("get_page_from_freelist", COST_ALLOC),
	KINDS("free_unref_", COST_ALLOC), KINDS("__free_pages", COST_ALLOC), KINDS("free_pages", COST_ALLOC),
	KINDS("page_frag_", COST_ALLOC), KINDS("__page_frag", COST_ALLOC), KINDS("rmqueue", COST_ALLOC),
	KINDS("___slab_alloc", COST_ALLOC), KINDS("__slab_free", COST_ALLOC), KINDS("slab_", COST_ALLOC),
	KINDS("__put_page", COST_ALLOC), KINDS("put_page", COST_ALLOC), KINDS("folio_alloc", COST_ALLOC),
	KINDS("vma_alloc", COST_ALLOC), KINDS("__folio_put", COST_ALLOC), KINDS("free_pcppages", COST_ALLOC),
	KINDS("__alloc_frozen", COST_ALLOC), KINDS("alloc_frozen", COST_ALLOC), KINDS("__free_frozen", COST_ALLOC),
	KINDS("free_frozen", COST_ALLOC), KINDS("uncharge_", COST_ALLOC), KINDS("page_counter_", COST_ALLOC),
	KINDS("memcg1_", COST_ALLOC), KINDS("__mem_cgroup", COST_ALLOC), KINDS("allocate_slab", COST_ALLOC),
	KINDS("kvmalloc", COST_ALLOC), KINDS("kvfree", COST_ALLOC), KINDS("mod_memcg", COST_ALLOC),
	KINDS("__mod_memcg", COST_ALLOC), KINDS("mem_cgroup_", COST_ALLOC), KINDS("memcg_", COST_ALLOC),
	KINDS("__memcg", COST_ALLOC), KINDS("obj_cgroup_", COST_ALLOC), KINDS("refill_obj_stock", COST_ALLOC),
	/* the protocol stack and the devices */
	KINDS("tcp", COST_NET), KINDS("__tcp", COST_NET), KINDS("inet", COST_NET), KINDS("__inet", COST_NET),
	KINDS("ip_", COST_NET), KINDS("__ip_", COST_NET), KINDS("ip6", COST_NET), KINDS("__ip6", COST_NET),
	KINDS("ipv6_", COST_NET), KINDS("ipv4_", COST_NET), KINDS("udp", COST_NET), KINDS("__udp", COST_NET),
	KINDS("raw_", COST_NET), KINDS("sk_", COST_NET), KINDS("__sk_", COST_NET), KINDS("sock_", COST_NET),
	KINDS("__sock_", COST_NET), KINDS("skb_", COST_NET), KINDS("__skb_", COST_NET), KINDS("kfree_skb", COST_NET),
	KINDS("consume_skb", COST_NET), KINDS("__kfree_skb", COST_NET), KINDS("alloc_skb", COST_NET),
	KINDS("__alloc_skb", COST_NET), KINDS("build_skb", COST_NET), KINDS("napi_", COST_NET),
	KINDS("__napi_", COST_NET), KINDS("net_", COST_NET), KINDS("__net_", COST_NET), KINDS("netif_", COST_NET),
	KINDS("__netif_", COST_NET), KINDS("dev_", COST_NET), KINDS("__dev_", COST_NET),
	KINDS("loopback_", COST_NET), KINDS("veth_", COST_NET), KINDS("virtnet_", COST_NET),
	KINDS("e1000", COST_NET), KINDS("nf_", COST_NET), KINDS("__nf_", COST_NET), KINDS("neigh_", COST_NET),
	KINDS("validate_xmit", COST_NET), KINDS("sch_", COST_NET), KINDS("qdisc_", COST_NET),
	KINDS("__qdisc", COST_NET), KINDS("pfifo_", COST_NET), KINDS("fq_codel", COST_NET), KINDS("unix_", COST_NET),
	KINDS("release_sock", COST_NET), KINDS("lock_sock", COST_NET), KINDS("__release_sock", COST_NET),
	KINDS("__lock_sock", COST_NET), KINDS("gro_", COST_NET), KINDS("process_backlog", COST_NET),
	KINDS("csum_partial", COST_NET), KINDS("do_csum", COST_NET), KINDS("ipt_", COST_NET),
	KINDS("ip6t_", COST_NET), KINDS("rt_", COST_NET), KINDS("fib", COST_NET), KINDS("dst_", COST_NET),
	KINDS("___sk", COST_NET), KINDS("bictcp", COST_NET), KINDS("cubictcp", COST_NET),
	KINDS("security_sock", COST_NET), KINDS("security_socket", COST_NET), KINDS("sockfs_", COST_NET),
	/* VFS, the page cache, file systems and pipes */
	KINDS("vfs_", COST_FS), KINDS("ext4_", COST_FS), KINDS("filemap_", COST_FS), KINDS("__filemap_", COST_FS),
	KINDS("folio_", COST_FS), KINDS("__folio_", COST_FS), KINDS("generic_file_", COST_FS),
	KINDS("generic_write_", COST_FS), KINDS("iomap_", COST_FS), KINDS("jbd2_", COST_FS),
	KINDS("pipe_", COST_FS), KINDS("anon_pipe_", COST_FS), KINDS("block_", COST_FS), KINDS("__block_", COST_FS),
	KINDS("page_cache_", COST_FS), KINDS("pagecache_", COST_FS), KINDS("find_get_", COST_FS),
	KINDS("find_lock_", COST_FS), KINDS("touch_atime", COST_FS), KINDS("atime_needs_update", COST_FS),
	KINDS("file_update_time", COST_FS), KINDS("file_modified", COST_FS), KINDS("fsnotify", COST_FS),
	KINDS("__fsnotify", COST_FS), KINDS("rw_verify_area", COST_FS), KINDS("new_sync_", COST_FS),
	KINDS("mark_buffer_dirty", COST_FS), KINDS("__mark_inode_dirty", COST_FS), KINDS("balance_dirty", COST_FS),
	KINDS("xas_", COST_FS), KINDS("xa_", COST_FS), KINDS("__xa_", COST_FS), KINDS("tmpfs_", COST_FS),
	KINDS("shmem_", COST_FS), KINDS("mpage_", COST_FS), KINDS("readahead", COST_FS),
	KINDS("page_cache_ra", COST_FS), KINDS("ondemand_readahead", COST_FS), KINDS("security_file", COST_FS),
};

/* The class a site's function is of where it does not copy. */
static __u32 site_kind(int site)
{
	switch (site) {
	case SITE_DEFERRED_COPY:
		/* skb_copy_ubufs() exists to copy; its own body is the copy's (the memcpy inlined or not) */
		return SITE_DEFERRED_COPY;
	case SITE_FILE_READ_COPY:
	case SITE_FILE_WRITE_COPY:
	case SITE_KERNEL_COPY:
	case SITE_PIPE_WRITE_COPY:
	case SITE_PIPE_READ_COPY:
		return COST_FS;
	default:
		return COST_NET;
	}
}

#define NR_COST_RULES (sizeof(cost_rules) / sizeof(cost_rules[0]))

/*
 * The names a function is known by: each site's own functions (from the probe table) first, then
 * the exact rules, then the prefixes, in the table's order; the first that matches gives the
 * word. Indexed by a hash of the first three bytes (every rule has three or more), so that each of
 * kallsyms' 100,000 names or more is held to two names on average: by the first two, names that
 * begin "__" met 79 rules each, 46 on average.
 */
#define NAME_KEY 3
#define NAME_BUCKETS 4096
#define MAX_NAMES (NR_COST_RULES + NR_SITES * MAX_COST_FNS)
struct known_name {
	const char *name;
	unsigned short len;
	bool prefix;
	__u32 word;
};
static struct known_name known[MAX_NAMES];
static unsigned short name_order[MAX_NAMES], name_start[NAME_BUCKETS + 1];
static unsigned nknown;

static unsigned name_bucket(const char *name)
{
	return (((unsigned char)name[0] * 131u + (unsigned char)name[1]) * 131u + (unsigned char)name[2]) %
	       NAME_BUCKETS;
}

static void add_known(const char *name, bool prefix, __u32 word)
{
	size_t len = strlen(name);

	if (len < NAME_KEY) {	/* the table's own error: such a rule would never match */
		fprintf(stderr, "zctrace: cost rule '%s' is shorter than %d bytes\n", name, NAME_KEY);
		abort();
	}
	known[nknown++] = (struct known_name){ name, (unsigned short)len, prefix, word };
}

static void index_names(void)
{
	unsigned short fill[NAME_BUCKETS];

	if (nknown)
		return;
	for (int s = 0; s < NR_SITES; s++)
		for (int f = 0; f < MAX_COST_FNS && probe_sites[s].cost_fns[f]; f++)
			add_known(probe_sites[s].cost_fns[f], false,
				  s == SITE_FILE_WRITE_COPY ? cost_word(ROLE_WRITE_SITE, s, COST_FS)
							    : cost_word(ROLE_SITE, s, site_kind(s)));
	for (int prefix = 0; prefix < 2; prefix++)
		for (size_t i = 0; i < NR_COST_RULES; i++)
			if (cost_rules[i].prefix == prefix)
				add_known(cost_rules[i].name, prefix, cost_word(cost_rules[i].role, 0, cost_rules[i].cls));
	for (unsigned i = 0; i < nknown; i++)
		name_start[name_bucket(known[i].name) + 1]++;
	for (int b = 0; b < NAME_BUCKETS; b++)
		name_start[b + 1] += name_start[b];
	memcpy(fill, name_start, sizeof(fill));
	for (unsigned i = 0; i < nknown; i++)
		name_order[fill[name_bucket(known[i].name)]++] = i;
}

__u32 cost_word_of_name(const char *full)
{
	size_t len = strcspn(full, ".");
	unsigned b;

	if (len < NAME_KEY)
		return 0;
	index_names();
	b = name_bucket(full);
	for (unsigned k = name_start[b]; k < name_start[b + 1]; k++) {
		const struct known_name *kn = &known[name_order[k]];

		if (kn->prefix ? kn->len <= len && !memcmp(kn->name, full, kn->len)
			       : kn->len == len && !memcmp(kn->name, full, len))
			return kn->word;
	}
	return 0;
}

/* the kinds' names in reports, JSON keys and sweep columns (zctrace.h's enum cost_class says what each is) */
static const char *const kind_names[NR_COST_CLASSES - NR_SITES] = {
	[COST_COPY_OTHER - NR_SITES] = "other_copies",
	[COST_ZEROCOPY - NR_SITES] = "zerocopy",
	[COST_PAGE_REF - NR_SITES] = "page_refs",
	[COST_SYSCALL - NR_SITES] = "syscall",
	[COST_NET - NR_SITES] = "net",
	[COST_FS - NR_SITES] = "fs",
	[COST_ALLOC - NR_SITES] = "alloc",
	[COST_FAULT - NR_SITES] = "faults",
	[COST_SCHED - NR_SITES] = "sched",
	[COST_TRACER - NR_SITES] = "tracer",
	[COST_KERNEL_OTHER - NR_SITES] = "kernel_other",
	[COST_USER - NR_SITES] = "user",
	[COST_DISPLACED - NR_SITES] = "displaced",
};

const char *cost_class_name(int cls)
{
	if (cls >= 0 && cls < NR_SITES)
		return site_name(cls);
	return cls >= NR_SITES && cls < NR_COST_CLASSES ? kind_names[cls - NR_SITES] : "?";
}

/* The function table, built once a process (ktable.h), kept for the refills of a sweep. */
static struct cost_range *table;
static unsigned ntable;
static enum ktable_source table_source;
static unsigned ntable_bpf;	/* the BPF functions among them */
static __u64 period_ns;		/* the sampling period attached */

/* The role word of a kallsyms symbol: only text symbols can be a frame's function. */
static __u32 word_of_ksym(const char *name, char type)
{
	return type == 't' || type == 'T' ? cost_word_of_name(name) : 0;
}

/* What names the rules: every name the walk knows, whether a prefix, and its word. */
static __u64 rules_hash(void)
{
	__u64 h = KTABLE_HASH_INIT;

	index_names();
	for (unsigned i = 0; i < nknown; i++) {
		h = ktable_hash(h, known[i].name, known[i].len + 1);
		h = ktable_hash(h, &known[i].prefix, sizeof(known[i].prefix));
		h = ktable_hash(h, &known[i].word, sizeof(known[i].word));
	}
	return h;
}

/* The table: the kernel's functions with a role, and the JITed BPF programs (ktable.h). */
static int build_table(char *why, size_t n)
{
	struct cost_range *built;
	unsigned nbuilt;
	int err = ktable_build(&built, &nbuilt, &ntable_bpf, COST_MAX_RANGES, word_of_ksym, cost_word(ROLE_BPF, 0, COST_TRACER),
			       rules_hash(), &table_source, why, n);

	if (err)
		return err;
	free(table);
	table = built;
	ntable = nbuilt;
	return 0;
}

/* The user-space copy routines (usercopy.h) the program knows, or why none: cost_table_fill(). */
static struct user_copy_fn ufns[USER_COPY_FNS];
static __u8 ulib[USER_COPY_BUILD_ID];
static int nufns;
static char user_why[200];

static void find_user_copies(void)
{
	char why[160];
	int n;

	nufns = 0;
	memset(ufns, 0, sizeof(ufns));
	memset(ulib, 0, sizeof(ulib));
	n = usercopy_find(ufns, ulib, why, sizeof(why));
	if (n < 0) {
		snprintf(user_why, sizeof(user_why), "not measured: %s", why);
		return;
	}
	nufns = n;
	user_why[0] = '\0';
}

/*
 * Writes the table into @obj's map, then its length, so the walk never reads a half-filled table:
 * in one call where the kernel takes a batch (5.6), as 10,000 calls cost seconds in an emulator.
 */
static int fill_map(struct zctrace_bpf *obj)
{
	int fd = bpf_map__fd(obj->maps.cost_ranges);
	__u32 count = ntable, *keys;

	obj->bss->cost_nranges = 0;
	keys = calloc(ntable ? ntable : 1, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (__u32 i = 0; i < ntable; i++)
		keys[i] = i;
	if (ntable && bpf_map_update_batch(fd, keys, table, &count, NULL)) {
		for (__u32 i = 0; i < ntable; i++)
			if (bpf_map_update_elem(fd, &keys[i], &table[i], BPF_ANY)) {
				int err = -errno;

				free(keys);
				return err;
			}
	}
	free(keys);
	obj->bss->cost_nranges = ntable;
	memcpy(obj->bss->user_copy_fns, ufns, sizeof(ufns));
	memcpy(obj->bss->user_copy_lib, ulib, sizeof(ulib));
	obj->bss->user_copy_nfns = nufns;
	return 0;
}

#define COST_MAX_CPUS 1024

/* The online CPUs (/sys/devices/system/cpu/online: "0-3,8") into @online; 0 or a negative errno. */
static int online_cpus(bool online[COST_MAX_CPUS])
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	unsigned a, b;
	int c, err = 0;

	if (!f)
		return -errno;
	memset(online, 0, COST_MAX_CPUS * sizeof(online[0]));
	while (fscanf(f, "%u", &a) == 1) {
		b = a;
		c = fgetc(f);
		if (c == '-') {
			if (fscanf(f, "%u", &b) != 1) {
				err = -EINVAL;
				break;
			}
			c = fgetc(f);
		}
		for (unsigned cpu = a; cpu <= b && cpu < COST_MAX_CPUS; cpu++)
			online[cpu] = true;
		if (c != ',')
			break;
	}
	fclose(f);
	return err;
}

static struct bpf_link *links[COST_MAX_CPUS];
static int nlinks;
static unsigned attached_hz;

void cost_detach(void)
{
	for (int i = 0; i < nlinks; i++) {
		bpf_link__destroy(links[i]);
		links[i] = NULL;
	}
	nlinks = 0;
}

/* Whether a function table went to a map: the sampler's, or timed copies' where it is off. */
static bool table_filled;

int cost_table_fill(struct zctrace_bpf *obj, char *why, size_t n)
{
	int err;

	why[0] = '\0';
	find_user_copies();
	if ((err = build_table(why, n)) || (err = fill_map(obj))) {
		if (!why[0])
			snprintf(why, n, "cannot fill the sampler's function table: %s", strerror(-err));
		return err;
	}
	table_filled = true;
	return 0;
}

int cost_attach(struct zctrace_bpf *obj, struct bpf_program *prog, unsigned hz, char *why, size_t n)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_CPU_CLOCK };
	bool online[COST_MAX_CPUS];
	int err;

	cost_detach();
	if (!hz || hz > COST_MAX_HZ) {
		snprintf(why, n, "sampling rate %u Hz out of range (1-%u)", hz, COST_MAX_HZ);
		return -EINVAL;
	}
	attr.sample_period = 1000000000ULL / hz;
	period_ns = attr.sample_period;
	err = online_cpus(online);
	if (err) {
		snprintf(why, n, "cannot read the online CPUs: %s", strerror(-err));
		return err;
	}
	for (int cpu = 0; cpu < COST_MAX_CPUS; cpu++) {
		int fd;

		if (!online[cpu])
			continue;
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			snprintf(why, n, "perf_event_open cpu-clock on CPU %d: %s", cpu, strerror(errno));
			break;
		}
		links[nlinks] = bpf_program__attach_perf_event(prog, fd);
		if (!links[nlinks]) {
			err = -errno;
			close(fd);
			snprintf(why, n, "attach to cpu-clock on CPU %d: %s", cpu, strerror(errno));
			break;
		}
		nlinks++;
	}
	if (err)
		cost_detach();
	else
		attached_hz = hz;
	return err;
}

int cost_parse_hz(const char *arg, unsigned lo, unsigned *hz)
{
	char *end;
	long v;

	if (!arg) {
		*hz = COST_DEFAULT_HZ;
		return 0;
	}
	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < lo || v > COST_MAX_HZ)
		return -EINVAL;
	*hz = v;
	return 0;
}

int cost_refill(struct zctrace_bpf *obj)
{
	return table_filled ? fill_map(obj) : 0;
}

/* "not measured: " and the probe's refusal @off (its "not attached: " left out) into @why. */
static void not_measured(char *why, size_t n, const char *off)
{
	if (!strncmp(off, "not attached: ", 14))
		off += 14;
	snprintf(why, n, "not measured: %s", off);
}

/*
 * The one entry of per-CPU array @map, every CPU's (@size bytes each), in memory the caller frees;
 * NULL with why in @why.
 */
static void *read_per_cpu(const struct bpf_map *map, size_t size, int ncpu, char *why, size_t n)
{
	__u32 zero = 0;
	void *per = ncpu > 0 ? calloc(ncpu, size) : NULL;

	if (!per || bpf_map_lookup_elem(bpf_map__fd(map), &zero, per)) {
		snprintf(why, n, "not measured: cannot read BPF map %s: %s", bpf_map__name(map), strerror(errno));
		free(per);
		return NULL;
	}
	return per;
}

/*
 * Whether user_copy's samples say what the program's copies took, else why not, with its samples
 * given back to user: too many user-mode samples unread (the unread may be copies or not, and
 * user_copy's interval reaches over them: costs.c), or none of those read in the library of the
 * routines known (the program copies with another: a container's libc, a static binary's).
 */
static void user_copies_judged(struct cost_figures *c)
{
	__u64 read = c->user_phase - c->user_unread;

	c->user_measured = false;
	if (!c->user_fns)
		return;
	if (c->user_unread * 2 > c->user_phase)
		snprintf(c->user_why, sizeof(c->user_why), "not measured: the kernel could not read the file of %llu "
			 "of the %llu user-mode samples (on PREEMPT_RT it cannot in the sampling interrupt)",
			 (unsigned long long)c->user_unread, (unsigned long long)c->user_phase);
	else if (read && !c->user_lib)
		snprintf(c->user_why, sizeof(c->user_why), "not measured: none of the %llu user-mode samples read was "
			 "in the libc zctrace knows (the program's is another: a container's, a static binary's)",
			 (unsigned long long)read);
	else
		c->user_measured = true;
	if (!c->user_measured) {
		c->all[COST_USER] += c->all[SITE_USER_COPY];
		c->phase[COST_USER] += c->phase[SITE_USER_COPY];
		c->all[SITE_USER_COPY] = c->phase[SITE_USER_COPY] = 0;
	}
}

void cost_read(struct zctrace_bpf *obj, struct cost_figures *c, const char *why_off)
{
	int ncpu = libbpf_num_possible_cpus();
	struct cost_cpu *per;

	memset(c, 0, sizeof(*c));
	if (!nlinks) {
		not_measured(c->why, sizeof(c->why), why_off ? why_off : "the sampler is not attached");
		return;
	}
	per = read_per_cpu(obj->maps.cost_cpus, sizeof(*per), ncpu, c->why, sizeof(c->why));
	if (!per)
		return;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		for (int k = 0; k < NR_COST_CLASSES; k++) {
			c->all[k] += per[cpu].all[k];
			c->phase[k] += per[cpu].phase[k];
		}
		c->stack_errors += per[cpu].stack_errors;
		c->exiting += per[cpu].exiting;
		c->user_phase += per[cpu].user_phase;
		c->user_unread += per[cpu].user_unread;
		c->user_lib += per[cpu].user_lib;
	}
	free(per);
	c->measured = true;
	c->event = "cpu-clock";
	c->hz = attached_hz;
	c->period_ns = period_ns;
	c->nfuncs = ntable;
	c->nfuncs_bpf = ntable_bpf;
	c->funcs_from = table_source == KTABLE_CACHED ? "cache" : "kallsyms";
	c->user_fns = nufns;
	snprintf(c->user_why, sizeof(c->user_why), "%s", user_why);
	user_copies_judged(c);
}

void cost_interval(__u64 k, double *lo, double *hi)
{
	/* the score interval of a Poisson count at 95%: k + z^2/2 -+ z sqrt(k + z^2/4) */
	const double z = 1.959964;
	double mid = k + z * z / 2, half = z * sqrt(k + z * z / 4);

	*lo = mid - half > 0 ? mid - half : 0;
	*hi = mid + half;
}

void copy_time_read(struct zctrace_bpf *obj, struct copy_time_figures *t, bool asked, const char *why_off)
{
	int ncpu = libbpf_num_possible_cpus();
	struct copy_time_cpu *per;

	memset(t, 0, sizeof(*t));
	t->asked = asked;
	if (why_off) {
		not_measured(t->why, sizeof(t->why), why_off);
		return;
	}
	per = read_per_cpu(obj->maps.copy_times, sizeof(*per), ncpu, t->why, sizeof(t->why));
	if (!per)
		return;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		for (int k = 0; k < NR_COST_CLASSES; k++) {
			t->ns[k] += per[cpu].ns[k];
			t->calls[k] += per[cpu].calls[k];
		}
		t->switched += per[cpu].switched;
		t->unmatched += per[cpu].unmatched;
		t->too_deep += per[cpu].too_deep;
	}
	free(per);
	t->measured = true;
}
