/* test-unwind.c — unit tests of ospreyd's unwind tables (daemon/unwind-table.c,
 * daemon/unwind-publish.c): rows built from real objects (the C library, this test's own
 * code) say what the CFI says at known places; a mapped object's load bias is the loader's;
 * rows kept between runs by build id come back the same, a damaged cache file is built again,
 * so are rewritten rows and rows of another object of the same build id, and nothing another
 * user owns is kept or read;
 * corrupt .eh_frame and .eh_frame_hdr bytes end in an error or in sorted rows, never a
 * crash; a file that is not ELF is one line naming it; snapshots are published sorted,
 * replace what an image unloaded left, and stay valid when the object is full. */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospd.h"
#include "ospd_unwind.h"
#include "suite.h"

#if defined(__x86_64__)
#define MACHINE EM_X86_64
#else
#define MACHINE EM_AARCH64
#endif

struct found {
    const char *needle;
    char path[4096];
    uint64_t slide;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct found *f = data;
    if (info->dlpi_name && strstr(info->dlpi_name, f->needle)) {
        snprintf(f->path, sizeof f->path, "%s", info->dlpi_name);
        f->slide = info->dlpi_addr;
        return 1;
    }
    return 0;
}

static struct found object(const char *needle)
{
    struct found f = {.needle = needle};
    dl_iterate_phdr(find_object, &f);
    return f;
}

/* The row in force at link-time address vaddr. */
static const struct osp_unwind_row *row_at(const struct ospd_unwind_rows *r, uint64_t vaddr)
{
    const struct osp_unwind_row *best = NULL;
    for (uint32_t i = 0; i < r->count; i++)
        if (r->start_vaddr + r->rows[i].pc_offset <= vaddr)
            best = &r->rows[i];
    return best;
}

static void assert_sorted(const struct ospd_unwind_rows *r)
{
    for (uint32_t i = 1; i < r->count; i++)
        ck_assert_uint_lt(r->rows[i - 1].pc_offset, r->rows[i].pc_offset);
}

START_TEST(libc_rows_follow_its_cfi)
{
    struct found libc = object("libc.so");
    ck_assert_str_ne(libc.path, "");
    struct ospd_unwind_source src = {.path = libc.path, .machine = MACHINE};
    struct ospd_unwind_rows r;
    char err[256] = "";
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ck_assert_uint_gt(r.count, 5000);
    assert_sorted(&r);
    uint32_t signal_rows = 0, end_rows = 0, sp_rows = 0;
    for (uint32_t i = 0; i < r.count; i++) {
        signal_rows += r.rows[i].cfa_rule == OSP_CFA_SIGNAL;
        end_rows += r.rows[i].cfa_rule == OSP_CFA_END;
        sp_rows += r.rows[i].cfa_rule == OSP_CFA_SP;
    }
#if defined(__x86_64__)
    ck_assert_uint_ge(signal_rows, 1); /* __restore_rt (aarch64's is the vDSO's) */
#endif
    ck_assert_uint_ge(end_rows, 1); /* clone3's child, the outermost frame of a thread */
    ck_assert_uint_gt(sp_rows, r.count / 2);
    /* At a function's first instruction the CFA is sp + 8 and the return address at CFA - 8
     * (x86_64), or in the link register (aarch64). */
    uint64_t getpid_vaddr = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "getpid") - libc.slide;
    const struct osp_unwind_row *entry = row_at(&r, getpid_vaddr);
    ck_assert_ptr_nonnull(entry);
    ck_assert_int_eq(entry->cfa_rule, OSP_CFA_SP);
#if defined(__x86_64__)
    ck_assert_int_eq(entry->cfa_offset, 8);
    ck_assert_int_eq(entry->ra_rule, OSP_RA_AT_CFA);
    ck_assert_int_eq(entry->ra_offset, -8);
#else
    ck_assert_int_eq(entry->cfa_offset, 0);
    ck_assert_int_eq(entry->ra_rule, OSP_RA_IN_LR);
#endif
    ospd_unwind_rows_free(&r);
}
END_TEST

/* A function of this file, built with a frame pointer: inside its body the CFA is the frame
 * pointer + 16 and the caller's frame pointer is saved at CFA - 16 (x86_64; aarch64 below). */
__attribute__((noinline)) int with_frame_pointer(int x);
__attribute__((noinline)) int with_frame_pointer(int x)
{
    volatile int v[4] = {x, x + 1, x + 2, x + 3};
    return v[0] + v[3];
}

START_TEST(own_rows_see_the_frame_pointer_prologue)
{
    struct found self = {.needle = ""};
    Dl_info info;
    ck_assert_int_ne(dladdr((void *)with_frame_pointer, &info), 0);
    ck_assert_int_gt(readlink("/proc/self/exe", self.path, sizeof self.path - 1), 0);
    struct ospd_unwind_source src = {.path = self.path, .machine = MACHINE};
    struct ospd_unwind_rows r;
    char err[256] = "";
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    assert_sorted(&r);
    uint64_t fn = (uint64_t)(uintptr_t)with_frame_pointer - (uint64_t)(uintptr_t)info.dli_fbase;
    int saw_fp_rule = 0;
    for (uint64_t at = fn; at < fn + 24; at++) {
        const struct osp_unwind_row *row = row_at(&r, at);
        ck_assert_ptr_nonnull(row);
#if defined(__x86_64__)
        if (row->cfa_rule == OSP_CFA_FP && row->cfa_offset == 16 && row->fp_rule == OSP_FP_AT_CFA &&
            row->fp_offset == -16)
            saw_fp_rule = 1;
#else
        /* aarch64: the frame record {x29, x30} at the CFA's bottom, the CFA from x29 + 16
         * (clang) or from sp (GCC keeps it there). */
        if (row->fp_rule == OSP_FP_AT_CFA && row->ra_rule == OSP_RA_AT_CFA &&
            row->ra_offset == row->fp_offset + 8 &&
            ((row->cfa_rule == OSP_CFA_FP && row->cfa_offset == 16) ||
             (row->cfa_rule == OSP_CFA_SP && row->fp_offset == -row->cfa_offset)))
            saw_fp_rule = 1;
#endif
    }
    ck_assert_int_eq(saw_fp_rule, 1);
    ospd_unwind_rows_free(&r);
}
END_TEST

/* Built from a mapping (as ospreyd does from /proc/PID/maps), the load bias is the loader's. */
START_TEST(mapped_source_finds_the_load_bias)
{
    struct found libc = object("libc.so");
    FILE *maps = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(maps);
    char line[8192];
    uint64_t start = 0, end = 0, offset = 0;
    while (fgets(line, sizeof line, maps)) {
        char perms[8], path[4096] = "";
        unsigned long long s, e, o;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %4095s", &s, &e, perms, &o, path) >= 4 &&
            perms[2] == 'x' && strstr(path, "libc.so")) {
            start = s, end = e, offset = o;
            break;
        }
    }
    fclose(maps);
    ck_assert_uint_ne(start, 0);
    struct ospd_unwind_source src = {.path = libc.path,
                                     .machine = MACHINE,
                                     .mapped = true,
                                     .map_start = start,
                                     .map_offset = offset};
    struct ospd_unwind_rows r;
    char err[256] = "";
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ck_assert_uint_eq(r.bias, libc.slide);
    ck_assert_uint_ge(r.bias + r.start_vaddr, start);
    ck_assert_uint_le(r.bias + r.end_vaddr, end);
    ospd_unwind_rows_free(&r);
}
END_TEST

/* Rows kept between runs by build id: read back the same, a damaged file is built again. */
START_TEST(rows_come_back_from_the_cache_and_a_damaged_one_is_rebuilt)
{
    struct found libc = object("libc.so");
    char dir[] = "/tmp/osprey-unwind-cache-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char cache[sizeof dir + 16];
    snprintf(cache, sizeof cache, "%s/a/b", dir); /* made as needed */
    struct ospd_unwind_source src = {.path = libc.path, .machine = MACHINE, .cache_dir = cache};
    struct ospd_unwind_rows built, again, rebuilt;
    char err[256] = "";
    ck_assert_int_eq(ospd_unwind_build(&src, &built, err, sizeof err), 0);
    ck_assert(!built.from_cache);
    ck_assert_int_eq(ospd_unwind_build(&src, &again, err, sizeof err), 0);
    ck_assert(again.from_cache);
    ck_assert_uint_eq(again.count, built.count);
    ck_assert_uint_eq(again.start_vaddr, built.start_vaddr);
    ck_assert_int_eq(memcmp(again.rows, built.rows, built.count * sizeof *built.rows), 0);
    /* Cut the cached file short: it is not trusted, the rows are built again and kept. */
    char command[512];
    snprintf(command, sizeof command, "for f in %s/*.rows; do truncate -s 1000 \"$f\"; done",
             cache);
    ck_assert_int_eq(system(command), 0);
    ck_assert_int_eq(ospd_unwind_build(&src, &rebuilt, err, sizeof err), 0);
    ck_assert(!rebuilt.from_cache);
    ck_assert_uint_eq(rebuilt.count, built.count);
    ospd_unwind_rows_free(&built);
    ospd_unwind_rows_free(&again);
    ospd_unwind_rows_free(&rebuilt);
    snprintf(command, sizeof command, "rm -rf %s", dir);
    ck_assert_int_eq(system(command), 0);
}
END_TEST

START_TEST(not_an_object_is_one_line_naming_it)
{
    char path[] = "/tmp/osprey-unwind-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "not an ELF file\n", 16), 16);
    close(fd);
    struct ospd_unwind_source src = {.path = path, .machine = MACHINE};
    struct ospd_unwind_rows r;
    char err[256] = "";
    ck_assert_int_lt(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(err, path));
    ck_assert_ptr_null(strchr(err, '\n'));
    ck_assert_ptr_null(r.rows);
    src.path = "/nonexistent/osprey-object";
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), -ENOENT);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/osprey-object"));
    unlink(path);
}
END_TEST

/* The file range [offset, offset + size) of a section, found by name. */
static int section_range(const uint8_t *file, size_t size, const char *name, size_t *offset,
                         size_t *length)
{
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
    if (size < sizeof *eh || eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
        return -1;
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(file + eh->e_shoff);
    const char *names = (const char *)file + sh[eh->e_shstrndx].sh_offset;
    for (unsigned i = 0; i < eh->e_shnum; i++) {
        if (strcmp(names + sh[i].sh_name, name) == 0) {
            *offset = sh[i].sh_offset;
            *length = sh[i].sh_size;
            return 0;
        }
    }
    return -1;
}

/* ---- the cache, against what another user (or a rewrite) could put in it ---- */

static char cache_scratch[64];

/* A scratch directory nobody can read into: DIR/cache is the cache, DIR/objects copies. */
static void cache_setup(char *cache, size_t size)
{
    snprintf(cache_scratch, sizeof cache_scratch, "/tmp/osprey-unwind-cache-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(cache_scratch));
    ck_assert_int_eq(chmod(cache_scratch, 0755), 0); /* objects in it are nobody's too */
    snprintf(cache, size, "%s/cache", cache_scratch);
}

static void cache_teardown(void)
{
    char command[128];
    snprintf(command, sizeof command, "rm -rf %s", cache_scratch);
    ck_assert_int_eq(system(command), 0);
}

/* The single cache file in `cache` into `path` (0), or -1 when there are none or several. */
static int the_rows_file(const char *cache, char *path, size_t size)
{
    DIR *d = opendir(cache);
    if (d == NULL)
        return -1;
    int found = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') {
            found += snprintf(path, size, "%s/%s", cache, e->d_name) < (int)size ? 1 : 2;
        }
    closedir(d);
    return found == 1 ? 0 : -1;
}

/* A copy of the file at `from` at `to`, with `change` applied to its bytes (may be NULL). */
static size_t copy_object(const char *from, const char *to,
                          void (*change)(uint8_t *bytes, size_t size))
{
    static uint8_t bytes[16 << 20];
    FILE *in = fopen(from, "rb");
    ck_assert_ptr_nonnull(in);
    size_t size = fread(bytes, 1, sizeof bytes, in);
    fclose(in);
    ck_assert_uint_lt(size, sizeof bytes);
    if (change != NULL)
        change(bytes, size);
    FILE *out = fopen(to, "wb");
    ck_assert_ptr_nonnull(out);
    ck_assert_uint_eq(fwrite(bytes, 1, size, out), size);
    ck_assert_int_eq(fclose(out), 0);
    return size;
}

/* One byte of .eh_frame changed; the build id stays. */
static void alter_eh_frame(uint8_t *bytes, size_t size)
{
    size_t at, length;
    ck_assert_int_eq(section_range(bytes, size, ".eh_frame", &at, &length), 0);
    bytes[at + length / 2] ^= 0x01;
}

static void flip_byte(const char *path, off_t from_end)
{
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    uint8_t byte;
    ck_assert_int_eq(pread(fd, &byte, 1, st.st_size - from_end), 1);
    byte ^= 0x04;
    ck_assert_int_eq(pwrite(fd, &byte, 1, st.st_size - from_end), 1);
    close(fd);
}

/* A cached file whose rows were rewritten (its sizes and order still fine) is refused: the
 * rows are built again, the same as first built, and the file replaced. */
START_TEST(rewritten_cached_rows_are_refused_and_rebuilt)
{
    struct found libc = object("libc.so");
    char cache[128], rows_file[512];
    cache_setup(cache, sizeof cache);
    struct ospd_unwind_source src = {.path = libc.path, .machine = MACHINE, .cache_dir = cache};
    struct ospd_unwind_rows built, rebuilt, again;
    char err[256] = "";
    ck_assert_int_eq(ospd_unwind_build(&src, &built, err, sizeof err), 0);
    ck_assert_int_eq(the_rows_file(cache, rows_file, sizeof rows_file), 0);
    /* A field of the last row but one (its pc_offset untouched): a different rule. */
    flip_byte(rows_file, (off_t)sizeof *built.rows + 6);
    ck_assert_int_eq(ospd_unwind_build(&src, &rebuilt, err, sizeof err), 0);
    ck_assert(!rebuilt.from_cache);
    ck_assert_uint_eq(rebuilt.count, built.count);
    ck_assert_int_eq(memcmp(rebuilt.rows, built.rows, built.count * sizeof *built.rows), 0);
    ck_assert_int_eq(ospd_unwind_build(&src, &again, err, sizeof err), 0);
    ck_assert(again.from_cache); /* replaced by the rebuilt rows */
    ck_assert_int_eq(memcmp(again.rows, built.rows, built.count * sizeof *built.rows), 0);
    ospd_unwind_rows_free(&built);
    ospd_unwind_rows_free(&rebuilt);
    ospd_unwind_rows_free(&again);
    cache_teardown();
}
END_TEST

/* An object with libc's build id but another .eh_frame is not given libc's cached rows, and
 * libc is not given its rows after. */
START_TEST(an_object_of_the_same_build_id_with_other_frames_gets_its_own_rows)
{
    struct found libc = object("libc.so");
    char cache[128], copy[128];
    cache_setup(cache, sizeof cache);
    snprintf(copy, sizeof copy, "%s/libc.so.6", cache_scratch);
    copy_object(libc.path, copy, alter_eh_frame);
    struct ospd_unwind_source src = {.path = libc.path, .machine = MACHINE, .cache_dir = cache};
    struct ospd_unwind_source altered = src;
    altered.path = copy;
    struct ospd_unwind_rows r;
    char err[256] = "";
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ospd_unwind_rows_free(&r);
    int rc = ospd_unwind_build(&altered, &r, err, sizeof err);
    ck_assert(rc != 0 || !r.from_cache);
    ospd_unwind_rows_free(&r);
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ck_assert(rc != 0 || !r.from_cache); /* the altered copy's rows (ours) replaced libc's */
    ospd_unwind_rows_free(&r);
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ck_assert(r.from_cache);
    ospd_unwind_rows_free(&r);
    cache_teardown();
}
END_TEST

/* Rows of an object another user owns are built for the run, never kept; a cache file of
 * another user's in the cache is not read (and is replaced); a cache directory that is a
 * link is not used. Needs root, to make files of nobody's. */
START_TEST(another_users_object_and_files_are_never_trusted)
{
    struct found libc = object("libc.so");
    char cache[128], copy[128], rows_file[512], elsewhere[128];
    cache_setup(cache, sizeof cache);
    struct ospd_unwind_rows r;
    char err[256] = "";
    /* The cache directory a link to another directory: nothing is written there. */
    snprintf(elsewhere, sizeof elsewhere, "%s/elsewhere", cache_scratch);
    ck_assert_int_eq(mkdir(elsewhere, 0700), 0);
    ck_assert_int_eq(symlink(elsewhere, cache), 0);
    struct ospd_unwind_source src = {.path = libc.path, .machine = MACHINE, .cache_dir = cache};
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ospd_unwind_rows_free(&r);
    ck_assert_int_eq(the_rows_file(elsewhere, rows_file, sizeof rows_file), -1);
    ck_assert_int_eq(unlink(cache), 0);
    if (geteuid() != 0) {
        printf("another_users_object_and_files_are_never_trusted: skipped in part: not root\n");
        cache_teardown();
        return;
    }
    struct passwd *nobody = getpwnam("nobody");
    ck_assert_ptr_nonnull(nobody);
    snprintf(copy, sizeof copy, "%s/libc.so.6", cache_scratch);
    copy_object(libc.path, copy, NULL);
    ck_assert_int_eq(chown(copy, nobody->pw_uid, nobody->pw_gid), 0);
    src.path = copy;
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ck_assert(!r.from_cache);
    ck_assert_uint_gt(r.count, 5000); /* unwound for the run */
    ospd_unwind_rows_free(&r);
    ck_assert_int_eq(the_rows_file(cache, rows_file, sizeof rows_file), -1); /* not kept */
    /* The same object of ours is kept; the cache file then made nobody's is not read. */
    ck_assert_int_eq(chown(copy, 0, 0), 0);
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ospd_unwind_rows_free(&r);
    ck_assert_int_eq(the_rows_file(cache, rows_file, sizeof rows_file), 0);
    ck_assert_int_eq(chown(rows_file, nobody->pw_uid, nobody->pw_gid), 0);
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ck_assert(!r.from_cache);
    ospd_unwind_rows_free(&r);
    struct stat st;
    ck_assert_int_eq(stat(rows_file, &st), 0);
    ck_assert_uint_eq(st.st_uid, 0); /* replaced by ours */
    /* A cache directory another user owns is not used at all. */
    char command[512];
    snprintf(command, sizeof command, "rm -rf %s && mkdir %s && chown nobody %s", cache, cache,
             cache);
    ck_assert_int_eq(system(command), 0);
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), 0);
    ospd_unwind_rows_free(&r);
    ck_assert_int_eq(the_rows_file(cache, rows_file, sizeof rows_file), -1);
    cache_teardown();
}
END_TEST

/* A mapping's path that is a FIFO by the time it is read (another user's doing): one line,
 * never a build thread blocked in open. */
START_TEST(a_fifo_is_not_waited_on)
{
    char cache[128], fifo[160];
    cache_setup(cache, sizeof cache);
    snprintf(fifo, sizeof fifo, "%s/lib.so", cache_scratch);
    ck_assert_int_eq(mkfifo(fifo, 0644), 0);
    struct ospd_unwind_source src = {.path = fifo, .machine = MACHINE, .cache_dir = cache};
    struct ospd_unwind_rows r;
    char err[256] = "";
    ck_assert_int_eq(ospd_unwind_build(&src, &r, err, sizeof err), -EINVAL);
    ck_assert_ptr_nonnull(strstr(err, fifo));
    cache_teardown();
}
END_TEST

/* Random damage to .eh_frame and .eh_frame_hdr (a fixed seed, so a failure replays): every
 * build ends, in an error or in sorted rows. */
START_TEST(corrupt_call_frame_sections_never_crash)
{
    char self[4096] = "";
    ck_assert_int_gt(readlink("/proc/self/exe", self, sizeof self - 1), 0);
    FILE *f = fopen(self, "rb");
    ck_assert_ptr_nonnull(f);
    static uint8_t original[8 << 20];
    size_t size = fread(original, 1, sizeof original, f);
    fclose(f);
    size_t frame_at, frame_len, hdr_at, hdr_len;
    ck_assert_int_eq(section_range(original, size, ".eh_frame", &frame_at, &frame_len), 0);
    ck_assert_int_eq(section_range(original, size, ".eh_frame_hdr", &hdr_at, &hdr_len), 0);
    static uint8_t damaged[8 << 20];
    char path[] = "/tmp/osprey-unwind-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    srand(20261201);
    int rounds = getenv("OSPREY_UNDER_VALGRIND") ? 8 : 120, built = 0;
    for (int round = 0; round < rounds; round++) {
        memcpy(damaged, original, size);
        int flips = 1 + rand() % 16;
        for (int i = 0; i < flips; i++) {
            int in_header = rand() % 3 == 0;
            size_t at = in_header ? hdr_at + (size_t)rand() % hdr_len
                                  : frame_at + (size_t)rand() % frame_len;
            damaged[at] = (uint8_t)rand();
        }
        FILE *out = fopen(path, "wb");
        ck_assert_ptr_nonnull(out);
        ck_assert_uint_eq(fwrite(damaged, 1, size, out), size);
        fclose(out);
        struct ospd_unwind_source src = {.path = path, .machine = MACHINE};
        struct ospd_unwind_rows r;
        char err[256] = "";
        if (ospd_unwind_build(&src, &r, err, sizeof err) == 0) {
            assert_sorted(&r);
            built++;
            ospd_unwind_rows_free(&r);
        } else {
            ck_assert_ptr_nonnull(strstr(err, path));
        }
    }
    unlink(path);
    ck_assert_int_gt(built, 0); /* most damage leaves most FDEs readable */
}
END_TEST

/* ---- publishing ---------------------------------------------------------------------------- */

#define REGION_SIZE (OSP_UNWIND_HEADER_SIZE + 4096u)
static _Alignas(4096) uint8_t region_mem[REGION_SIZE];

static void region_setup(struct ospd_unwind_region *r)
{
    memset(region_mem, 0, sizeof region_mem);
    struct osp_unwind_header *h = (struct osp_unwind_header *)region_mem;
    osp_unwind_header_init(h, REGION_SIZE, MACHINE);
    char err[256];
    ck_assert_int_eq(ospd_unwind_region_init(r, region_mem, REGION_SIZE, -1, err, sizeof err), 0);
}

static struct ospd_unwind_rows two_rows(uint64_t length)
{
    static struct osp_unwind_row rows[2] = {
        {.pc_offset = 0, .cfa_rule = OSP_CFA_SP, .cfa_offset = 8, .ra_offset = -8},
        {.pc_offset = 4, .cfa_rule = OSP_CFA_SP, .cfa_offset = 16, .ra_offset = -8},
    };
    return (struct ospd_unwind_rows){
        .rows = rows, .count = 2, .start_vaddr = 0x100, .end_vaddr = 0x100 + length};
}

START_TEST(snapshots_are_sorted_replace_unloaded_images_and_survive_a_full_object)
{
    struct ospd_unwind_region r;
    region_setup(&r);
    ck_assert_ptr_null(osp_unwind_snapshot(region_mem, REGION_SIZE)); /* nothing yet */
    struct ospd_unwind_rows rows = two_rows(0x1000);
    ck_assert_int_eq(ospd_unwind_region_publish(&r, 0x50000, &rows), 0);
    ck_assert_int_eq(ospd_unwind_region_publish(&r, 0x10000, &rows), 0);
    const struct osp_unwind_index *ix = osp_unwind_snapshot(region_mem, REGION_SIZE);
    ck_assert_ptr_nonnull(ix);
    ck_assert_uint_eq(ix->count, 2);
    const struct osp_unwind_entry *e = osp_unwind_entries(ix);
    ck_assert_uint_eq(e[0].start, 0x10000);
    ck_assert_uint_eq(e[1].start, 0x50000);
    ck_assert_uint_eq(e[1].end, 0x51000);
    const struct osp_unwind_row *stored =
        (const struct osp_unwind_row *)(region_mem + e[0].rows_offset);
    ck_assert_int_eq(stored[1].cfa_offset, 16);
    /* A new image where the first was (it was unloaded): it replaces it. */
    ck_assert_int_eq(ospd_unwind_region_publish(&r, 0x10800, &rows), 0);
    const struct osp_unwind_index *old = ix;
    ix = osp_unwind_snapshot(region_mem, REGION_SIZE);
    ck_assert_uint_eq(ix->count, 2);
    ck_assert_uint_eq(osp_unwind_entries(ix)[0].start, 0x10800);
    ck_assert_uint_eq(old->count, 2); /* the older snapshot is never rewritten */
    ck_assert_uint_eq(osp_unwind_entries(old)[0].start, 0x10000);
    /* Full: an error, and the published snapshot stays as it was. */
    int rc = 0;
    for (uint64_t at = 0x100000; rc == 0; at += 0x10000)
        rc = ospd_unwind_region_publish(&r, at, &rows);
    ck_assert_int_eq(rc, -ENOSPC);
    ix = osp_unwind_snapshot(region_mem, REGION_SIZE);
    ck_assert_ptr_nonnull(ix);
    ck_assert_uint_ge(ix->count, 2);
    ospd_unwind_region_free(&r);
}
END_TEST

/* A large image's rows are published in three steps (unwind-source.c copies them on libuv's
 * pool): reserved, filled, then added. Until the add no snapshot names them; after it, the
 * snapshot is the one a publish in one step makes. */
START_TEST(rows_reserved_filled_then_added_are_published)
{
    struct ospd_unwind_region r;
    region_setup(&r);
    struct ospd_unwind_rows rows = two_rows(0x1000);
    ck_assert_int_eq(ospd_unwind_region_publish(&r, 0x50000, &rows), 0);
    uint8_t *at = ospd_unwind_region_reserve(&r, &rows);
    ck_assert_ptr_nonnull(at);
    ck_assert_int_eq(ospd_unwind_region_fill(&r, at, &rows), 0);
    const struct osp_unwind_index *ix = osp_unwind_snapshot(region_mem, REGION_SIZE);
    ck_assert_uint_eq(ix->count, 1); /* filled, not yet published */
    ck_assert_int_eq(ospd_unwind_region_add(&r, 0x10000, &rows, at), 0);
    ix = osp_unwind_snapshot(region_mem, REGION_SIZE);
    ck_assert_uint_eq(ix->count, 2);
    const struct osp_unwind_entry *e = osp_unwind_entries(ix);
    ck_assert_uint_eq(e[0].start, 0x10000);
    ck_assert_uint_eq(e[0].end, 0x11000);
    ck_assert_uint_eq(e[0].rows_offset, (uint64_t)(at - region_mem));
    const struct osp_unwind_row *stored = (const struct osp_unwind_row *)at;
    ck_assert_int_eq(stored[1].cfa_offset, 16);
    /* No room: reserve says so before anything is written. */
    struct ospd_unwind_rows many = rows;
    many.count = REGION_SIZE / sizeof *rows.rows;
    ck_assert_ptr_null(ospd_unwind_region_reserve(&r, &many));
    ospd_unwind_region_free(&r);
}
END_TEST

START_TEST(region_rejects_a_foreign_header)
{
    struct ospd_unwind_region r;
    region_setup(&r);
    ospd_unwind_region_free(&r);
    char err[256] = "";
    struct osp_unwind_header *h = (struct osp_unwind_header *)region_mem;
    h->arch = 0xffff;
    ck_assert_int_eq(ospd_unwind_region_init(&r, region_mem, REGION_SIZE, -1, err, sizeof err),
                     -EPROTO);
    ck_assert_ptr_nonnull(strstr(err, "architecture"));
    /* The other architecture the builder knows: a target emulated by qemu-user. */
    h->arch = MACHINE == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
    ck_assert_int_eq(ospd_unwind_region_init(&r, region_mem, REGION_SIZE, -1, err, sizeof err), 0);
    ospd_unwind_region_free(&r);
    h->arch = MACHINE;
    h->size = REGION_SIZE * 2;
    ck_assert_int_eq(ospd_unwind_region_init(&r, region_mem, REGION_SIZE, -1, err, sizeof err),
                     -EPROTO);
    h->magic = 0;
    ck_assert_int_eq(ospd_unwind_region_init(&r, region_mem, REGION_SIZE, -1, err, sizeof err),
                     -EPROTO);
}
END_TEST

Suite *unwind_suite(void)
{
    Suite *s = suite_create("unwind");
    SUITE_CASE(s, "build", 120, libc_rows_follow_its_cfi, own_rows_see_the_frame_pointer_prologue,
               mapped_source_finds_the_load_bias,
               rows_come_back_from_the_cache_and_a_damaged_one_is_rebuilt,
               rewritten_cached_rows_are_refused_and_rebuilt,
               an_object_of_the_same_build_id_with_other_frames_gets_its_own_rows,
               another_users_object_and_files_are_never_trusted, a_fifo_is_not_waited_on,
               not_an_object_is_one_line_naming_it, corrupt_call_frame_sections_never_crash);
    SUITE_CASE(s, "publish", 0,
               snapshots_are_sorted_replace_unloaded_images_and_survive_a_full_object,
               region_rejects_a_foreign_header, rows_reserved_filled_then_added_are_published);
    return s;
}
