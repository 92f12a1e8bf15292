/* The policies' names, descriptions and default rule, from the table of policies.h. Apart from
 * the segment (segment.c stores the value), so that a parser of names (run_exp/config.c) links
 * only this. */
#include <stdio.h>
#include <string.h>

#include "gpuyield.h"

struct policy_row {
    const char *name, *what;
    bool wants_mps;
};
#define POLICY_ROW(suffix, name, what, mps) [GY_POLICY_##suffix] = {name, what, mps},
static const struct policy_row policy_rows[GY_POLICY_COUNT] = {GY_POLICIES(POLICY_ROW)};
#undef POLICY_ROW

static enum gy_policy known_policy(enum gy_policy policy)
{
    return (unsigned)policy < GY_POLICY_COUNT ? policy : GY_POLICY_DRAIN;
}

const char *gy_policy_name(enum gy_policy policy) { return policy_rows[known_policy(policy)].name; }
const char *gy_policy_what(enum gy_policy policy) { return policy_rows[known_policy(policy)].what; }
bool gy_policy_wants_mps(enum gy_policy policy) { return policy_rows[known_policy(policy)].wants_mps; }
/* guarded under MPS since the matrix's 24 cells on the H100 passed the default's test at one rule
 * (bench/results/2026-12-07-h100-sweep-3/): stop wherever a partition costs the HP measurably, so
 * never less than corun gives beyond measurement, more beside launch-bound HPs. */
enum gy_policy gy_policy_default(bool mps) { return mps ? GY_POLICY_GUARDED : GY_POLICY_DRAIN; }

int gy_policy_parse(const char *text, enum gy_policy *out)
{
    for (int i = 0; text && i < GY_POLICY_COUNT; i++)
        if (strcmp(text, policy_rows[i].name) == 0) {
            *out = (enum gy_policy)i;
            return 0;
        }
    return -1;
}

const char *gy_policy_choices(char *buf, size_t len, const char *sep, const char *last_sep)
{
    size_t used = 0;
    for (int i = 0; i < GY_POLICY_COUNT && len; i++) {
        const char *before = i == 0 ? "" : i == GY_POLICY_COUNT - 1 ? last_sep : sep;
        int n = snprintf(buf + used, len - used, "%s%s", before, policy_rows[i].name);
        used += n > 0 && (size_t)n < len - used ? (size_t)n : len - used - 1;
    }
    return buf;
}
