/* walk.c — the SIGPROF handler's walk timed alone (shim/unwind.c, osp__unwind): a real stack
 * of DEPTH frames of frameless code (gcc -O2), captured with getcontext at its deepest
 * frame, walked again and again by the unwind rows ospreyd would publish for this process
 * (built here with the daemon's own code from /proc/self/maps), and by the frame-pointer walk
 * alone, each walk timed on its own; then ospreyd's walk of a copy of that stack as an
 * attached sample's (daemon/stack-walk.c), cut at a record's cap and walked on to the root.
 * Prints the median and 99th percentile per walk, the frames found and the depth. Usage:
 * walk [DEPTH] [WALKS]. Built and run by run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>

#include "osp_core.h"
#include "osp_unwind.h"
#include "ospd_attach.h"
#include "ospd_perf_source.h"
#include "ospd_unwind.h"
#include "timing.h"

static ucontext_t captured;
static volatile int sink;
static int (*volatile next)(int); /* through a pointer: the recursion stays calls */
static void (*volatile at_bottom)(void);

/* DEPTH frames, then the measurement from the deepest: the frames must be live when walked. */
__attribute__((noinline)) static int descend(int n)
{
    if (n == 0) {
        getcontext(&captured);
        at_bottom();
        return 1;
    }
    int r = next(n - 1);
    sink = r;
    return r + 1;
}

/* Rows for every executable mapping of this process, as unwind-source.c builds them. */
static uint64_t publish_own_tables(struct ospd_unwind_region *r, uint8_t *map, uint64_t size)
{
    struct osp_unwind_header *h = (struct osp_unwind_header *)map;
    osp_unwind_header_init(h, size, OSP__CPU_ELF_MACHINE);
    char err[256];
    if (ospd_unwind_region_init(r, map, size, -1, err, sizeof err) != 0) {
        fprintf(stderr, "walk: %s\n", err);
        exit(1);
    }
    FILE *f = fopen("/proc/self/maps", "r");
    char line[8192];
    uint64_t rows = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long long start, end, offset;
        char perms[8], path[4096] = "";
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &start, &end, perms, &offset, path) <
                5 ||
            perms[2] != 'x' || path[0] != '/')
            continue;
        struct ospd_unwind_source src = {.path = path,
                                         .machine = OSP__CPU_ELF_MACHINE,
                                         .mapped = true,
                                         .map_start = start,
                                         .map_offset = offset};
        struct ospd_unwind_rows out;
        if (ospd_unwind_build(&src, &out, err, sizeof err) == 0) {
            ospd_unwind_region_publish(r, out.bias + out.start_vaddr, &out);
            rows += out.count;
            ospd_unwind_rows_free(&out);
        }
    }
    if (f)
        fclose(f);
    return rows;
}

static void measure(const char *what, const struct osp__regs *regs, uint64_t hi, int walks)
{
    uint64_t *times = malloc((size_t)walks * sizeof *times);
    uint64_t out[OSP_MAX_DEPTH];
    uint32_t depth = 0;
    for (int i = 0; i < walks; i++) {
        uint64_t t0 = now_ns();
        depth = osp__unwind(regs, 1, regs->sp, hi, out, OSP_MAX_DEPTH);
        times[i] = now_ns() - t0;
    }
    qsort(times, (size_t)walks, sizeof *times, compare);
    printf("%-14s frames %3u  median %6.0f ns  p99 %6.0f ns  per frame %5.1f ns\n", what, depth,
           (double)times[walks / 2], (double)times[walks * 99 / 100],
           (double)times[walks / 2] / depth);
    free(times);
}

/* The attach's walk of a sample's stack copy (daemon/stack-walk.c): OSPD_PERF_STACK_BYTES from
 * sp, copied once, walked again and again by the rows (tables) as a perf or ptrace sample's is:
 * cut at a record's cap (`deep` false: the walk before it went on past the cap,
 * ospd_walk_copy_regs) or on to the root and folded (ospd_walk_copy_why). */
static void measure_copy(const char *what, const struct osp__regs *regs, uint64_t hi,
                         const void *tables, uint64_t tables_size, bool deep, int walks)
{
    static uint8_t copy_bytes[OSPD_PERF_STACK_BYTES];
    uint64_t have = hi - regs->sp < sizeof copy_bytes ? hi - regs->sp : sizeof copy_bytes;
    memcpy(copy_bytes, (const void *)(uintptr_t)regs->sp, have);
    const struct ospd_stack_copy copy = {regs->sp, copy_bytes, have};
    const struct osp_unwind_regs r = {regs->pc, regs->sp, regs->fp, 0};
    uint64_t *times = malloc((size_t)walks * sizeof *times);
    uint64_t out[OSP_MAX_DEPTH];
    uint32_t depth = 0;
    enum osp_unwind_stop stop = OSP_UNWIND_GO_ON;
    for (int i = 0; i < walks; i++) {
        uint64_t t0 = now_ns();
        depth = deep ? ospd_walk_copy_why(tables, tables_size, r.pc, r.sp, r.fp, &copy, out,
                                          OSP_MAX_DEPTH, &stop)
                     : ospd_walk_copy_regs(tables, tables_size, &r, 1, &copy, out, OSP_MAX_DEPTH,
                                           &stop, NULL);
        times[i] = now_ns() - t0;
    }
    qsort(times, (size_t)walks, sizeof *times, compare);
    const uint32_t marker = OSP_MAX_DEPTH - 1 - OSP_UNWIND_OUTER_FRAMES;
    uint64_t walked = depth == OSP_MAX_DEPTH && osp_unwind_left_out_is(out[marker])
                          ? depth - 1 + osp_unwind_left_out_count(out[marker])
                          : depth;
    printf("%-14s frames %3llu  median %6.0f ns  p99 %6.0f ns  per frame %5.1f ns  stop %d\n", what,
           (unsigned long long)walked, (double)times[walks / 2], (double)times[walks * 99 / 100],
           (double)times[walks / 2] / (double)walked, (int)stop);
    free(times);
}

static uint8_t *map;
static uint64_t size = 64u << 20, stack_hi;
static int walks;

static void measure_here(void)
{
    struct osp__regs regs;
    osp__cpu_regs(&captured, &regs);
    osp__unwind_set_tables(map, size);
    measure("rows", &regs, stack_hi, walks);
    osp__unwind_set_tables(NULL, 0);
    measure("frame pointer", &regs, stack_hi, walks);
    measure_copy("copy, cut", &regs, stack_hi, map, size, false, walks);
    measure_copy("copy, deep", &regs, stack_hi, map, size, true, walks);
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 30;
    walks = argc > 2 ? atoi(argv[2]) : 200000;
    osp__read_code_init(); /* as boot does: code bytes at pc read directly where allowed */
    /* The stack's top: the end of the [stack] mapping. */
    FILE *f = fopen("/proc/self/maps", "r");
    static char line[8192]; /* not on the stack: a copy of it from the deepest frame reaches main */
    while (f && fgets(line, sizeof line, f))
        if (strstr(line, "[stack]"))
            sscanf(line, "%*x-%lx", &stack_hi);
    if (f)
        fclose(f);
    map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct ospd_unwind_region region;
    uint64_t t0 = now_ns();
    uint64_t rows = publish_own_tables(&region, map, size);
    printf("tables: %llu rows, %llu bytes, built in %.1f ms\n", (unsigned long long)rows,
           (unsigned long long)region.used, (double)(now_ns() - t0) / 1e6);
    next = descend;
    at_bottom = measure_here;
    descend(depth);
    return 0;
}
