/* Interned strings (kernel and range names): each distinct name is stored once and named by a
 * small index, so a million kernel rows cost an index each, not a copy of a long name. */
#ifndef NP_STRING_TABLE_H
#define NP_STRING_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct np_string_table {
    char **strings;
    size_t count, capacity;
    uint32_t *slots; /* hash slots holding index + 1; 0 is empty */
    size_t slot_count;
};

void np_strings_init(struct np_string_table *table);
void np_strings_free(struct np_string_table *table);
/* Index of the string (len bytes, need not be NUL-terminated), adding it if new; -1 when out of
 * memory. */
int64_t np_strings_intern(struct np_string_table *table, const char *s, size_t len);
static inline const char *np_strings_get(const struct np_string_table *table, uint32_t index)
{
    return table->strings[index];
}

#endif
