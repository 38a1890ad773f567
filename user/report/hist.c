/* The one histogram printer (hist.h). */
#include "report/hist.h"
#include "zctrace.h"

static const char stars[] = "****************************************";

__u64 log2_slot_hi(int slot)
{
	return slot >= 63 ? ~0ULL : (1ULL << (slot + 1)) - 1;
}

void hist_print(FILE *f, const struct hist_bucket *b, int n, const struct hist_look *look)
{
	int width = look->width < (int)sizeof(stars) - 1 ? look->width : (int)sizeof(stars) - 1;
	__u64 max = 0;

	for (int i = 0; i < n; i++)
		if (b[i].count > max)
			max = b[i].count;
	for (int i = 0; i < n; i++) {
		int bar = max ? (int)((double)b[i].count * width / max + 0.5) : 0;

		if (b[i].count && !bar)
			bar = 1;	/* a count that is not 0 is seen */
		if (look->real)
			fprintf(f, "  %12.4g -> %-12.4g : %-8llu", b[i].flo, b[i].fhi, (unsigned long long)b[i].count);
		else if (look->total)
			fprintf(f, "  %10llu -> %-10llu : %10llu %12llu", (unsigned long long)b[i].lo,
				(unsigned long long)b[i].hi, (unsigned long long)b[i].count,
				(unsigned long long)b[i].total);
		else
			fprintf(f, "%10llu -> %-10llu : %-10llu", (unsigned long long)b[i].lo,
				(unsigned long long)b[i].hi, (unsigned long long)b[i].count);
		fprintf(f, " |%-*.*s|%s\n", width, bar, stars, b[i].note ? b[i].note : "");
	}
}

/* Slots @first..@last of a log2 histogram as buckets; the count from @bar, the total from @total. */
static void print_slots(FILE *f, const __u64 *bar, const __u64 *total, int first, int last,
			const struct hist_look *look)
{
	struct hist_bucket b[MAX_SLOTS];
	int n = 0;

	for (int i = first; first >= 0 && i <= last && n < MAX_SLOTS; i++)
		b[n++] = (struct hist_bucket){ .lo = i ? 1ULL << i : 0, .hi = log2_slot_hi(i), .count = bar[i],
					       .total = total ? total[i] : 0 };
	hist_print(f, b, n, look);
}

/* The first and last slot of @vals that are not 0; -1 if none. */
static void used_slots(const __u64 *vals, int nslots, int *first, int *last)
{
	*first = *last = -1;
	for (int i = 0; i < nslots && i < MAX_SLOTS; i++) {
		if (!vals[i])
			continue;
		if (*first < 0)
			*first = i;
		*last = i;
	}
}

void print_log2_hist(FILE *f, const __u64 *vals, int nslots, const char *unit)
{
	const struct hist_look look = { .width = 40 };
	int first, last;

	used_slots(vals, nslots, &first, &last);
	if (last < 0)
		return;
	fprintf(f, "%24s : %-10s distribution\n", unit, "count");
	print_slots(f, vals, NULL, first, last, &look);
}

void print_log2_hist_pair(FILE *f, const __u64 *interval, const __u64 *total, int nslots)
{
	const struct hist_look look = { .width = 30, .total = true };
	int first, last;

	used_slots(total, nslots, &first, &last);
	print_slots(f, interval, total, first, last, &look);
}
