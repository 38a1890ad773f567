/*
 * uring-file: duplicate a file with io_uring, each chunk of --size bytes read with IORING_OP_READ
 * into a user buffer, then written with IORING_OP_WRITE (READ_FIXED and WRITE_FIXED through a
 * registered buffer with --fixed, READV and WRITEV of two vectors with --vectored), one request in
 * flight. --direct opens both files O_DIRECT; --async has io-wq workers issue every request,
 * --sqpoll the ring's SQPOLL thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <liburing.h>
#include "filecopy.h"

#define SQ_ENTRIES 8
#define SQPOLL_IDLE_MS 100
#define DIRECT_ALIGN 4096	/* O_DIRECT's buffer, offsets and lengths: whole blocks of every device here */

struct uring_file {
	struct io_uring ring;
	bool ring_made;
	char *buf;
	unsigned sqe_flags;	/* IOSQE_ASYNC with --async */
	uint64_t reads, writes;	/* requests completed */
	uint64_t bytes_read, bytes_written;
};

/* Adds O_DIRECT to open file @fd's flags. 0 or -errno. */
static int set_direct(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_DIRECT))
		return -errno;
	return 0;
}

static int setup(struct copy_job *j)
{
	const struct wl_opts *o = j->opts;
	struct io_uring_params p = {};
	struct uring_file *u;
	struct iovec iov;
	int err;

	if (!j->size)
		return -EINVAL;	/* a buffer needs a size */
	if (o->fixed && o->vectored) {
		fprintf(stderr, "uring-file: --fixed and --vectored are two ways of giving the buffer: one or the other\n");
		return -EINVAL;
	}
	if (o->direct && (j->size % DIRECT_ALIGN || j->file_size % DIRECT_ALIGN)) {
		fprintf(stderr, "uring-file: --direct moves whole %d-byte blocks: --size and --file-size "
			"must be multiples of it\n", DIRECT_ALIGN);
		return -EINVAL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	j->priv = u;
	if (posix_memalign((void **)&u->buf, DIRECT_ALIGN, j->size))
		return -ENOMEM;
	memset(u->buf, 0, j->size);	/* its pages faulted in before the measured phase */
	if (o->direct && ((err = set_direct(j->in)) || (err = set_direct(j->out))))
		return err;
	if (o->uring_sqpoll) {
		p.flags |= IORING_SETUP_SQPOLL;
		p.sq_thread_idle = SQPOLL_IDLE_MS;
	}
	if ((err = io_uring_queue_init_params(SQ_ENTRIES, &u->ring, &p)))
		return err;
	u->ring_made = true;
	u->sqe_flags = o->uring_async ? IOSQE_ASYNC : 0;
	iov = (struct iovec){ .iov_base = u->buf, .iov_len = j->size };
	if (o->fixed && (err = io_uring_register_buffers(&u->ring, &iov, 1)))
		return err;
	return 0;
}

/*
 * One request: a read of @len bytes at @off into @buf, or a write of them from it, submitted and
 * waited for in one io_uring_enter() (counted in calls[0]). Its result: bytes, or -errno. Vectored,
 * @buf is two vectors cut at a whole block (O_DIRECT's), one if @len is a block or less.
 */
static int one_request(struct copy_job *j, bool write, uint64_t off, size_t len, char *buf)
{
	struct uring_file *u = j->priv;
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	struct io_uring_cqe *cqe;
	int fd = write ? j->out : j->in, ret;
	size_t cut = len / 2 / DIRECT_ALIGN * DIRECT_ALIGN;
	struct iovec iov[2] = { { buf, cut ? cut : len }, { buf + cut, len - cut } };

	if (!sqe)
		return -EBUSY;
	if (j->opts->vectored && write)
		io_uring_prep_writev(sqe, fd, iov, cut ? 2 : 1, off);
	else if (j->opts->vectored)
		io_uring_prep_readv(sqe, fd, iov, cut ? 2 : 1, off);
	else if (j->opts->fixed && write)
		io_uring_prep_write_fixed(sqe, fd, buf, len, off, 0);
	else if (j->opts->fixed)
		io_uring_prep_read_fixed(sqe, fd, buf, len, off, 0);
	else if (write)
		io_uring_prep_write(sqe, fd, buf, len, off);
	else
		io_uring_prep_read(sqe, fd, buf, len, off);
	sqe->flags |= u->sqe_flags;
	do {
		ret = io_uring_submit_and_wait(&u->ring, 1);
		j->calls[0]++;
	} while (ret == -EINTR);
	if (ret < 0)
		return ret;
	if ((ret = io_uring_peek_cqe(&u->ring, &cqe)))
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&u->ring, cqe);
	return ret;
}

static int copy(struct copy_job *j)
{
	struct uring_file *u = j->priv;

	while (j->copied < j->file_size) {
		uint64_t want = j->file_size - j->copied < j->size ? j->file_size - j->copied : j->size;
		int n = one_request(j, false, j->copied, want, u->buf), done = 0;

		if (n <= 0)
			return n < 0 ? n : -EIO;
		u->reads++;
		u->bytes_read += n;
		while (done < n) {
			int w = one_request(j, true, j->copied + done, n - done, u->buf + done);

			if (w <= 0)
				return w < 0 ? w : -EIO;
			u->writes++;
			u->bytes_written += w;
			done += w;
		}
		j->copied += n;
	}
	return 0;
}

static void teardown(struct copy_job *j)
{
	struct uring_file *u = j->priv;

	if (!u)
		return;
	if (u->ring_made)
		io_uring_queue_exit(&u->ring);
	free(u->buf);
	free(u);
}

/*
 * Its own counts: the bytes its requests read and wrote, and whether past the page cache. With
 * O_DIRECT the source's cache state is not what the copy reads, so no cache is claimed.
 */
static void report(const struct copy_job *j, json_object *r)
{
	const struct uring_file *u = j->priv;
	json_object *ring = json_object_new_object();

	json_object_object_add(r, WL_KEY_DIRECT, json_object_new_boolean(j->opts->direct));
	json_object_object_add(r, WL_KEY_BYTES_READ, json_object_new_uint64(u->bytes_read));
	json_object_object_add(r, WL_KEY_BYTES_WRITTEN, json_object_new_uint64(u->bytes_written));
	if (j->opts->direct)
		json_object_object_del(r, WL_KEY_CACHE);
	json_object_object_add(ring, "reads", json_object_new_uint64(u->reads));
	json_object_object_add(ring, "writes", json_object_new_uint64(u->writes));
	json_object_object_add(ring, "fixed", json_object_new_boolean(j->opts->fixed));
	json_object_object_add(ring, "vectored", json_object_new_boolean(j->opts->vectored));
	json_object_object_add(ring, "issue", json_object_new_string(j->opts->uring_sqpoll ? "sqpoll" :
								     j->opts->uring_async ? "async" : "inline"));
	json_object_object_add(r, "io_uring", ring);
}

int main(int argc, char **argv)
{
	static const struct file_copy w = {
		.name = "uring-file", .method = "io_uring read/write", .default_size = 64 << 10,
		.call_names = { "io_uring_enter" }, .per_chunk = { 2 },
		.options = WL_OPT_URING | WL_OPT_FILE_IO,
		.setup = setup, .copy = copy, .teardown = teardown, .report = report,
	};

	return file_copy_main(argc, argv, &w);
}
