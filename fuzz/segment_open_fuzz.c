/* Fuzz target: a shared segment made of arbitrary bytes, then every reader a foreign process
 * may point at it: gy_open, gy_status_read (+ JSON), gy_reap, register, a job, a drain check.
 *
 * Input: one control byte, then the segment's bytes.
 *   bit 0: the segment gets the size of struct gy_segment (the bytes fill it from the start,
 *          the rest stays zero); otherwise it is exactly as long as the remaining bytes.
 *   bit 1: write a valid header (magic, version, size, owner, a 1 ms drain timeout) over the
 *          bytes, so the fuzzer spends its time behind the opener's checks.
 *   bits 2-4: the priority used to register and run a job.
 * The robust mutex is always initialised fresh: a lock word naming a live thread of another
 * program is outside what the controller can tell from a real owner (see corrupt_test.c for
 * one naming a dead thread). Nothing is left behind: the segment is unlinked after each input. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "gpuyield.h"
#include "layout_stamp.h"
#include "shared_wait.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const char *name, int priority)
{
    gy_shm shm;
    gy_err err;
    static struct gy_status st;
    static char json[65536];
    if (gy_open(name, &shm, &err))
        return;
    if (gy_status_read(&shm, &st, &err) == 0)
        gy_status_json(&st, json, sizeof json);
    gy_reap(&shm);
    if (gy_register(&shm, priority, &err) == 0) {
        gy_job job;
        if (gy_job_enter(&shm, priority, 1000000, &job, &err) == 0) {
            gy_job_wait_drained(&shm, &job, 1000000);
            gy_job_exit(&shm, &job, &err);
        }
        uint64_t epoch;
        gy_mark_inflight(&shm);
        if (gy_drain_wait_request(&shm, 0, &epoch))
            gy_drain_ack(&shm, epoch, false);
    }
    gy_close(&shm);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t control = data[0];
    data++, size--;
    char name[GY_NAME_MAX];
    snprintf(name, sizeof name, "/gpuyield-%u-test-fuzz-%d", (unsigned)geteuid(), (int)getpid());
    shm_unlink(name);
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0)
        return 0;
    size_t seg_size = (control & 1) ? sizeof(struct gy_segment) : size;
    if (ftruncate(fd, (off_t)seg_size) == 0 && seg_size > 0) {
        uint8_t *map = mmap(NULL, seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED) {
            memcpy(map, data, size < seg_size ? size : seg_size);
            if (seg_size == sizeof(struct gy_segment)) {
                struct gy_segment *seg = (struct gy_segment *)map;
                if (control & 2) {
                    seg->magic = GY_MAGIC;
                    seg->layout_stamp = GY_LAYOUT_STAMP;
                    seg->segment_size = sizeof *seg;
                    seg->owner_uid = (uint32_t)geteuid();
                    seg->drain_timeout_ns = 1000000;
                }
                gy_mutex_init(seg);
            }
            munmap(map, seg_size);
        }
    }
    close(fd);
    exercise(name, (control >> 2) & 7);
    shm_unlink(name);
    return 0;
}
