/*
 * libFuzzer target: the size, count, duration, rate and delay parsers of zctrace and the
 * workloads. The first byte picks the parser, the rest (up to a NUL) is the text. Each answer is
 * held to a reference written independently here: a size is the number its digits and unit denote,
 * computed in 128 bits; a duration is the decimal number the text denotes, in long double. Nothing
 * outside the documented grammar is accepted (no sign, space, hex, inf or nan, no trailing
 * garbage), nothing inside it and within the bounds is refused, and no value leaves its bounds.
 */
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "workloads/lib/mb.h"
#include "workloads/lib/wl.h"

#define SIZE_MAX_VALUE ((uint64_t)INT64_MAX)	/* sizes and counts: below 2^63 */
#define MAX_TEXT 256

static int devnull = -1, saved_stderr = -1;

/* The parsers print one-line errors; the run would be nothing but them. */
static void quiet(bool on)
{
	fflush(stderr);
	dup2(on ? devnull : saved_stderr, 2);
}

static void fail(const char *parser, const char *text, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
static void fail(const char *parser, const char *text, const char *fmt, ...)
{
	va_list ap;

	quiet(false);
	fprintf(stderr, "fuzz_parse: %s('%s'): ", parser, text);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ---- sizes and counts: DIGITS [k|K|m|M|g|G [B|iB] | B], exactly, in 128 bits ---- */

/* 0 and the value when @s is in the grammar (digits only when !@units), -1 when it is not. */
static int ref_size(const char *s, bool units, unsigned __int128 *out)
{
	unsigned __int128 v = 0, cap = (unsigned __int128)1 << 64;	/* << 30 still fits */
	const char *p = s;
	unsigned shift = 0;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned)(*p - '0');
		if (v > cap)	/* far beyond any bound: keep it there */
			v = cap;
	}
	if (units) {
		const char *u = strchr("kKmMgG", *p);

		if (*p && u) {
			shift = 10 * (1 + (unsigned)(u - "kKmMgG") / 2);
			p++;
			if (p[0] == 'i' && p[1] == 'B')
				p += 2;
			else if (p[0] == 'B')
				p++;
		} else if (*p == 'B') {
			p++;
		}
	}
	if (*p)
		return -1;
	*out = v << shift;
	return 0;
}

static void check_size(const char *text)
{
	unsigned __int128 want;
	uint64_t got = 0xdeadbeef;
	int err = wl_parse_size(text, &got), ref = ref_size(text, true, &want);

	if (err && !ref && want <= SIZE_MAX_VALUE)
		fail("wl_parse_size", text, "refused, but it denotes %llu", (unsigned long long)want);
	if (!err && ref)
		fail("wl_parse_size", text, "accepted as %llu, but it is not a size", (unsigned long long)got);
	if (!err && want > SIZE_MAX_VALUE)
		fail("wl_parse_size", text, "accepted as %llu, beyond 2^63 - 1", (unsigned long long)got);
	if (!err && got != want)
		fail("wl_parse_size", text, "parsed as %llu, but it denotes %llu", (unsigned long long)got,
		     (unsigned long long)want);
}

static void check_count(const char *text)
{
	unsigned __int128 want;
	uint64_t got = 0xdeadbeef;
	int err = mb_parse_count(text, &got), ref = ref_size(text, false, &want);

	if (err && !ref && want <= SIZE_MAX_VALUE)
		fail("mb_parse_count", text, "refused, but it denotes %llu", (unsigned long long)want);
	if (!err && (ref || got != want || want > SIZE_MAX_VALUE))
		fail("mb_parse_count", text, "accepted as %llu, but it denotes %s", (unsigned long long)got,
		     ref ? "no count" : "another number or one beyond 2^63 - 1");
}

/* ---- durations: DIGITS [. DIGITS] [e|E [+|-] DIGITS] (or . DIGITS), in long double ---- */

static int ref_decimal(const char *s, long double *out)
{
	long double mant = 0;
	long exp10 = 0, e = 0;
	int digits = 0, esign = 1;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++, digits++)
		mant = mant * 10 + (*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, digits++, exp10--)
			mant = mant * 10 + (*p - '0');
	if (!digits)
		return -1;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			esign = *p++ == '-' ? -1 : 1;
		if (*p < '0' || *p > '9')
			return -1;
		for (; *p >= '0' && *p <= '9'; p++)
			if (e < 100000)
				e = e * 10 + (*p - '0');
	}
	if (*p)
		return -1;
	exp10 += esign * e;
	*out = mant == 0 ? 0 : exp10 > 6000 ? INFINITY : exp10 < -6000 ? 0 : mant * powl(10, exp10);
	return 0;
}

/*
 * @err and @got from a parser whose bounds are (0, @max]: accepted means the text is a decimal
 * number of seconds within them, and the value is that number; a number well within them is not
 * refused. Numbers at the edges (a relative 1e-9 from a bound) and below 1e-300 (strtod calls
 * them out of range) may go either way.
 */
static void check_seconds(const char *parser, const char *text, int err, double got, double max)
{
	long double want;
	int ref = ref_decimal(text, &want);

	if (!err && ref)
		fail(parser, text, "accepted as %g, but it is not a decimal number", got);
	if (!err && !(got > 0 && got <= max))
		fail(parser, text, "accepted as %g, outside (0, %g]", got, max);
	if (!err && fabsl(want - got) > want * 1e-9L)
		fail(parser, text, "parsed as %.17g, but it denotes %.17Lg", got, want);
	if (err && !ref && want > 1e-300L && want < (long double)max * (1 - 1e-9L))
		fail(parser, text, "refused, but it denotes %.17Lg seconds", want);
}

/* ---- tc rates and delays: NUMBER UNIT, 1 .. 2^63 (delays at most 60 s) ---- */

static void check_unit(const char *parser, const char *text, int err, uint64_t got,
		       const char *const units[], const long double mults[], long double max)
{
	size_t n = strlen(text);

	if (err)
		return;
	for (int i = 0; units[i]; i++) {
		size_t k = strlen(units[i]);
		char num[MAX_TEXT];
		long double want;

		if (n <= k || strcmp(text + n - k, units[i]))
			continue;
		snprintf(num, sizeof(num), "%.*s", (int)(n - k), text);
		if (ref_decimal(num, &want))
			continue;	/* a longer unit may end the same way ("mbit", "bit") */
		want *= mults[i];
		if (got < 1 || (long double)got > max)
			fail(parser, text, "accepted as %llu, outside 1..%.0Lf", (unsigned long long)got, max);
		if (fabsl(want - got) > 1 + want * 1e-9L)
			fail(parser, text, "parsed as %llu, but it denotes %.17Lg", (unsigned long long)got, want);
		return;
	}
	fail(parser, text, "accepted as %llu, but it is not a number and a unit", (unsigned long long)got);
}

static void check_rate(const char *text)
{
	static const char *const units[] = { "kbit", "mbit", "gbit", "tbit", "bit", NULL };
	static const long double mults[] = { 1e3L, 1e6L, 1e9L, 1e12L, 1 };
	uint64_t got = 0;

	check_unit("wl_parse_rate", text, wl_parse_rate(text, &got), got, units, mults, 9.2e18L);
}

static void check_delay(const char *text)
{
	static const char *const units[] = { "us", "ms", "s", NULL };
	static const long double mults[] = { 1e3L, 1e6L, 1e9L };
	uint64_t got = 0;

	check_unit("wl_parse_delay", text, wl_parse_delay(text, &got), got, units, mults, 60e9L);
}

/* ---- the parsers as their callers bound them ---- */

/* The callers' bounds: a day (the workloads' --duration, sweep --duration), 30 days (zctrace run
 * -d and -i, sweep --timeout), and a small one. */
static void check_seconds_parser(const char *text)
{
	static const double maxes[] = { 86400, 86400.0 * 30, 1 };

	for (unsigned i = 0; i < sizeof(maxes) / sizeof(maxes[0]); i++) {
		double d = 0;

		check_seconds("wl_parse_seconds", text, wl_parse_seconds(text, maxes[i], &d), d, maxes[i]);
	}
}

static void check_mb_opts(const char *text)
{
	uint64_t v = 0;
	double d = 0;
	const struct mb_opt secs = { "seconds", MB_SECONDS, &d };
	const struct mb_opt count = { "count", MB_COUNT, &v, 2, 1000 };
	const struct mb_opt size = { "size", MB_SIZE, &v, 4096, 1ULL << 40 };
	unsigned __int128 want;
	int err;

	quiet(true);
	err = mb_set_opt("fuzz", &secs, NULL, text);
	quiet(false);
	check_seconds("mb_set_opt MB_SECONDS", text, err, d, 86400);

	v = 0;
	quiet(true);
	err = mb_set_opt("fuzz", &count, NULL, text);
	quiet(false);
	if (!err && (ref_size(text, false, &want) || want != v || v < 2 || v > 1000))
		fail("mb_set_opt MB_COUNT", text, "accepted as %llu (2..1000)", (unsigned long long)v);
	if (err && !ref_size(text, false, &want) && want >= 2 && want <= 1000)
		fail("mb_set_opt MB_COUNT", text, "refused, but it is %llu", (unsigned long long)want);

	v = 0;
	quiet(true);
	err = mb_set_opt("fuzz", &size, NULL, text);
	quiet(false);
	if (!err && (ref_size(text, true, &want) || want != v || v < 4096 || v > 1ULL << 40))
		fail("mb_set_opt MB_SIZE", text, "accepted as %llu (4K..1T)", (unsigned long long)v);
	if (err && !ref_size(text, true, &want) && want >= 4096 && want <= 1ULL << 40)
		fail("mb_set_opt MB_SIZE", text, "refused, but it is %llu", (unsigned long long)want);
}

static void (*const checks[])(const char *) = {
	check_size, check_count, check_seconds_parser, check_seconds_parser, check_seconds_parser,
	check_mb_opts, check_rate, check_delay,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	saved_stderr = dup(2);
	return devnull < 0 || saved_stderr < 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char text[MAX_TEXT];

	if (size < 1 || size > MAX_TEXT)
		return -1;	/* not kept in the corpus */
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	checks[data[0] % (sizeof(checks) / sizeof(checks[0]))](text);
	return 0;
}
