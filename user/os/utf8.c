/* Text the kernel hands over as bytes, made UTF-8. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "os/cli.h"
#include "os/utf8.h"

/* The length of the UTF-8 sequence at @s (at most @left bytes), 0 when it is not valid UTF-8. */
static int utf8_len(const unsigned char *s, size_t left)
{
	int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 :
		(s[0] & 0xF8) == 0xF0 ? 4 : 0;
	uint32_t cp;

	if (!n || (size_t)n > left)
		return 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	if (n == 1)
		return 1;
	cp = s[0] & (0x7F >> n);
	for (int i = 1; i < n; i++)
		cp = cp << 6 | (s[i] & 0x3F);
	/* overlong forms, surrogates and beyond U+10FFFF are not UTF-8 either */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return n;
}

const char *utf8_scrub(char *out, size_t n, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0, i = 0;

	if (!n)
		return out;
	while (i < len && p[i]) {
		int k = utf8_len(p + i, len - i);

		if (o + (k ? k : 1) >= n)
			break;
		if (!k) {
			out[o++] = '?';
			i++;
		} else {
			memmove(out + o, p + i, k);
			o += k;
			i += k;
		}
	}
	out[o] = '\0';
	return out;
}

json_object *json_utf8_string(const char *s)
{
	size_t n = strlen(s) + 1;	/* scrubbed, no longer than it was */
	char *buf = cli_xrealloc(NULL, n);
	json_object *o = json_object_new_string(utf8_scrub(buf, n, s, n - 1));

	free(buf);
	return o;
}
