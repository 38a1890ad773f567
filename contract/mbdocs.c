/*
 * What each microbenchmark's options mean, in one place: the workload's --help prints it, and
 * zctrace prints it too (zctrace list, and the manual page's blocks made from it).
 */
#include <string.h>
#include "contract/mbdocs.h"

const struct mb_opt_doc mb_opt_docs[] = {
	/* timer */
	{ "timer", "clock", "all|rdtsc|rdtscp|clock_gettime", "which clock to read (default all)" },
	{ "timer", "reps", "N", "pairs of reads kept (default 100000)" },
	{ "timer", "warmup", "N", "pairs read first and dropped (default 1000)" },
	{ "timer", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	/* loop */
	{ "loop", "iters", "N", "iterations per sample (default 1000000)" },
	{ "loop", "reps", "N", "samples kept (default 200)" },
	{ "loop", "warmup", "N", "samples run first and dropped (default 10)" },
	{ "loop", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	/* call */
	{ "call", "iters", "N", "calls per sample (default 1000000)" },
	{ "call", "reps", "N", "samples kept (default 100)" },
	{ "call", "warmup", "N", "samples run first and dropped (default 5)" },
	{ "call", "max-args", "N", "time calls with 0 up to this many arguments, 0..7 (default 7)" },
	{ "call", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	/* syscall */
	{ "syscall", "call", "all|syscall|getpid|time|clock_gettime", "which call to time (default all)" },
	{ "syscall", "iters", "N", "calls per sample (default 10000)" },
	{ "syscall", "reps", "N", "samples kept (default 200)" },
	{ "syscall", "warmup", "N", "samples run first and dropped (default 10)" },
	{ "syscall", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	{ "syscall", "assume", "auto|kernel|vdso", "claim the calls enter the kernel (kernel), or "
	  "never do (vdso); default: what each call is known to do" },
	/* proc-create */
	{ "proc-create", "way", "all|fork|exec|spawn", "which way to create processes (default all)" },
	{ "proc-create", "iters", "N", "processes per sample (default 10)" },
	{ "proc-create", "reps", "N", "samples kept (default 50)" },
	{ "proc-create", "warmup", "N", "samples run first and dropped (default 2)" },
	{ "proc-create", "cpu", "CPU", "pin to this CPU, children too; -1 for none (default 0)" },
	/* thread-create */
	{ "thread-create", "way", "all|pthread|clone", "which way to create threads (default all)" },
	{ "thread-create", "iters", "N", "threads per sample (default 100)" },
	{ "thread-create", "reps", "N", "samples kept (default 100)" },
	{ "thread-create", "warmup", "N", "samples run first and dropped (default 2)" },
	{ "thread-create", "cpu", "CPU", "pin to this CPU, threads too; -1 for none (default 0)" },
	/* ctxswitch */
	{ "ctxswitch", "way", "all|process|thread", "which pair ping-pongs (default all); the pipe "
	  "alone is always timed" },
	{ "ctxswitch", "iters", "N", "round trips per sample (default 500)" },
	{ "ctxswitch", "reps", "N", "samples kept (default 100)" },
	{ "ctxswitch", "warmup", "N", "samples run first and dropped (default 2)" },
	{ "ctxswitch", "cpu", "CPU", "pin both sides to this CPU (default 0); -1 lets them run on "
	  "two CPUs: no switch count is claimed then" },
	/* memlat */
	{ "memlat", "min-size", "BYTES", "smallest working set, a power of two (default 4K)" },
	{ "memlat", "max-size", "BYTES", "largest working set: sizes double from --min-size up to "
	  "this (default 512M)" },
	{ "memlat", "iters", "N", "loads per sample (default 100000)" },
	{ "memlat", "reps", "N", "samples kept per size (default 15)" },
	{ "memlat", "warmup", "N", "chain passes run first, each at most 2x the largest cache "
	  "(default 1)" },
	{ "memlat", "hugepages", "", "back the buffer with 2 MiB pages (MADV_HUGEPAGE); default 4 "
	  "KiB pages (MADV_NOHUGEPAGE)" },
	{ "memlat", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	/* membw */
	{ "membw", "size", "BYTES", "bytes of each buffer, a multiple of 8 (default 256M)" },
	{ "membw", "kind", "all|memcpy|read|write", "which pass to time (default all)" },
	{ "membw", "reps", "N", "passes kept per kind (default 50)" },
	{ "membw", "warmup", "N", "passes run first and dropped (default 2)" },
	{ "membw", "no-prefault", "", "leave the buffers unfaulted: the timed passes then fault, "
	  "and the no-fault assumption fails (shows the check bites)" },
	{ "membw", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	/* pagefault */
	{ "pagefault", "file-size", "BYTES", "bytes of the scratch file, one touch per page "
	  "(default 64M)" },
	{ "pagefault", "dir", "PATH", "directory of the scratch file, on a disk (default /var/tmp)" },
	{ "pagefault", "advice", "random|normal", "madvise before touching: random turns readahead "
	  "off (default); normal lets it read neighbours in" },
	{ "pagefault", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	/* tcp-rtt */
	{ "tcp-rtt", "size", "BYTES", "bytes of each message, each way (default 32)" },
	{ "tcp-rtt", "iters", "N", "round trips per sample (default 500)" },
	{ "tcp-rtt", "reps", "N", "samples kept (default 100)" },
	{ "tcp-rtt", "warmup", "N", "samples run first and dropped (default 10)" },
	{ "tcp-rtt", "cpu", "CPU", "pin the client to this CPU, -1 for none (default 0)" },
	{ "tcp-rtt", "server-cpu", "CPU", "pin the server to this CPU, -1 for none (default 0)" },
	{ "tcp-rtt", "peer", "thread|process|netns", "where the server runs: a thread or a child "
	  "process over loopback, or a child process in its own network namespace over veth (under "
	  "zctrace run); default thread" },
	/* tcp-bw */
	{ "tcp-bw", "size", "BYTES", "bytes per write and per read (default 64K)" },
	{ "tcp-bw", "bytes", "BYTES", "bytes per sample, rounded up to a multiple of --size "
	  "(default 32M)" },
	{ "tcp-bw", "reps", "N", "samples kept (default 50)" },
	{ "tcp-bw", "warmup", "N", "samples run first and dropped (default 5)" },
	{ "tcp-bw", "sockbuf", "BYTES", "SO_SNDBUF/SO_RCVBUF to set, 0 = the kernel's autotuning "
	  "(default 0)" },
	{ "tcp-bw", "cpu", "CPU", "pin the receiving client to this CPU, -1 for none (default 0)" },
	{ "tcp-bw", "server-cpu", "CPU", "pin the sending server to this CPU, -1 for none (default 0)" },
	{ "tcp-bw", "peer", "thread|process|netns", "where the server runs: a thread or a child "
	  "process over loopback, or a child process in its own network namespace over veth (under "
	  "zctrace run); default thread" },
	/* tcp-connect */
	{ "tcp-connect", "iters", "N", "connections per sample (default 50)" },
	{ "tcp-connect", "reps", "N", "samples kept (default 38)" },
	{ "tcp-connect", "warmup", "N", "samples run first and dropped (default 2)" },
	{ "tcp-connect", "close", "fin|rst", "how the client closes: fin (a normal close, as "
	  "lat_connect; the client keeps TIME_WAIT) or rst (SO_LINGER 0: a reset, no TIME_WAIT); "
	  "default fin" },
	{ "tcp-connect", "cpu", "CPU", "pin the client to this CPU, -1 for none (default 0)" },
	{ "tcp-connect", "server-cpu", "CPU", "pin the server to this CPU, -1 for none (default 0)" },
	{ "tcp-connect", "peer", "thread|process|netns", "where the server runs: a thread or a "
	  "child process over loopback, or a child process in its own network namespace over veth "
	  "(under zctrace run); default thread" },
	/* contention */
	{ "contention", "max-procs", "N", "readers at most; N runs from 1 up to it (default 8)" },
	{ "contention", "file-size", "BYTES", "size of each reader's file (default 1M)" },
	{ "contention", "block", "BYTES", "bytes per pread() (default 64K)" },
	{ "contention", "reps", "N", "rounds kept per N, each with N fresh readers (default 20)" },
	{ "contention", "warmup", "N", "rounds run first and dropped, per N (default 1)" },
	{ "contention", "dir", "PATH", "where to make the files, unlinked at once (default $TMPDIR "
	  "or /var/tmp)" },
	/* filecache */
	{ "filecache", "min-size", "BYTES", "smallest file (default 1M)" },
	{ "filecache", "max-size", "BYTES", "largest file; sizes double up to it (default 256M; "
	  "raise it past RAM to find the page cache's size)" },
	{ "filecache", "block", "BYTES", "bytes per read() (default 64K)" },
	{ "filecache", "bytes", "BYTES", "bytes re-read per size, which bounds the samples (default 1G)" },
	{ "filecache", "reps", "N", "samples kept per size, at most (default 50)" },
	{ "filecache", "warmup", "N", "re-reads run first and dropped, per size (default 1)" },
	{ "filecache", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	{ "filecache", "dir", "PATH", "where to make the files, unlinked at once (default $TMPDIR "
	  "or /var/tmp)" },
	/* fileread */
	{ "fileread", "pattern", "both|seq|random", "which reads to time (default both)" },
	{ "fileread", "block", "BYTES", "bytes per read, a multiple of 4K (default 4K)" },
	{ "fileread", "file-size", "BYTES", "size of the file (default 64M)" },
	{ "fileread", "reads", "N", "random reads per sample, distinct blocks; at most the file's "
	  "blocks (default 2048)" },
	{ "fileread", "reps", "N", "samples kept per pattern (default 5)" },
	{ "fileread", "warmup", "N", "samples run first and dropped (default 1)" },
	{ "fileread", "cache", "cold|warm", "cold: the file's pages dropped before every sample; "
	  "warm: all in the page cache (default cold)" },
	{ "fileread", "direct", "", "read with O_DIRECT, past the page cache" },
	{ "fileread", "claim", "auto|cold|warm|direct", "what the reads are claimed to do: cold "
	  "(miss and read every page in), warm (bring in none), direct (bypass the cache); "
	  "default: what --cache and --direct set" },
	{ "fileread", "cpu", "CPU", "pin to this CPU, -1 for none (default 0)" },
	{ "fileread", "dir", "PATH", "where to make the file, unlinked at once (default $TMPDIR or "
	  "/var/tmp)" },
};
const int mb_nr_opt_docs = sizeof(mb_opt_docs) / sizeof(mb_opt_docs[0]);

const struct mb_opt_doc *mb_opt_doc(const char *workload, const char *name)
{
	for (int i = 0; i < mb_nr_opt_docs; i++)
		if (!strcmp(mb_opt_docs[i].workload, workload) && !strcmp(mb_opt_docs[i].name, name))
			return &mb_opt_docs[i];
	return NULL;
}
