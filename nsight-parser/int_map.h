/* An open-addressing hash map from int64 keys to uint32 values: joins kernels to their launch
 * calls (key: pid and correlationId) and StringIds ids to interned names, in O(1) per row. */
#ifndef NP_INT_MAP_H
#define NP_INT_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct np_int_map {
    int64_t *keys;
    uint32_t *values;
    unsigned char *used;
    size_t capacity; /* a power of two */
    size_t count;
};

void np_int_map_init(struct np_int_map *map);
void np_int_map_free(struct np_int_map *map);
/* Returns false when out of memory. */
bool np_int_map_put(struct np_int_map *map, int64_t key, uint32_t value);
/* Returns a pointer to the value, or NULL if the key is absent. */
uint32_t *np_int_map_get(const struct np_int_map *map, int64_t key);

#endif
