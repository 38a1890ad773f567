/*
 * The user-space copy routines the sampler knows: libc's memcpy and kin, as this CPU resolves
 * them (an IFUNC picks one of a dozen per CPU), each as a range of its file. A user-mode sample
 * in one of them is the program's own copy, user_copy.
 */
#ifndef USERCOPY_H
#define USERCOPY_H

#include <stddef.h>
#include "zctrace.h"

/*
 * The routines into @fns (at most USER_COPY_FNS), each once, and their library's build ID into
 * @lib: their count, or a negative errno with why in @why.
 */
int usercopy_find(struct user_copy_fn *fns, __u8 lib[USER_COPY_BUILD_ID], char *why, size_t n);

#endif
