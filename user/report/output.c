/*
 * Where the results go: the --json file and stdout. Every write is checked to its end: a result
 * that did not reach its file is an error with the kernel's reason, not a silent exit 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "report/output.h"

int json_open(struct json_out *jo, const char *path)
{
	*jo = (struct json_out){ .path = path, .fd = -1 };
	if (!path || !strcmp(path, "-"))
		return 0;
	jo->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (jo->fd >= 0) {
		jo->created = true;
		return 0;
	}
	if (errno == EEXIST)
		jo->fd = open(path, O_WRONLY | O_CLOEXEC);
	return jo->fd >= 0 ? 0 : -errno;
}

/* write(2) until all of @buf is written: a short write is not the end, a signal is not an error. */
static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		buf += n;
		len -= n;
	}
	return 0;
}

/*
 * Only a regular file is truncated: it may be longer than the new ledger. A device, a pipe or a
 * /proc file has no length to cut (ftruncate would fail there with EINVAL and hide the real
 * error); what it makes of the write is its own answer.
 */
static int write_json_file(int fd, const char *text)
{
	struct stat st;
	int err;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISREG(st.st_mode) && ftruncate(fd, 0))
		return -errno;
	err = write_all(fd, text, strlen(text));
	if (!err)
		err = write_all(fd, "\n", 1);
	return err;
}

int write_json(struct json_out *jo, json_object *root)
{
	const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
							   JSON_C_TO_STRING_NOSLASHESCAPE);
	int err, fd = jo->fd;

	if (fd < 0) {
		printf("%s\n", text);
		return stdout_flush("zctrace");
	}
	jo->fd = -1;
	err = write_json_file(fd, text);
	if (close(fd) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "zctrace: cannot write %s: %s\n", jo->path, strerror(-err));
		/* half a ledger in a file zctrace made is worse than none */
		if (jo->created)
			unlink(jo->path);
	}
	jo->created = false;
	return err ? -1 : 0;
}

void json_close(struct json_out *jo)
{
	if (jo->fd < 0)
		return;
	close(jo->fd);
	if (jo->created)
		unlink(jo->path);
	jo->fd = -1;
}

static bool stdout_reported;

int stdout_flush(const char *prog)
{
	int err = 0;

	if (fflush(stdout))
		err = errno;
	else if (ferror(stdout))
		err = EIO;	/* an earlier write failed and its data is gone; its errno with it */
	if (!err)
		return 0;
	if (!stdout_reported)
		fprintf(stderr, "%s: cannot write stdout: %s\n", prog, strerror(err));
	stdout_reported = true;
	return -1;
}

/* _exit: the process is already exiting, and exit() from an atexit handler is undefined. */
static void flush_stdout_at_exit(void)
{
	bool reported = stdout_reported;

	if (stdout_flush("zctrace") && !reported)
		_exit(1);
}

/*
 * glibc drops a buffer whose write failed, and the errno goes with it: a later fflush finds
 * nothing to write and ferror() alone cannot say why. So stdout, unless it is a terminal, is held
 * in a buffer larger than any ledger and written by the flushes that check it.
 */
static char stdout_buf[1 << 20];

void check_stdout_at_exit(void)
{
	if (!isatty(STDOUT_FILENO))
		setvbuf(stdout, stdout_buf, _IOFBF, sizeof(stdout_buf));
	atexit(flush_stdout_at_exit);
}
