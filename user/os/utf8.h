/* Text the kernel hands over as bytes (a process's name, a cgroup's path) made UTF-8. */
#ifndef OS_UTF8_H
#define OS_UTF8_H

#include <stddef.h>
#include <json-c/json.h>

/* The length of the UTF-8 sequence at @s (at most @left bytes), 0 when it is not valid UTF-8. */
int utf8_len(const unsigned char *s, size_t left);

/*
 * @s (up to its NUL) in @out (of @n bytes), each byte that is not part of valid UTF-8 as '?':
 * JSON is UTF-8, and prctl(PR_SET_NAME) takes any bytes. Returns @out.
 */
const char *utf8_scrub(char *out, size_t n, const char *s);

/* A JSON string of @s, scrubbed (utf8_scrub()). */
json_object *json_utf8_string(const char *s);

#endif
