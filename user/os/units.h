/* Quantities in the units a person reads. */
#ifndef OS_UNITS_H
#define OS_UNITS_H

#include <stddef.h>

/* @v bytes as "512 B", "1.5 KiB", ... "2.0 TiB", in @buf (of @n bytes); @buf. */
const char *human_bytes(double v, char *buf, size_t n);

#endif
