#ifndef C_PROCESS_TUNING_H
#define C_PROCESS_TUNING_H

/// Sets glibc's `M_TRIM_THRESHOLD` and `M_MMAP_THRESHOLD` (`mallopt`, which Swift's Glibc module does
/// not export). Returns 1 if glibc took both, 0 otherwise (and with any other C library).
int nimbus_set_malloc_thresholds(int trim, int mmap);

/// Sets glibc's `M_ARENA_MAX`: how many heaps threads share. Returns 1 if glibc took it, 0 otherwise.
int nimbus_set_malloc_arena_max(int arenas);

/// Hands memory the heaps hold free back to the kernel (glibc's `malloc_trim`); nothing elsewhere.
void nimbus_release_free_memory(void);

#endif
