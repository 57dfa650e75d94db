/* jitlike.c — a JIT in miniature, for tests/e2e-jit.sh: copies the code of spin() (alone in
 * section jit_code, so its bytes are __start_jit_code..__stop_jit_code; it calls nothing and
 * reads no global, so it runs anywhere) into an anonymous mapping made executable, writes
 * /tmp/perf-PID.map naming it (and a second, never run, function and a line that does not
 * parse), and runs the copy for SECONDS of CPU time.
 *
 * Usage: jitlike SECONDS [plain|other-owner|link|remap]
 *   other-owner: the map is given to `nobody` (root only): the collector must refuse it.
 *   link: the map is a symbolic link to a file of ours: the collector must refuse it.
 *   remap: no copy and no map: the page of the executable's file that holds spin() is mapped
 *          a second time, executable, elsewhere (as V8 maps node's builtins again), and spin
 *          runs there: named through the file, as perf names it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <link.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline, section("jit_code"))) uint64_t spin(uint64_t n, uint64_t x)
{
    for (uint64_t i = 0; i < n; i++)
        x = x * 6364136223846793005u + 1442695040888963407u + (x >> 29);
    return x;
}
extern const uint8_t __start_jit_code[], __stop_jit_code[];

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The file offset of the executable's byte at `address`. */
struct where {
    uintptr_t address;
    long offset;
};
static int find_offset(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct where *w = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && w->address >= start && w->address < start + ph->p_filesz)
            w->offset = (long)(ph->p_offset + (w->address - start));
    }
    return 1; /* the first entry is the executable */
}

static uint64_t (*remapped(void))(uint64_t, uint64_t)
{
    struct where w = {(uintptr_t)&spin, -1};
    dl_iterate_phdr(find_offset, &w);
    long page = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/exe", O_RDONLY);
    if (w.offset < 0 || fd < 0)
        return NULL;
    long at = w.offset & ~(page - 1);
    uint8_t *map = mmap(NULL, (size_t)(2 * page), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, at);
    close(fd);
    if (map == MAP_FAILED)
        return NULL;
    return (uint64_t(*)(uint64_t, uint64_t))(void *)(map + (w.offset - at));
}

/* spin() copied into an anonymous executable mapping, named in /tmp/perf-PID.map (as a link
 * or given to nobody, by mode); NULL on failure. */
static uint64_t (*copied(const char *mode))(uint64_t, uint64_t)
{
    size_t size = (size_t)(__stop_jit_code - __start_jit_code);
    uint8_t *code = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED || size == 0 || size > 4096)
        return NULL;
    memcpy(code, __start_jit_code, size);
    if (mprotect(code, 8192, PROT_READ | PROT_EXEC) != 0)
        return NULL;
    __builtin___clear_cache((char *)code, (char *)code + size);

    char path[64], target[80];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    snprintf(target, sizeof target, "/tmp/perf-%d.map.real", (int)getpid());
    int link_it = strcmp(mode, "link") == 0;
    FILE *map = fopen(link_it ? target : path, "w");
    if (map == NULL)
        return NULL;
    fprintf(map, "%lx %zx jit_spin_hot\n", (unsigned long)(uintptr_t)code, size);
    fprintf(map, "not a line of a perf map\n");
    fprintf(map, "%lx 40 jit_never_run\n", (unsigned long)(uintptr_t)(code + 4096));
    fclose(map);
    if (link_it && symlink(target, path) != 0)
        return NULL;
    if (strcmp(mode, "other-owner") == 0) {
        struct passwd *nobody = getpwnam("nobody");
        if (nobody == NULL || chown(path, nobody->pw_uid, nobody->pw_gid) != 0)
            return NULL;
    }
    return (uint64_t(*)(uint64_t, uint64_t))(void *)code;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    const char *mode = argc > 2 ? argv[2] : "plain";
    uint64_t (*run)(uint64_t, uint64_t) = strcmp(mode, "remap") == 0 ? remapped() : copied(mode);
    if (run == NULL)
        return 2;
    uint64_t x = 1;
    double start = cpu_seconds();
    while (cpu_seconds() - start < seconds)
        x = run(200000, x);
    printf("%d %llu\n", (int)getpid(), (unsigned long long)(x & 1));
    return 0;
}
