/*
 * The machine's memory-copy bound at one copy size: how fast this CPU copies a buffer of that size
 * back and forth while both buffers stay in the caches, the best of several short trials. A copy
 * site that the sampler finds faster than this has lost samples, not found a faster memcpy.
 */
#ifndef MEMBOUND_H
#define MEMBOUND_H

#include <stddef.h>

/* Bytes per ns memcpy moves at copies of @size bytes (64 B to 64 MiB), or 0 if it cannot tell. */
double memcpy_bytes_per_ns(size_t size);

#endif
