/* file-sendfile: duplicate a file with sendfile() from file to file. */
#include <sys/sendfile.h>
#include "filecopy.h"

/* the output file's offset moves with each call; the input's is given */
static ssize_t send_file(struct copy_job *j, uint64_t off, size_t want)
{
	off_t in_off = off;

	return sendfile(j->out, j->in, &in_off, want);
}

static int copy(struct copy_job *j)
{
	return copy_by_calls(j, send_file);
}

int main(int argc, char **argv)
{
	static const struct file_copy w = {
		.name = "file-sendfile", .method = "sendfile", .default_size = 0,
		.call_names = { "sendfile" }, .per_chunk = { 1 }, .copy = copy,
	};

	return file_copy_main(argc, argv, &w);
}
