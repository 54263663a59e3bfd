#include "CProcessTuning.h"

#include <stdlib.h> // defines __GLIBC__ with glibc
#if defined(__GLIBC__)
#include <malloc.h>
#endif

int nimbus_set_malloc_thresholds(int trim, int mmap) {
#if defined(__GLIBC__)
    return mallopt(M_TRIM_THRESHOLD, trim) == 1 && mallopt(M_MMAP_THRESHOLD, mmap) == 1;
#else
    return 0;
#endif
}

int nimbus_set_malloc_arena_max(int arenas) {
#if defined(__GLIBC__)
    return mallopt(M_ARENA_MAX, arenas) == 1;
#else
    (void)arenas;
    return 0;
#endif
}

void nimbus_release_free_memory(void) {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}
