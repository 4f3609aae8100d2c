/* clockshift: an LD_PRELOAD shim that moves a process's wall clock, for tests.
 *
 * CLOCK_REALTIME (and its coarse variant), gettimeofday() and time() read the real clock plus
 * an offset in milliseconds: a little-endian int64 at the start of the file named by
 * CLOCKSHIFT_FILE, mapped once and re-read on every call, so a test moves the clock of a
 * running server by rewriting those 8 bytes in place (never truncate the file: the mapping
 * would fault). Monotonic clocks are left alone. The real clock is read by system call, not
 * through libc, so the shim needs no dlsym (which can allocate, and hang jemalloc at start-up
 * as libfaketime does with Debian's redis-server).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile const int64_t *offset_ms;

__attribute__((constructor)) static void clockshift_init(void) {
    const char *path = getenv("CLOCKSHIFT_FILE");
    if (!path) return;
    int fd = open(path, O_RDONLY);
    if (fd < 0) return;
    void *map = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map != MAP_FAILED) offset_ms = map;
}

static void shift(struct timespec *ts) {
    if (!offset_ms) return;
    int64_t ns = (int64_t)ts->tv_nsec + (*offset_ms % 1000) * 1000000;
    ts->tv_sec += *offset_ms / 1000 + ns / 1000000000;
    ns %= 1000000000;
    if (ns < 0) {
        ns += 1000000000;
        ts->tv_sec -= 1;
    }
    ts->tv_nsec = ns;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
    int rc = (int)syscall(SYS_clock_gettime, clock, ts);
    if (rc == 0 && (clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE)) shift(ts);
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz) {
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    if (rc == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    (void)tz;
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
