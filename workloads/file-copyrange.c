/* file-copyrange: duplicate a file with copy_file_range(). */
#include <errno.h>
#include <unistd.h>
#include "filecopy.h"

#define CALL_MAX 0x7ffff000

static int copy(struct copy_job *j)
{
	while (j->copied < j->file_size) {
		uint64_t left = j->file_size - j->copied, want = j->size && j->size < left ? j->size : left;
		off_t in_off = j->copied, out_off = j->copied;
		ssize_t n = copy_file_range(j->in, &in_off, j->out, &out_off, want > CALL_MAX ? CALL_MAX : want, 0);

		j->calls[0]++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		j->copied += n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct file_copy w = {
		.name = "file-copyrange", .method = "copy_file_range", .default_size = 0,
		.call_names = { "copy_file_range" }, .per_chunk = { 1 }, .copy = copy,
	};

	return file_copy_main(argc, argv, &w);
}
