/* The I/O syscalls zctrace follows (iocalls.h), by this architecture's numbers. */
#include <stdio.h>
#include <sys/syscall.h>
#include <linux/io_uring.h>
#include "trace/iocalls.h"

const struct io_call_def io_call_defs[] = {
	{ SYS_read, IO_READ }, { SYS_pread64, IO_READ }, { SYS_readv, IO_READ },
	{ SYS_preadv, IO_READ }, { SYS_preadv2, IO_READ },
	{ SYS_write, IO_WRITE }, { SYS_pwrite64, IO_WRITE }, { SYS_writev, IO_WRITE },
	{ SYS_pwritev, IO_WRITE }, { SYS_pwritev2, IO_WRITE },
	{ SYS_sendfile, IO_SENDFILE }, { SYS_splice, IO_SPLICE }, { SYS_copy_file_range, IO_COPY_RANGE },
	{ SYS_vmsplice, IO_VMSPLICE }, { SYS_tee, IO_TEE },
	{ SYS_sendto, IO_SEND }, { SYS_sendmsg, IO_SEND }, { SYS_sendmmsg, IO_SENDMMSG },
	{ SYS_recvfrom, IO_RECV }, { SYS_recvmsg, IO_RECV }, { SYS_recvmmsg, IO_RECVMMSG },
};

const int nr_io_call_defs = sizeof(io_call_defs) / sizeof(io_call_defs[0]);

enum io_kind io_kind_of_nr(long nr)
{
	for (int i = 0; i < nr_io_call_defs; i++)
		if (io_call_defs[i].nr == nr)
			return io_call_defs[i].kind;
	return IO_NONE;
}

bool io_kind_socket(enum io_kind kind)
{
	return kind == IO_SEND || kind == IO_RECV || kind == IO_SENDMMSG || kind == IO_RECVMMSG;
}

bool io_kind_to_user(enum io_kind kind)
{
	return kind == IO_READ || kind == IO_RECV || kind == IO_RECVMMSG;
}

bool io_kind_from_user(enum io_kind kind)
{
	return kind == IO_WRITE || kind == IO_SEND || kind == IO_SENDMMSG;
}

/* The io_uring operations that move bytes between user memory and a file or socket. */
static const struct {
	__u32 op;
	const char *name;
	enum io_kind kind;
} uring_ops[] = {
	{ IORING_OP_READV, "READV", IO_READ }, { IORING_OP_READ_FIXED, "READ_FIXED", IO_READ },
	{ IORING_OP_READ, "READ", IO_READ },
	{ IORING_OP_WRITEV, "WRITEV", IO_WRITE }, { IORING_OP_WRITE_FIXED, "WRITE_FIXED", IO_WRITE },
	{ IORING_OP_WRITE, "WRITE", IO_WRITE },
	{ IORING_OP_SENDMSG, "SENDMSG", IO_SEND }, { IORING_OP_SEND, "SEND", IO_SEND },
	{ IORING_OP_SEND_ZC, "SEND_ZC", IO_SEND }, { IORING_OP_SENDMSG_ZC, "SENDMSG_ZC", IO_SEND },
	{ IORING_OP_RECVMSG, "RECVMSG", IO_RECV }, { IORING_OP_RECV, "RECV", IO_RECV },
};

const char *uring_op_name(__u32 op)
{
	static __thread char buf[16];

	for (unsigned i = 0; i < sizeof(uring_ops) / sizeof(uring_ops[0]); i++)
		if (uring_ops[i].op == op)
			return uring_ops[i].name;
	snprintf(buf, sizeof(buf), "op %u", op);
	return buf;
}

enum io_kind uring_op_kind(__u32 op)
{
	for (unsigned i = 0; i < sizeof(uring_ops) / sizeof(uring_ops[0]); i++)
		if (uring_ops[i].op == op)
			return uring_ops[i].kind;
	return IO_NONE;
}
