/* file-sendfile: duplicate a file with sendfile() from file to file. */
#include <errno.h>
#include <sys/sendfile.h>
#include "filecopy.h"

#define SENDFILE_MAX 0x7ffff000	/* the most one call moves (MAX_RW_COUNT) */

static int copy(struct copy_job *j)
{
	while (j->copied < j->file_size) {
		uint64_t left = j->file_size - j->copied, want = j->size && j->size < left ? j->size : left;
		off_t off = j->copied;
		ssize_t n = sendfile(j->out, j->in, &off, want > SENDFILE_MAX ? SENDFILE_MAX : want);

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
		.name = "file-sendfile", .method = "sendfile", .default_size = 0,
		.call_names = { "sendfile" }, .per_chunk = { 1 }, .copy = copy,
	};

	return file_copy_main(argc, argv, &w);
}
