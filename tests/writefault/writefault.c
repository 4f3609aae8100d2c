/* writefault: an LD_PRELOAD shim that fails a process's writes to chosen files, for tests.
 *
 * Files whose path ends with WRITEFAULT_SUFFIX are faulted as the first byte of the file named
 * by WRITEFAULT_FILE says (mapped once and re-read on every call, so a test changes it while
 * the server runs; never truncate that file):
 *   0  no fault;
 *   1  every write stops halfway: half the bytes go to the file, and a write of one byte fails
 *      with ENOSPC (so a caller that retries the rest leaves a cut line behind);
 *   2  every write fails with EIO, writing nothing;
 *   3  writes succeed, and fsync/fdatasync fail with EIO.
 * Other files, sockets and pipes are never touched. The real calls are made by system call, not
 * through libc, so the shim needs no dlsym (as tests/clockshift/clockshift.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile const char *mode;
static const char *suffix;

__attribute__((constructor)) static void writefault_init(void) {
    const char *path = getenv("WRITEFAULT_FILE");
    suffix = getenv("WRITEFAULT_SUFFIX");
    if (!path || !suffix) return;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    void *map = mmap(NULL, 1, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map != MAP_FAILED) mode = map;
}

/* The fault for `fd` now: 0 unless it is a regular file whose path ends with the suffix. */
static char fault(int fd) {
    if (!mode || *mode == '0' || *mode == 0) return 0;
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    long n = syscall(SYS_readlink, link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    size_t len = strlen(suffix);
    if ((size_t)n < len || strcmp(path + n - len, suffix) != 0) return 0;
    return *mode;
}

ssize_t write(int fd, const void *buf, size_t count) {
    switch (fault(fd)) {
    case '1':
        if (count > 1) return syscall(SYS_write, fd, buf, count / 2);
        errno = ENOSPC;
        return -1;
    case '2':
        errno = EIO;
        return -1;
    default:
        return syscall(SYS_write, fd, buf, count);
    }
}

int fsync(int fd) {
    if (fault(fd) == '3') {
        errno = EIO;
        return -1;
    }
    return syscall(SYS_fsync, fd);
}

int fdatasync(int fd) {
    if (fault(fd) == '3') {
        errno = EIO;
        return -1;
    }
    return syscall(SYS_fdatasync, fd);
}
