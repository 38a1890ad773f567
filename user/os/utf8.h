/* Text the kernel hands over as bytes (a process's name, a cgroup's path) made UTF-8. */
#ifndef OS_UTF8_H
#define OS_UTF8_H

#include <stddef.h>
#include <json-c/json.h>

/*
 * The @len bytes of @s (up to a NUL) in @out (of @n bytes), each byte that is not part of valid
 * UTF-8 as '?', whole characters only: JSON and label values are UTF-8, and prctl(PR_SET_NAME)
 * takes any bytes. @out may be @s. Returns @out.
 */
const char *utf8_scrub(char *out, size_t n, const char *s, size_t len);

/* A JSON string of @s, scrubbed (utf8_scrub()). */
json_object *json_utf8_string(const char *s);

#endif
