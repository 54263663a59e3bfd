#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CFileOps.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int nimbus_rename_noreplace(const char *from, const char *to) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
}

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

int nimbus_rename_exchange(const char *from, const char *to) {
    return (int)syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to, RENAME_EXCHANGE);
}

int nimbus_sync_files(const char *directory, const char *const *paths, int count) {
#ifdef __linux__
    (void)paths;
    (void)count;
    int descriptor = open(directory, O_RDONLY | O_DIRECTORY);
    if (descriptor < 0) return -1;
    int result = syncfs(descriptor);
    int saved = errno;
    close(descriptor);
    errno = saved;
    return result;
#else
    (void)directory;
    for (int index = 0; index < count; index++) {
        int descriptor = open(paths[index], O_RDONLY);
        if (descriptor < 0) return -1;
        int result = fsync(descriptor);
        int saved = errno;
        close(descriptor);
        errno = saved;
        if (result != 0) return -1;
    }
    return 0;
#endif
}

int nimbus_start_writeback(int descriptor, long long offset, long long length) {
#ifdef __linux__
    return sync_file_range(descriptor, (off64_t)offset, (off64_t)length, SYNC_FILE_RANGE_WRITE);
#else
    (void)descriptor;
    (void)offset;
    (void)length;
    return 0;
#endif
}

int nimbus_lock_byte(int descriptor, long long offset, int kind, int wait) {
    struct flock lock = {0};
    lock.l_type = kind == 0 ? F_UNLCK : (kind == 1 ? F_RDLCK : F_WRLCK);
    lock.l_whence = SEEK_SET;
    lock.l_start = (off_t)offset;
    lock.l_len = 1;
#ifdef F_OFD_SETLKW
    return fcntl(descriptor, wait ? F_OFD_SETLKW : F_OFD_SETLK, &lock);
#else
    return fcntl(descriptor, wait ? F_SETLKW : F_SETLK, &lock);
#endif
}
