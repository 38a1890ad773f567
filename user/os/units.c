/* Quantities in the units a person reads. */
#include <stdio.h>
#include "os/units.h"

const char *human_bytes(double v, char *buf, size_t n)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
	return buf;
}
