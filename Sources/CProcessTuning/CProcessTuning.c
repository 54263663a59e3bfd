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
