#include "int_map.h"

#include <stdlib.h>

void np_int_map_init(struct np_int_map *map)
{
    *map = (struct np_int_map){0};
}

void np_int_map_free(struct np_int_map *map)
{
    free(map->keys);
    free(map->values);
    free(map->used);
    *map = (struct np_int_map){0};
}

static size_t slot_of(int64_t key, size_t capacity)
{
    /* splitmix64 finaliser: correlation ids are sequential, so spread them. */
    uint64_t x = (uint64_t)key;
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (size_t)(x & (capacity - 1));
}

static bool grow(struct np_int_map *map)
{
    size_t capacity = map->capacity ? map->capacity * 2 : 1024;
    int64_t *keys = malloc(capacity * sizeof *keys);
    uint32_t *values = malloc(capacity * sizeof *values);
    unsigned char *used = calloc(capacity, 1);
    if (!keys || !values || !used) {
        free(keys);
        free(values);
        free(used);
        return false;
    }
    for (size_t i = 0; i < map->capacity; i++) {
        if (!map->used[i])
            continue;
        size_t s = slot_of(map->keys[i], capacity);
        while (used[s])
            s = (s + 1) & (capacity - 1);
        used[s] = 1;
        keys[s] = map->keys[i];
        values[s] = map->values[i];
    }
    free(map->keys);
    free(map->values);
    free(map->used);
    map->keys = keys;
    map->values = values;
    map->used = used;
    map->capacity = capacity;
    return true;
}

bool np_int_map_put(struct np_int_map *map, int64_t key, uint32_t value)
{
    if ((map->count + 1) * 2 > map->capacity && !grow(map))
        return false;
    size_t s = slot_of(key, map->capacity);
    while (map->used[s] && map->keys[s] != key)
        s = (s + 1) & (map->capacity - 1);
    if (!map->used[s]) {
        map->used[s] = 1;
        map->keys[s] = key;
        map->count++;
    }
    map->values[s] = value;
    return true;
}

uint32_t *np_int_map_get(const struct np_int_map *map, int64_t key)
{
    if (!map->capacity)
        return NULL;
    size_t s = slot_of(key, map->capacity);
    while (map->used[s]) {
        if (map->keys[s] == key)
            return &map->values[s];
        s = (s + 1) & (map->capacity - 1);
    }
    return NULL;
}
