#ifndef C_PROCESS_TUNING_H
#define C_PROCESS_TUNING_H

/// Sets glibc's `M_TRIM_THRESHOLD` and `M_MMAP_THRESHOLD` (`mallopt`, which Swift's Glibc module does
/// not export). Returns 1 if glibc took both, 0 otherwise (and with any other C library).
int nimbus_set_malloc_thresholds(int trim, int mmap);

#endif
