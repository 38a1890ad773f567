/* Values at dotted paths of untrusted JSON (jsonpath.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "os/jsonpath.h"

json_object *json_at(json_object *o, const char *path)
{
	char buf[128], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && o; tok = strtok_r(NULL, ".", &save))
		if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, tok, &o))
			o = NULL;
	return o;
}

__u64 json_u64(json_object *o, const char *path, bool *found)
{
	json_object *v = json_at(o, path);

	if (found)
		*found = v != NULL;
	return v ? json_object_get_uint64(v) : 0;
}

double json_double(json_object *o, const char *path)
{
	json_object *v = json_at(o, path);

	return v ? json_object_get_double(v) : NAN;
}

const char *json_str(json_object *o, const char *path, const char *dflt)
{
	json_object *v = json_at(o, path);

	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : dflt;
}

json_object *json_array(json_object *o, const char *path)
{
	json_object *v = json_at(o, path);

	return json_object_is_type(v, json_type_array) ? v : NULL;
}

size_t json_array_len(json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}
