/* file-copyrange: duplicate a file with copy_file_range(). */
#include <unistd.h>
#include "filecopy.h"

static ssize_t copy_range(struct copy_job *j, uint64_t off, size_t want)
{
	off_t in_off = off, out_off = off;

	return copy_file_range(j->in, &in_off, j->out, &out_off, want, 0);
}

static int copy(struct copy_job *j)
{
	return copy_by_calls(j, copy_range);
}

int main(int argc, char **argv)
{
	static const struct file_copy w = {
		.name = "file-copyrange", .method = "copy_file_range", .default_size = 0,
		.call_names = { "copy_file_range" }, .per_chunk = { 1 }, .copy = copy,
	};

	return file_copy_main(argc, argv, &w);
}
