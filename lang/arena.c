/* arena.c — bump allocator: big chunks, no per-object free. */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ArenaChunk {
    ArenaChunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
};

enum { CHUNK_SIZE = 64 * 1024 };

static _Noreturn void out_of_memory(size_t count, size_t size) {
    double bytes = (double)count * (double)size; /* in double: the size_t product may have wrapped */
    fprintf(stderr, "physc: out of memory: %.0f bytes (%.1f GB) while compiling\n", bytes, bytes / 1e9);
    /* not exit(): the libraries' exit handlers may wait forever on threads that are
       themselves retrying an allocation (OpenBLAS's shutdown joins its workers) */
    fflush(NULL);
    _exit(1);
}

static size_t checked_bytes(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) out_of_memory(count, size);
    return count * size > 0 ? count * size : 1;
}

void *xalloc(size_t count, size_t size) {
    void *p = malloc(checked_bytes(count, size));
    if (!p) out_of_memory(count, size);
    return p;
}

void *xcalloc(size_t count, size_t size) {
    void *p = calloc(checked_bytes(count, size), 1);
    if (!p) out_of_memory(count, size);
    return p;
}

void *xrealloc(void *old, size_t count, size_t size) {
    void *p = realloc(old, checked_bytes(count, size));
    if (!p) out_of_memory(count, size);
    return p;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(xalloc(n, 1), s, n);
}

void *arena_alloc(Arena *a, size_t size) {
    if (size > SIZE_MAX - sizeof(ArenaChunk) - 16) out_of_memory(size, 1);
    size = (size + 15) & ~(size_t)15;
    ArenaChunk *c = a->head;
    if (!c || c->cap - c->used < size) {
        size_t cap = size > CHUNK_SIZE ? size : CHUNK_SIZE;
        c = xalloc(sizeof *c + cap, 1);
        c->used = 0;
        c->cap = cap;
        c->next = a->head;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += size;
    memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = arena_alloc(a, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void arena_free(Arena *a) {
    ArenaChunk *c = a->head;
    while (c) {
        ArenaChunk *next = c->next;
        free(c);
        c = next;
    }
    a->head = NULL;
}

void ptrvec_push(Arena *a, PtrVec *v, void *item) {
    if (v->len == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = arena_alloc(a, sizeof(void *) * (size_t)cap);
        if (v->len) memcpy(items, v->items, sizeof(void *) * (size_t)v->len);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = item;
}
