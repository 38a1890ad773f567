/*
 * Reading JSON that is read, not trusted (the workload's report, a ledger file): values at dotted
 * paths, with a type check before every use, so a malformed document never asserts in json-c.
 */
#ifndef JSONPATH_H
#define JSONPATH_H

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>
#include <linux/types.h>

/* The value at dotted @path ("a.b.c") of @o, or NULL when missing or JSON null. */
json_object *json_at(json_object *o, const char *path);
/* The number at @path, 0 if none; @found (may be NULL) says whether it was there. */
__u64 json_u64(json_object *o, const char *path, bool *found);
/* The number at @path as a double, NAN if none. */
double json_double(json_object *o, const char *path);
/* The string at @path, @dflt if none or not a string. */
const char *json_str(json_object *o, const char *path, const char *dflt);
/* The array at @path, NULL if none or not an array. */
json_object *json_array(json_object *o, const char *path);
/* The length of an array, 0 for anything else. */
size_t json_array_len(json_object *a);

#endif
