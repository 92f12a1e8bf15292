/* Prints the exported names of hooks/hooked_functions.h, one a line: the list that
 * tests/suites/30-hooks.sh holds `nm -D` of the library and the generated exports.map to. */
#include <stdio.h>

#include "hooked_functions.h"

#define PRINT_NAME(name, id, pfn) puts(#name);

int main(void)
{
    GY_HOOKED_FUNCTIONS(PRINT_NAME)
    return 0;
}
