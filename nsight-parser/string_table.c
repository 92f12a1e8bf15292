#include "string_table.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void np_strings_init(struct np_string_table *table)
{
    *table = (struct np_string_table){0};
}

void np_strings_free(struct np_string_table *table)
{
    for (size_t i = 0; i < table->count; i++)
        free(table->strings[i]);
    free(table->strings);
    free(table->slots);
    *table = (struct np_string_table){0};
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static bool rehash(struct np_string_table *table)
{
    size_t slot_count = table->slot_count ? table->slot_count * 2 : 256;
    uint32_t *slots = calloc(slot_count, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < table->count; i++) {
        size_t s = hash_bytes(table->strings[i], strlen(table->strings[i])) & (slot_count - 1);
        while (slots[s])
            s = (s + 1) & (slot_count - 1);
        slots[s] = (uint32_t)(i + 1);
    }
    free(table->slots);
    table->slots = slots;
    table->slot_count = slot_count;
    return true;
}

int64_t np_strings_intern(struct np_string_table *table, const char *s, size_t len)
{
    if ((table->count + 1) * 2 > table->slot_count && !rehash(table))
        return -1;
    size_t slot = hash_bytes(s, len) & (table->slot_count - 1);
    while (table->slots[slot]) {
        const char *have = table->strings[table->slots[slot] - 1];
        if (strncmp(have, s, len) == 0 && have[len] == '\0')
            return table->slots[slot] - 1;
        slot = (slot + 1) & (table->slot_count - 1);
    }
    if (table->count == table->capacity) {
        size_t capacity = table->capacity ? table->capacity * 2 : 64;
        char **strings = realloc(table->strings, capacity * sizeof *strings);
        if (!strings)
            return -1;
        table->strings = strings;
        table->capacity = capacity;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, s, len);
    copy[len] = '\0';
    table->strings[table->count] = copy;
    table->slots[slot] = (uint32_t)(table->count + 1);
    return (int64_t)table->count++;
}
