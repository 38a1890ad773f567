/* file-readwrite: duplicate a file with read() and write() through a user buffer of --size bytes. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include "filecopy.h"

static int setup(struct copy_job *j)
{
	if (!j->size)
		return -EINVAL;	/* a buffer needs a size */
	j->priv = malloc(j->size);
	return j->priv ? 0 : -ENOMEM;
}

static int copy(struct copy_job *j)
{
	char *buf = j->priv;

	while (j->copied < j->file_size) {
		uint64_t want = j->file_size - j->copied < j->size ? j->file_size - j->copied : j->size;
		ssize_t n = read(j->in, buf, want), done = 0;

		j->calls[0]++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		while (done < n) {
			ssize_t w = write(j->out, buf + done, n - done);

			j->calls[1]++;
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				return w < 0 ? -errno : -EIO;
			done += w;
		}
		j->copied += n;
	}
	return 0;
}

static void teardown(struct copy_job *j)
{
	free(j->priv);
}

int main(int argc, char **argv)
{
	static const struct file_copy w = {
		.name = "file-readwrite", .method = "read/write", .default_size = 64 << 10,
		.call_names = { "read", "write" }, .per_chunk = { 1, 1 },
		.setup = setup, .copy = copy, .teardown = teardown,
	};

	return file_copy_main(argc, argv, &w);
}
