/*
 * grow.h — the one way adaptkv grows an array it appends to: capacity
 * doubles, starting at a caller-chosen size, with the multiplication checked.
 */
#ifndef AKV_GROW_H
#define AKV_GROW_H

#include <stdint.h>
#include <stdlib.h>

/*
 * Room for at least need elements of elem bytes in v, which holds *cap:
 * returns v itself when it is big enough, else the reallocated array with
 * *cap updated (doubled, or first when v has none yet), or NULL when memory
 * runs out or the size would overflow, leaving v and *cap as they were.
 */
static inline void *akvi_grow(void *v, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return v;
    size_t c = *cap ? *cap : first;
    while (c < need) {
        if (c > SIZE_MAX / 2)
            return NULL;
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        return NULL;
    void *p = realloc(v, c * elem);
    if (p)
        *cap = c;
    return p;
}

#endif
