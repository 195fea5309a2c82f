/* arena.h — the compiler's memory: a bump allocator for compiler data (AST, system model),
   freed in one go, and checked heap allocation for what outlives or outgrows an arena (IR). */
#ifndef PHYSC_ARENA_H
#define PHYSC_ARENA_H
#include <stddef.h>

typedef struct ArenaChunk ArenaChunk;
typedef struct Arena {
    ArenaChunk *head;
} Arena;

void *arena_alloc(Arena *a, size_t size);          /* zeroed, 16-byte aligned */
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_strdup(Arena *a, const char *s);
char *arena_printf(Arena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void arena_free(Arena *a);

/* malloc, calloc, realloc and strdup that never return NULL: count * size is checked for
   overflow, and when memory runs out the compiler stops with "physc: out of memory: N bytes
   (X GB) while compiling" and exit status 1 (its passes have no error path to unwind, and a
   NULL would crash). At least one byte is allocated, so xalloc(0, ...) is a valid pointer. */
void *xalloc(size_t count, size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t count, size_t size);
char *xstrdup(const char *s);

/* Growable array of pointers living in an arena (old storage is simply abandoned). */
typedef struct PtrVec {
    void **items;
    int len, cap;
} PtrVec;
void ptrvec_push(Arena *a, PtrVec *v, void *item);

#endif
