#ifndef CFILEOPS_H
#define CFILEOPS_H

/// Renames `from` to `to` unless something is at `to` already (Linux's renameat2 with
/// RENAME_NOREPLACE, which Swift's Glibc module does not expose): 0, or -1 with errno set (EEXIST).
int nimbus_rename_noreplace(const char *from, const char *to);

#endif
