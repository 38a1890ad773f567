/*
 * file-splice: duplicate a file with splice() through a pipe: file->pipe (page references), then
 * pipe->file. The pipe holds --size bytes (default: the largest pipe this user may make).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "filecopy.h"

struct pipe_pair {
	int fd[2];
	uint64_t cap;
};

static int setup(struct copy_job *j)
{
	struct pipe_pair *p = malloc(sizeof(*p));
	long want = j->size;
	FILE *f;
	int cap;

	if (!p)
		return -ENOMEM;
	j->priv = p;
	if (pipe2(p->fd, O_CLOEXEC)) {
		p->fd[0] = p->fd[1] = -1;
		return -errno;
	}
	if (!want && (f = fopen("/proc/sys/fs/pipe-max-size", "r"))) {
		if (fscanf(f, "%ld", &want) != 1)
			want = 0;
		fclose(f);
	}
	if (want > 0)
		fcntl(p->fd[1], F_SETPIPE_SZ, (int)want);	/* rounded up to a power of two pages */
	cap = fcntl(p->fd[1], F_GETPIPE_SZ);
	if (cap <= 0)
		return -errno;
	p->cap = cap;
	if (!j->size)
		j->size = p->cap;
	else if (j->size > p->cap)
		return -EINVAL;	/* one chunk must fit the pipe */
	return 0;
}

static int copy(struct copy_job *j)
{
	struct pipe_pair *p = j->priv;

	while (j->copied < j->file_size) {
		uint64_t left = j->file_size - j->copied, want = j->size < left ? j->size : left;
		loff_t in_off = j->copied, out_off = j->copied;
		ssize_t n = splice(j->in, &in_off, p->fd[1], NULL, want, SPLICE_F_MOVE), done = 0;

		j->calls[0]++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		while (done < n) {
			ssize_t m = splice(p->fd[0], NULL, j->out, &out_off, n - done, SPLICE_F_MOVE);

			j->calls[0]++;
			if (m < 0 && errno == EINTR)
				continue;
			if (m <= 0)
				return m < 0 ? -errno : -EIO;
			done += m;
		}
		j->copied += n;
	}
	return 0;
}

static void teardown(struct copy_job *j)
{
	struct pipe_pair *p = j->priv;

	if (!p)
		return;
	for (int i = 0; i < 2; i++)
		if (p->fd[i] >= 0)
			close(p->fd[i]);
	free(p);
}

int main(int argc, char **argv)
{
	static const struct file_copy w = {
		.name = "file-splice", .method = "splice via a pipe", .default_size = 0,
		.call_names = { "splice" }, .per_chunk = { 2 },
		.setup = setup, .copy = copy, .teardown = teardown,
	};

	return file_copy_main(argc, argv, &w);
}
