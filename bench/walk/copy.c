/* copy.c — what a stack copy costs the handler (shim/stackcopy.c, osp__stack_copy_read): SIZE
 * bytes of this thread's own stack, from a frame that far below its top, read again and again
 * as the handler reads them (process_vm_readv, pieces of 32 KiB, a vector a page), each read
 * timed on its own. Prints the median and 99th percentile per size. Usage: copy [READS]. Built
 * and run by run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "osp_core.h"
#include "timing.h"

#define MOST (128u << 10)

static uint8_t buf[MOST];

/* READS reads of each size from the start of a frame MOST bytes long. */
__attribute__((noinline)) static void measure(int reads)
{
    volatile uint8_t frame[MOST + 4096];
    memset((void *)frame, 1, sizeof frame);
    uint64_t sp = (uint64_t)(uintptr_t)frame;
    uint64_t *times = malloc((size_t)reads * sizeof *times);
    for (uint32_t size = 8u << 10; size <= MOST; size *= 2) {
        size_t got = 0;
        for (int i = 0; i < reads; i++) {
            uint64_t t0 = now_ns();
            got = osp__stack_copy_read(sp, buf, size);
            times[i] = now_ns() - t0;
        }
        qsort(times, (size_t)reads, sizeof *times, compare);
        printf("copy %4u KiB  read %6zu bytes  median %6.2f us  p99 %6.2f us\n", size >> 10, got,
               (double)times[reads / 2] / 1e3, (double)times[reads * 99 / 100] / 1e3);
    }
    free(times);
}

int main(int argc, char **argv)
{
    measure(argc > 1 ? atoi(argv[1]) : 2001);
    return 0;
}
