/* Fuzz target: nsight-parser's reader of `nsys stats` kernel-trace CSV, then the per-model
 * tables built from what it read (as nsight-parser does before writing its outputs). */
#include <stdint.h>
#include <stdio.h>

#include "fuzz_file.h"
#include "inputs.h"
#include "model_list.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file_write(data, size, "csv");
    if (!path)
        return 0;
    struct np_report report;
    np_report_init(&report);
    if (np_read_kern_exec_csv(path, &report) && report.kernel_count > 0) {
        struct np_model_list models = {0};
        np_report_sort_kernels(&report);
        np_model_list_build(&report, NULL, &models);
        np_model_list_free(&models);
    }
    np_report_free(&report);
    return 0;
}
