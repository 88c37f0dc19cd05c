/* Counts the gateway's heap allocations (malloc, calloc, realloc,
 * posix_memalign, aligned_alloc) when preloaded with LD_PRELOAD; a thread
 * writes the running count to $FERROCLAW_ALLOC_COUNT_FILE every 10 ms.
 * Built and used by bench/turn.rs only. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <unistd.h>
#include <fcntl.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_ulong count;

void *malloc(size_t n) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_realloc(p, n); }
int posix_memalign(void **out, size_t align, size_t n) {
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    void *p = __libc_memalign(align, n);
    if (!p) return 12;
    *out = p;
    return 0;
}
void *aligned_alloc(size_t align, size_t n) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_memalign(align, n); }
void *memalign(size_t align, size_t n) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); return __libc_memalign(align, n); }

/* Writes without stdio, so the writer itself allocates nothing. */
static void *writer(void *path) {
    char tmp[4096], line[32];
    snprintf(tmp, sizeof tmp, "%s.tmp", (const char *)path);
    for (;;) {
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            int n = snprintf(line, sizeof line, "%lu\n", atomic_load(&count));
            if (write(fd, line, (size_t)n) == n) {
                close(fd);
                rename(tmp, (const char *)path);
            } else {
                close(fd);
            }
        }
        usleep(10000);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    const char *path = getenv("FERROCLAW_ALLOC_COUNT_FILE");
    if (!path) return;
    pthread_t t;
    pthread_create(&t, NULL, writer, (void *)path);
    pthread_detach(t);
}
