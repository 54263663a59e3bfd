#ifndef CFILEOPS_H
#define CFILEOPS_H

/// Renames `from` to `to` unless something is at `to` already (Linux's renameat2 with
/// RENAME_NOREPLACE, which Swift's Glibc module does not expose): 0, or -1 with errno set (EEXIST).
int nimbus_rename_noreplace(const char *from, const char *to);

/// Swaps what is at `from` and at `to` in one step (renameat2 with RENAME_EXCHANGE), so a reader of
/// either path sees the old or the new, never nothing: 0, or -1 with errno set.
int nimbus_rename_exchange(const char *from, const char *to);

/// Makes the files at `paths` (on the file system holding `directory`) durable. On Linux it is one
/// syncfs of that file system — one journal commit however many files were written, where syncing each
/// file costs a commit apiece; elsewhere each file is synced. 0, or -1 with errno set.
int nimbus_sync_files(const char *directory, const char *const *paths, int count);

/// Starts writing the `length` bytes at `offset` of the open file `descriptor` to disk without waiting
/// (Linux's sync_file_range with SYNC_FILE_RANGE_WRITE; nothing elsewhere), so a later sync waits only for
/// what is still in flight. Durability still comes from a sync. 0, or -1 with errno set.
int nimbus_start_writeback(int descriptor, long long offset, long long length);

/// Takes (or with `kind` 0 releases) a lock on the byte at `offset` of the open file `descriptor`: `kind` 1
/// shared, 2 exclusive; waits for it when `wait` is non-zero. Open-file-description locks (Linux's
/// F_OFD_SETLK/SETLKW): each open of the file holds its own locks, within a process as across processes,
/// and the kernel drops them when the file is closed or its process dies. 0, or -1 with errno set.
int nimbus_lock_byte(int descriptor, long long offset, int kind, int wait);

#endif
