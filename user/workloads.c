/* Built-in workloads: what each one does and what its copy ledger must show. */
#include <string.h>
#include "wl.h"
#include "workloads.h"

/* Sites a file workload never touches: no bytes there is part of its expected ledger. */
#define NO_FILE_COPIES \
	[SITE_FILE_READ_COPY] = EXP_ZERO, [SITE_FILE_WRITE_COPY] = EXP_ZERO, [SITE_KERNEL_COPY] = EXP_ZERO
#define NO_NET_COPIES \
	[SITE_SEND_COPY] = EXP_ZERO, [SITE_ZC_PIN] = EXP_ZERO, [SITE_SPLICE_REF] = EXP_ZERO, \
	[SITE_DEFERRED_COPY] = EXP_ZERO, [SITE_RECV_COPY] = EXP_ZERO

const struct workload_def workload_defs[] = {
	{ "tcp-twocopy",
	  "memcpy 8 fields into one buffer (USDT user_copy), then send() over TCP",
	  "user_copy = send_copy = recv_copy = payload; no pins, no page references",
	  { [SITE_USER_COPY] = EXP_SENT, [SITE_SEND_COPY] = EXP_SENT, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_ZERO, [SITE_DEFERRED_COPY] = EXP_ZERO,
	    [SITE_RECV_COPY] = EXP_RECEIVED }, .net = true, .options = WL_OPT_TCP },
	{ "tcp-onecopy",
	  "sendmsg() with an 8-entry iovec over the fields, over TCP",
	  "send_copy = recv_copy = payload; user_copy = 0",
	  { [SITE_USER_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_SENT, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_ZERO, [SITE_DEFERRED_COPY] = EXP_ZERO,
	    [SITE_RECV_COPY] = EXP_RECEIVED }, .net = true, .options = WL_OPT_TCP },
	{ "tcp-zerocopy",
	  "SO_ZEROCOPY + sendmsg(MSG_ZEROCOPY), completions reaped from MSG_ERRQUEUE",
	  "zc_pin = payload, send_copy = 0; on loopback and veth deferred_copy = payload (copied on "
	  "delivery, notices say COPIED); recv_copy = payload",
	  { [SITE_USER_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_ZERO, [SITE_ZC_PIN] = EXP_SENT,
	    [SITE_SPLICE_REF] = EXP_ZERO, [SITE_DEFERRED_COPY] = EXP_SENT,
	    [SITE_RECV_COPY] = EXP_RECEIVED },
	  .zc_notices = true, .net = true, .options = WL_OPT_TCP },
	{ "tcp-sendfile",
	  "sendfile() of a page-cached file to the socket",
	  "splice_ref = payload (page references), send_copy = user_copy = 0; recv_copy = payload",
	  { [SITE_USER_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_ZERO, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_SENT, [SITE_DEFERRED_COPY] = EXP_ZERO,
	    [SITE_RECV_COPY] = EXP_RECEIVED }, .net = true, .options = WL_OPT_TCP },
	{ "file-readwrite",
	  "duplicate a file with read() + write() through a --size buffer (default 64K)",
	  "file_read_copy = file_write_copy = file size (page cache->user->page cache); kernel_copy = 0",
	  { NO_NET_COPIES, [SITE_USER_COPY] = EXP_ZERO, [SITE_FILE_READ_COPY] = EXP_SENT,
	    [SITE_FILE_WRITE_COPY] = EXP_SENT, [SITE_KERNEL_COPY] = EXP_ZERO }, .file = true, .no_threads = true, .no_amount = true },
	{ "file-sendfile",
	  "duplicate a file with sendfile() from file to file",
	  "kernel_copy = file size (page cache->page cache), no user copies; 0 if the filesystem clones",
	  { NO_NET_COPIES, [SITE_USER_COPY] = EXP_ZERO, [SITE_FILE_READ_COPY] = EXP_ZERO,
	    [SITE_FILE_WRITE_COPY] = EXP_ZERO, [SITE_KERNEL_COPY] = EXP_COPIED_OR_CLONED }, .file = true, .no_threads = true, .no_amount = true },
	{ "file-splice",
	  "duplicate a file with splice() file->pipe (page references), pipe->file",
	  "kernel_copy = file size (pipe pages->page cache), no user copies",
	  { NO_NET_COPIES, [SITE_USER_COPY] = EXP_ZERO, [SITE_FILE_READ_COPY] = EXP_ZERO,
	    [SITE_FILE_WRITE_COPY] = EXP_ZERO, [SITE_KERNEL_COPY] = EXP_COPIED_OR_CLONED }, .file = true, .no_threads = true, .no_amount = true },
	{ "file-copyrange",
	  "duplicate a file with copy_file_range()",
	  "kernel_copy = file size on ext4 (page cache->page cache); 0 where the filesystem clones (reflink)",
	  { NO_NET_COPIES, [SITE_USER_COPY] = EXP_ZERO, [SITE_FILE_READ_COPY] = EXP_ZERO,
	    [SITE_FILE_WRITE_COPY] = EXP_ZERO, [SITE_KERNEL_COPY] = EXP_COPIED_OR_CLONED }, .file = true, .no_threads = true, .no_amount = true },
	{ "serve-readsend",
	  "serve a file over TCP with read() + send() of --size bytes (default 64K)",
	  "file_read_copy = send_copy = recv_copy = file size x connections",
	  { [SITE_USER_COPY] = EXP_ZERO, [SITE_FILE_READ_COPY] = EXP_SENT, [SITE_FILE_WRITE_COPY] = EXP_ZERO,
	    [SITE_KERNEL_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_SENT, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_ZERO, [SITE_DEFERRED_COPY] = EXP_ZERO, [SITE_RECV_COPY] = EXP_RECEIVED },
	  .file = true, .no_threads = true, .no_amount = true, .net = true,
	  .options = WL_OPT_CONN | WL_OPT_FILE | WL_OPT_PEER },
	{ "serve-sendfile",
	  "serve a file over TCP with sendfile() of --size bytes (default 64K)",
	  "splice_ref = recv_copy = file size x connections; file_read_copy = send_copy = 0",
	  { NO_FILE_COPIES, [SITE_USER_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_ZERO, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_SENT, [SITE_DEFERRED_COPY] = EXP_ZERO, [SITE_RECV_COPY] = EXP_RECEIVED },
	  .file = true, .no_threads = true, .no_amount = true, .net = true,
	  .options = WL_OPT_CONN | WL_OPT_FILE | WL_OPT_PEER },
	{ "remote-fileread",
	  "read a file block by block (--size, default 64K; --pattern seq|random) from a TCP file server "
	  "that answers each request with pread() + send()",
	  "file_read_copy = bytes served; send_copy = recv_copy = bytes served + requests (the client's "
	  "16-byte requests go the other way); no pins, no page references",
	  { [SITE_USER_COPY] = EXP_ZERO, [SITE_FILE_READ_COPY] = EXP_SENT, [SITE_FILE_WRITE_COPY] = EXP_ZERO,
	    [SITE_KERNEL_COPY] = EXP_ZERO, [SITE_SEND_COPY] = EXP_SENT_AND_REQUESTS, [SITE_ZC_PIN] = EXP_ZERO,
	    [SITE_SPLICE_REF] = EXP_ZERO, [SITE_DEFERRED_COPY] = EXP_ZERO,
	    [SITE_RECV_COPY] = EXP_RECEIVED_AND_REQUESTS },
	  .file = true, .no_threads = true, .no_amount = true, .net = true,
	  .options = WL_OPT_FILE | WL_OPT_PEER | WL_OPT_PATTERN },
};
const int nr_workload_defs = sizeof(workload_defs) / sizeof(workload_defs[0]);

const struct workload_def *find_workload(const char *name)
{
	for (int i = 0; i < nr_workload_defs; i++)
		if (!strcmp(workload_defs[i].name, name))
			return &workload_defs[i];
	return NULL;
}
