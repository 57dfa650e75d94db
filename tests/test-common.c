/* test-common.c — libospcommon (common/): the atomic write and its mode, the PATH search and
 * its policy for an unset or empty PATH, raw stems, an object's identity against what the
 * loader says of this very program, the build-id cache (add, find, prune to a bound; never
 * through a link, nothing of another user's kept or found), the hash index, the checksum and
 * sizes. */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ospc.h"
#include "scratch.h"
#include "suite.h"

static char scratch[256];

static void make_scratch(void)
{
    scratch_make(scratch, sizeof scratch, "common");
}

static void remove_scratch(void)
{
    scratch_remove(scratch);
}

static size_t entries_in(const char *directory)
{
    char command[512];
    snprintf(command, sizeof command, "ls -A '%s' | wc -l", directory);
    FILE *out = popen(command, "r");
    size_t count = 0;
    ck_assert_int_eq(fscanf(out, "%zu", &count), 1);
    pclose(out);
    return count;
}

/* `text` written to path through ospc_atomic, then committed or (publish) published: the
 * step that failed NULL, the file's status into *info. */
static void write_atomically(struct ospc_atomic *file, const char *path, const char *text,
                             int publish, struct stat *info)
{
    ck_assert_int_eq(ospc_atomic_open(file, path), 0);
    ck_assert_int_eq(access(path, F_OK), -1); /* not there before the commit */
    ck_assert_int_eq(ospc_write_all(file->fd, text, strlen(text)), 0);
    const char *step = "unset";
    ck_assert_int_eq(publish ? ospc_atomic_publish(file, &step) : ospc_atomic_commit(file, &step),
                     0);
    ck_assert_ptr_null(step);
    ck_assert_int_eq(stat(path, info), 0);
    ck_assert_int_eq(info->st_size, (off_t)strlen(text));
}

START_TEST(atomic_write_keeps_umask_and_leaves_nothing_on_abort)
{
    make_scratch();
    mode_t old = umask(027);
    char path[512];
    snprintf(path, sizeof path, "%s/out.txt", scratch);
    struct ospc_atomic file;
    struct stat info;
    write_atomically(&file, path, "hello\n", 0, &info);
    /* ospc_umask read the mask once; 0666 less it, not mkstemp's 0600. */
    ck_assert_int_eq(info.st_mode & 0777, 0666 & ~ospc_umask());
    ck_assert_int_ne(info.st_mode & 0777, 0600);

    ck_assert_int_eq(ospc_atomic_open(&file, path), 0);
    ck_assert_int_eq(ospc_write_all(file.fd, "x", 1), 0);
    ospc_atomic_abort(&file);
    ck_assert_int_eq(entries_in(scratch), 1); /* the temporary file is gone */
    ck_assert_int_eq(stat(path, &info), 0);
    ck_assert_int_eq(info.st_size, 6); /* and the old file is whole */

    char missing[600];
    snprintf(missing, sizeof missing, "%s/no/such/dir/out", scratch);
    ck_assert_int_eq(ospc_atomic_open(&file, missing), -ENOENT);
    umask(old);
    remove_scratch();
}
END_TEST

/* Visible first, durable right after: after publish the whole file is in place (and only
 * it), before any fsync; sync releases the struct. */
START_TEST(atomic_publish_is_whole_before_its_sync)
{
    make_scratch();
    char path[512];
    snprintf(path, sizeof path, "%s/raw.json", scratch);
    struct ospc_atomic file;
    struct stat info;
    write_atomically(&file, path, "{\"version\":1}\n", 1, &info);
    ck_assert_int_eq(entries_in(scratch), 1); /* no temporary file left beside it */
    ck_assert_int_ge(file.fd, 0);             /* still open, for the fsync */
    ospc_atomic_sync(&file);
    ck_assert_int_eq(file.fd, -1);
    ck_assert_ptr_null(file.path);
    ospc_atomic_sync(&file); /* twice is harmless */
    /* A publish that cannot rename leaves nothing behind. */
    char into_dir[600];
    snprintf(into_dir, sizeof into_dir, "%s/dir", scratch);
    ck_assert_int_eq(mkdir(into_dir, 0700), 0);
    char inside[700];
    snprintf(inside, sizeof inside, "%s/x", into_dir);
    ck_assert_int_eq(mkdir(inside, 0700), 0); /* a directory where the file would go */
    char target[800];
    snprintf(target, sizeof target, "%s/x", into_dir);
    ck_assert_int_eq(ospc_atomic_open(&file, target), 0);
    const char *step = "unset";
    ck_assert_int_lt(ospc_atomic_publish(&file, &step), 0);
    ck_assert_str_eq(step, "rename");
    ck_assert_int_eq(entries_in(into_dir), 1); /* the directory x only */
    remove_scratch();
}
END_TEST

START_TEST(path_search_policy)
{
    char *saved = getenv("PATH") != NULL ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", "/nonexistent:/bin:/usr/bin", 1);
    char *found = ospc_find_on_path("sh");
    ck_assert_ptr_nonnull(found);
    ck_assert(strcmp(found, "/bin/sh") == 0 || strcmp(found, "/usr/bin/sh") == 0);
    free(found);
    ck_assert_ptr_null(ospc_find_on_path("no-such-command-osprey"));
    unsetenv("PATH"); /* the default list */
    found = ospc_find_on_path("sh");
    ck_assert_ptr_nonnull(found);
    free(found);
    setenv("PATH", "", 1); /* set but empty: nothing */
    ck_assert_ptr_null(ospc_find_on_path("sh"));
    found = ospc_find_on_path("/bin/sh"); /* a path is checked, not searched */
    ck_assert_ptr_nonnull(found);
    ck_assert_str_eq(found, "/bin/sh");
    free(found);
    ck_assert_ptr_null(ospc_find_on_path("/etc/passwd")); /* not executable */
    if (saved != NULL)
        setenv("PATH", saved, 1);
    free(saved);
}
END_TEST

START_TEST(raw_stems)
{
    char stem[64];
    ck_assert_int_eq(ospc_raw_stem("out/run.raw.json", stem, sizeof stem), 7);
    ck_assert_str_eq(stem, "out/run");
    ospc_raw_stem("x.json", stem, sizeof stem);
    ck_assert_str_eq(stem, "x");
    ospc_raw_stem("profile", stem, sizeof stem);
    ck_assert_str_eq(stem, "profile");
    ospc_raw_stem(".raw.json", stem, sizeof stem); /* nothing before the suffix: kept */
    ck_assert_str_eq(stem, ".raw");
    ck_assert_int_eq(ospc_raw_stem("a-long-name.raw.json", stem, 4), -ENAMETOOLONG);
    ck_assert_str_eq(ospc_basename("/a/b/c"), "c");
    ck_assert_str_eq(ospc_basename("c"), "c");
    char rooted[32];
    ck_assert_int_eq(ospc_path_in_root(42, "/usr/bin/x", rooted, sizeof rooted), 0);
    ck_assert_str_eq(rooted, "/proc/42/root/usr/bin/x");
    ck_assert_int_eq(ospc_path_in_root(0, "/usr/bin/x", rooted, sizeof rooted), -EINVAL);
    ck_assert_int_eq(ospc_path_in_root(42, "x", rooted, sizeof rooted), -EINVAL);
    ck_assert_int_eq(ospc_path_in_root(42, "/a/very/long/path/indeed/x", rooted, sizeof rooted),
                     -ENAMETOOLONG);
}
END_TEST

/* What the loader says of this program's first PF_X segment. */
struct self_text {
    uint64_t vaddr, offset;
    int found;
};

static int first_image(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct self_text *text = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &info->dlpi_phdr[i];
        if (segment->p_type == PT_LOAD && (segment->p_flags & PF_X) &&
            (!text->found || segment->p_vaddr < text->vaddr)) {
            text->vaddr = segment->p_vaddr;
            text->offset = segment->p_offset;
            text->found = 1;
        }
    }
    return 1; /* the main program only */
}

START_TEST(elf_identity_of_this_program)
{
    struct ospc_elf_identity identity;
    char why[128];
    ck_assert_int_eq(ospc_elf_identity("/proc/self/exe", &identity, why, sizeof why), 0);
    struct self_text text = {0};
    dl_iterate_phdr(first_image, &text);
    ck_assert(text.found);
    ck_assert(identity.has_text);
    ck_assert_uint_eq(identity.text_vaddr, text.vaddr);
    ck_assert_uint_eq(identity.text_offset, text.offset);
    /* A build id, as `readelf -n` prints it. */
    char self[512], command[700];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(length, 0);
    self[length] = '\0';
    snprintf(command, sizeof command, "readelf -n '%s' 2>/dev/null | sed -n 's/.*Build ID: *//p'",
             self);
    FILE *readelf = popen(command, "r");
    char expected[256] = "";
    ck_assert_ptr_nonnull(readelf);
    ck_assert_ptr_nonnull(fgets(expected, sizeof expected, readelf));
    expected[strcspn(expected, "\n")] = '\0';
    ck_assert_str_eq(identity.build_id, expected);
    pclose(readelf);

    ck_assert_int_eq(ospc_elf_identity("/etc/passwd", &identity, why, sizeof why), -ENOEXEC);
    ck_assert_str_eq(why, "not an ELF file");
    ck_assert_int_eq(ospc_elf_identity("/dev/null", &identity, why, sizeof why), -EINVAL);
    ck_assert_str_eq(why, "not a regular file");
    ck_assert_int_lt(ospc_elf_identity("/no/such/file", &identity, why, sizeof why), 0);
}
END_TEST

START_TEST(cache_add_find_prune)
{
    make_scratch();
    char cache[512];
    snprintf(cache, sizeof cache, "%s/cache", scratch);
    setenv("OSPREY_BUILDID_CACHE", cache, 1);
    char directory[600];
    ck_assert_int_eq(ospc_cache_dir(directory, sizeof directory), 0);
    ck_assert_str_eq(directory, cache);

    struct ospc_elf_identity identity;
    ck_assert_int_eq(ospc_elf_identity("/proc/self/exe", &identity, NULL, 0), 0);
    ck_assert_str_ne(identity.build_id, "");
    char self[512];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    ck_assert_int_gt(length, 0);
    self[length] = '\0';
    ck_assert_int_eq(ospc_cache_add(self, identity.build_id), 0);
    char found[1024], expected[1024];
    snprintf(expected, sizeof expected, "%s/%s/%s", cache, identity.build_id, ospc_basename(self));
    ck_assert_int_eq(
        ospc_cache_find(identity.build_id, "/elsewhere/other-name", found, sizeof found), 0);
    ck_assert_str_eq(found, expected);
    ck_assert_int_eq(ospc_cache_find("00ff", NULL, found, sizeof found), -ENOENT);
    ck_assert_int_eq(ospc_cache_find("../etc", NULL, found, sizeof found), -ENOENT);
    /* A file under the id that is not that object is never an answer. */
    char other[1100];
    snprintf(other, sizeof other, "%s/%s/impostor", cache, "abcd");
    char abcd[700];
    snprintf(abcd, sizeof abcd, "%s/abcd", cache);
    ck_assert_int_eq(ospc_make_directories(abcd, 0755), 0);
    ck_assert_int_eq(ospc_copy_file(self, other), 0);
    ck_assert_int_eq(ospc_cache_find("abcd", NULL, found, sizeof found), -ENOENT);

    size_t kept, removed;
    uint64_t kept_bytes, removed_bytes;
    struct stat info;
    ck_assert_int_eq(stat(self, &info), 0);
    ck_assert_int_eq(ospc_cache_prune(UINT64_MAX, &kept, &kept_bytes, &removed, &removed_bytes), 0);
    ck_assert_uint_eq(kept, 2);
    ck_assert_uint_eq(removed, 0);
    ck_assert_uint_eq(kept_bytes, 2 * (uint64_t)info.st_size);
    /* The bound: the least recently used goes first (the impostor, never found). */
    struct timespec old[2] = {{1000, 0}, {1000, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, other, old, 0), 0);
    ck_assert_int_eq(
        ospc_cache_prune((uint64_t)info.st_size, &kept, &kept_bytes, &removed, &removed_bytes), 0);
    ck_assert_uint_eq(kept, 1);
    ck_assert_uint_eq(removed, 1);
    ck_assert_int_eq(access(other, F_OK), -1);
    ck_assert_int_eq(access(abcd, F_OK), -1); /* its directory with it */
    ck_assert_int_eq(access(expected, F_OK), 0);
    ck_assert_int_eq(ospc_cache_prune(0, &kept, &kept_bytes, &removed, &removed_bytes), 0);
    ck_assert_uint_eq(kept, 0);
    ck_assert_uint_eq(entries_in(cache), 0);
    unsetenv("OSPREY_BUILDID_CACHE");

    /* The default places. */
    setenv("XDG_CACHE_HOME", "/x/cache", 1);
    ck_assert_int_eq(ospc_cache_dir(directory, sizeof directory), 0);
    ck_assert_str_eq(directory, "/x/cache/osprey/buildid");
    setenv("XDG_CACHE_HOME", "relative", 1);
    setenv("HOME", "/home/u", 1);
    ck_assert_int_eq(ospc_cache_dir(directory, sizeof directory), 0);
    ck_assert_str_eq(directory, "/home/u/.cache/osprey/buildid");
    remove_scratch();
}
END_TEST

/* This test program's path and identity. */
static void this_program(char *self, size_t size, struct ospc_elf_identity *identity)
{
    ssize_t length = readlink("/proc/self/exe", self, size - 1);
    ck_assert_int_gt(length, 0);
    self[length] = '\0';
    ck_assert_int_eq(ospc_elf_identity(self, identity, NULL, 0), 0);
}

/* A file at `path` with `text`, its time long ago (the first a prune removes). */
static void old_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
    struct timespec old[2] = {{1000, 0}, {1000, 0}};
    ck_assert_int_eq(utimensat(AT_FDCWD, path, old, 0), 0);
}

/* Prune never leaves the cache: a build-id directory that is a link to a directory outside,
 * a link in an id's directory to a file outside, and a cache directory that is itself a link
 * are not followed; what they point at stays. */
START_TEST(prune_never_leaves_the_cache)
{
    make_scratch();
    char cache[512], outside[512], path[1200], self[512];
    snprintf(cache, sizeof cache, "%s/cache", scratch);
    snprintf(outside, sizeof outside, "%s/outside", scratch);
    setenv("OSPREY_BUILDID_CACHE", cache, 1);
    struct ospc_elf_identity identity;
    this_program(self, sizeof self, &identity);
    ck_assert_int_eq(ospc_cache_add(self, identity.build_id), 0);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    snprintf(path, sizeof path, "%s/victim", outside);
    old_file(path, "kept\n");
    snprintf(path, sizeof path, "%s/other", outside);
    old_file(path, "kept\n");
    snprintf(path, sizeof path, "%s/beef", cache); /* an id's directory: a link outside */
    ck_assert_int_eq(symlink(outside, path), 0);
    snprintf(path, sizeof path, "%s/%s/link", cache, identity.build_id);
    char target[600];
    snprintf(target, sizeof target, "%s/other", outside);
    ck_assert_int_eq(symlink(target, path), 0);
    size_t kept, removed;
    uint64_t kept_bytes, removed_bytes;
    ck_assert_int_eq(ospc_cache_prune(0, &kept, &kept_bytes, &removed, &removed_bytes), 0);
    ck_assert_uint_eq(removed, 1); /* the copy of this program only */
    ck_assert_uint_eq(kept, 0);
    ck_assert_uint_eq(entries_in(outside), 2);
    snprintf(path, sizeof path, "%s/victim", outside);
    ck_assert_int_eq(access(path, F_OK), 0);
    /* The cache directory itself a link: refused, nothing followed. */
    char command[2000];
    snprintf(command, sizeof command, "rm -rf '%s' && ln -s '%s' '%s'", cache, outside, cache);
    ck_assert_int_eq(system(command), 0);
    ck_assert_int_eq(ospc_cache_prune(0, &kept, &kept_bytes, &removed, &removed_bytes), -ENOTDIR);
    ck_assert_int_lt(ospc_cache_add(self, identity.build_id), 0);
    ck_assert_uint_eq(entries_in(outside), 2);
    unsetenv("OSPREY_BUILDID_CACHE");
    remove_scratch();
}
END_TEST

/* The cache is this user's alone (root: files of nobody's are made): a cache directory of
 * another user's is not used, another user's binary is not kept, and a file of another
 * user's under an id is never an answer. */
START_TEST(the_cache_trusts_no_other_user)
{
    if (geteuid() != 0) {
        printf("the_cache_trusts_no_other_user: skipped: not root\n");
        return;
    }
    make_scratch();
    ck_assert_int_eq(chmod(scratch, 0755), 0);
    char cache[512], self[512], copy[600], path[1200], command[2000];
    snprintf(cache, sizeof cache, "%s/cache", scratch);
    setenv("OSPREY_BUILDID_CACHE", cache, 1);
    struct ospc_elf_identity identity;
    this_program(self, sizeof self, &identity);
    /* Another user's binary: not kept (1), nothing made. */
    snprintf(copy, sizeof copy, "%s/program", scratch);
    ck_assert_int_eq(ospc_copy_file(self, copy), 0);
    snprintf(command, sizeof command, "chown nobody '%s'", copy);
    ck_assert_int_eq(system(command), 0);
    ck_assert_int_eq(ospc_cache_add(copy, identity.build_id), 1);
    ck_assert_int_eq(access(cache, F_OK), -1);
    /* Ours: kept. The kept file made nobody's: never found. */
    snprintf(command, sizeof command, "chown root '%s'", copy);
    ck_assert_int_eq(system(command), 0);
    ck_assert_int_eq(ospc_cache_add(copy, identity.build_id), 0);
    char found[1200];
    ck_assert_int_eq(ospc_cache_find(identity.build_id, NULL, found, sizeof found), 0);
    snprintf(path, sizeof path, "%s/%s/program", cache, identity.build_id);
    snprintf(command, sizeof command, "chown nobody '%s'", path);
    ck_assert_int_eq(system(command), 0);
    ck_assert_int_eq(ospc_cache_find(identity.build_id, NULL, found, sizeof found), -ENOENT);
    /* A cache directory of nobody's: not used at all. */
    snprintf(command, sizeof command, "rm -rf '%s' && mkdir '%s' && chown nobody '%s'", cache,
             cache, cache);
    ck_assert_int_eq(system(command), 0);
    ck_assert_int_eq(ospc_cache_add(copy, identity.build_id), -EPERM);
    ck_assert_uint_eq(entries_in(cache), 0);
    unsetenv("OSPREY_BUILDID_CACHE");
    remove_scratch();
}
END_TEST

/* The checksum sees one flipped bit anywhere, and chains. */
START_TEST(checksum_sees_a_flipped_bit)
{
    static unsigned char bytes[1000];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)(i * 7);
    uint64_t whole = ospc_checksum(OSPC_HASH_SEED, bytes, sizeof bytes);
    ck_assert_uint_eq(whole, ospc_checksum(OSPC_HASH_SEED, bytes, sizeof bytes));
    for (size_t at = 0; at < sizeof bytes; at += 37) {
        bytes[at] ^= 0x10;
        ck_assert_uint_ne(ospc_checksum(OSPC_HASH_SEED, bytes, sizeof bytes), whole);
        bytes[at] ^= 0x10;
    }
    ck_assert_uint_ne(ospc_checksum(OSPC_HASH_SEED, bytes, 999), whole);
}
END_TEST

START_TEST(sizes)
{
    uint64_t bytes;
    ck_assert_int_eq(ospc_parse_size("512M", &bytes), 0);
    ck_assert_uint_eq(bytes, UINT64_C(512) << 20);
    ck_assert_int_eq(ospc_parse_size("2GiB", &bytes), 0);
    ck_assert_uint_eq(bytes, UINT64_C(2) << 30);
    ck_assert_int_eq(ospc_parse_size("1000", &bytes), 0);
    ck_assert_uint_eq(bytes, 1000);
    ck_assert_int_eq(ospc_parse_size("-1", &bytes), -EINVAL);
    ck_assert_int_eq(ospc_parse_size("12X", &bytes), -EINVAL);
    ck_assert_int_eq(ospc_parse_size("", &bytes), -EINVAL);
}
END_TEST

static uint64_t keys[5000];

static uint64_t key_hash(uint32_t entry, void *context)
{
    (void)context;
    return ospc_hash_bytes(OSPC_HASH_SEED, &keys[entry], sizeof keys[entry]);
}

START_TEST(index_finds_every_key)
{
    struct ospc_index index;
    ck_assert_int_eq(ospc_index_init(&index, 4), 0);
    for (uint32_t i = 0; i < 5000; i++) {
        keys[i] = (uint64_t)i * 7919 + 3;
        size_t slot = ospc_index_start(&index, key_hash(i, NULL));
        while (ospc_index_entry(&index, slot) != UINT32_MAX)
            slot = ospc_index_next(&index, slot);
        ck_assert_int_eq(ospc_index_insert(&index, slot, i, key_hash, NULL), 0);
    }
    ck_assert_uint_ge(index.slot_count, 2 * index.used);
    for (uint32_t i = 0; i < 5000; i++) {
        size_t slot = ospc_index_start(&index, key_hash(i, NULL));
        while (ospc_index_entry(&index, slot) != UINT32_MAX &&
               keys[ospc_index_entry(&index, slot)] != keys[i])
            slot = ospc_index_next(&index, slot);
        ck_assert_uint_eq(ospc_index_entry(&index, slot), i);
    }
    ospc_index_free(&index);
}
END_TEST

START_TEST(printable_text)
{
    char text[] = "a\x1b[31mb\x7f c\xc2\x9b d \xc3\xa9";
    ospc_printable(text);
    ck_assert_str_eq(text, "a?[31mb? c?? d \xc3\xa9"); /* C0, DEL, C1 go; é stays */
}
END_TEST

START_TEST(clock_moves)
{
    uint64_t a = ospc_clock_ns(CLOCK_MONOTONIC);
    uint64_t b = ospc_clock_ns(CLOCK_MONOTONIC);
    ck_assert_uint_gt(a, 0);
    ck_assert_uint_ge(b, a);
    ck_assert(ospc_seconds_between(0, 1500000000) == 1.5);
}
END_TEST

/* A path in a directory other users may write: only a regular file of ours (or root's) is
 * opened, never through a link, never blocking on a FIFO; the private directory is ours. */
START_TEST(shared_open_refuses_what_is_not_ours)
{
    make_scratch();
    char path[512], link_path[512], fifo[512];
    snprintf(path, sizeof path, "%s/file", scratch);
    snprintf(link_path, sizeof link_path, "%s/link", scratch);
    snprintf(fifo, sizeof fifo, "%s/fifo", scratch);
    int fd = ospc_open_shared(path, O_RDWR | O_CREAT, 0600, geteuid());
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0); /* cleared for whoever reads on */
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    close(fd);
    ck_assert_int_eq(symlink(path, link_path), 0);
    ck_assert_int_eq(ospc_open_shared(link_path, O_RDONLY, 0, geteuid()), -ELOOP);
    ck_assert_int_eq(mkfifo(fifo, 0600), 0);
    ck_assert_int_eq(ospc_open_shared(fifo, O_RDONLY, 0, geteuid()), -OSPC_ENOTREG);
    ck_assert_int_eq(ospc_open_shared(fifo, O_WRONLY, 0, geteuid()), -OSPC_ENOTREG);
    ck_assert_int_eq(ospc_open_shared(scratch, O_RDONLY, 0, geteuid()), -OSPC_ENOTREG);
    if (geteuid() != 0) { /* a file of ours, expected to be another user's: refused */
        ck_assert_int_eq(ospc_open_shared(path, O_RDONLY, 0, geteuid() + 1), -OSPC_ENOTOWNER);
    } else { /* root's files pass whoever is expected; another user's file does not */
        fd = ospc_open_shared(path, O_RDONLY, 0, 65534);
        ck_assert_int_ge(fd, 0);
        close(fd);
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
        ck_assert_int_eq(ospc_open_shared(path, O_RDONLY, 0, 0), -OSPC_ENOTOWNER);
    }
    fd = ospc_open_shared(path, O_RDONLY, 0, OSPC_ANY_OWNER); /* any owner, still no FIFO */
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(ospc_open_shared(fifo, O_RDONLY, 0, OSPC_ANY_OWNER), -OSPC_ENOTREG);
    ck_assert_int_eq(ospc_open_shared(link_path, O_RDONLY, 0, OSPC_ANY_OWNER), -ELOOP);
    ck_assert_str_eq(ospc_shared_strerror(-ELOOP), "is a symbolic link");
    ck_assert_str_eq(ospc_shared_strerror(-OSPC_ENOTREG), "is not a regular file");
    ck_assert_str_eq(ospc_shared_strerror(-OSPC_ENOTOWNER), "belongs to another user");

    /* the private directory: under TMPDIR when XDG_RUNTIME_DIR is not a private one */
    char *runtime = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    char *tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("XDG_RUNTIME_DIR", scratch, 1);
    ck_assert_int_eq(chmod(scratch, 0777), 0); /* writable by all: not private */
    setenv("TMPDIR", scratch, 1);
    char dir[512], want[512];
    ck_assert_int_eq(ospc_runtime_dir(dir, sizeof dir), 0);
    snprintf(want, sizeof want, "%s/osprey-%u", scratch, (unsigned)geteuid());
    ck_assert_str_eq(dir, want);
    struct stat info;
    ck_assert_int_eq(lstat(dir, &info), 0);
    ck_assert_int_eq(info.st_mode & 07777, 0700);
    ck_assert_int_eq(chmod(dir, 0777), 0); /* made by someone else, for all: refused */
    ck_assert_int_eq(ospc_runtime_dir(dir, sizeof dir), -EACCES);
    ck_assert_int_eq(rmdir(want), 0);
    ck_assert_int_eq(symlink("/tmp", want), 0); /* a link in its place: refused */
    ck_assert_int_lt(ospc_runtime_dir(dir, sizeof dir), 0);
    ck_assert_int_eq(chmod(scratch, 0700), 0); /* XDG_RUNTIME_DIR private now: used */
    ck_assert_int_eq(ospc_runtime_dir(dir, sizeof dir), 0);
    ck_assert_str_eq(dir, scratch);
    if (runtime != NULL)
        setenv("XDG_RUNTIME_DIR", runtime, 1);
    else
        unsetenv("XDG_RUNTIME_DIR");
    if (tmp != NULL)
        setenv("TMPDIR", tmp, 1);
    else
        unsetenv("TMPDIR");
    free(runtime);
    free(tmp);
    remove_scratch();
}
END_TEST

/* .eh_frame_hdr's search table (common/eh-frame.c): entries as linkers write them (datarel
 * sdata4 pairs after a pcrel pointer and a udata4 count) come back sorted, in link-time
 * addresses; truncated bytes, another version, an omitted table, a count past the bytes and an
 * application this does not read are refused. */
static size_t put32(uint8_t *at, int64_t v)
{
    int32_t w = (int32_t)v;
    memcpy(at, &w, 4);
    return 4;
}

START_TEST(eh_frame_hdr_table)
{
    uint8_t hdr[64] = {1, 0x1b, 0x03, 0x3b};
    size_t n = 4;
    n += put32(hdr + n, -0x100); /* .eh_frame at 0x2000 + 4 - 0x100 */
    n += put32(hdr + n, 3);
    const int32_t pairs[][2] = {{-0x1000, 0x40}, {-0x1800, 0x20}, {0x10, 0x60}};
    for (size_t i = 0; i < 3; i++) {
        n += put32(hdr + n, pairs[i][0]);
        n += put32(hdr + n, pairs[i][1]);
    }
    struct ospc_eh_frame_entry *e;
    size_t count;
    ck_assert_int_eq(ospc_eh_frame_hdr_table(hdr, n, 0x2000, &e, &count), 0);
    ck_assert_uint_eq(count, 3);
    const struct ospc_eh_frame_entry by_start[] = {
        {0x800, 0x2020}, {0x1000, 0x2040}, {0x2010, 0x2060}};
    ck_assert_mem_eq(e, by_start, sizeof by_start);
    free(e);
    for (size_t cut = 0; cut < n; cut++) /* every truncation is refused, nothing read past */
        ck_assert_int_eq(ospc_eh_frame_hdr_table(hdr, cut, 0x2000, &e, &count), -ENOENT);
    hdr[0] = 2;
    ck_assert_int_eq(ospc_eh_frame_hdr_table(hdr, n, 0x2000, &e, &count), -ENOENT);
    hdr[0] = 1;
    hdr[3] = 0xff;
    ck_assert_int_eq(ospc_eh_frame_hdr_table(hdr, n, 0x2000, &e, &count), -ENOENT);
    hdr[3] = 0x5b; /* aligned sdata4: not read */
    ck_assert_int_eq(ospc_eh_frame_hdr_table(hdr, n, 0x2000, &e, &count), -ENOENT);
    hdr[3] = 0x3b;
    put32(hdr + 8, 1000);
    ck_assert_int_eq(ospc_eh_frame_hdr_table(hdr, n, 0x2000, &e, &count), -ENOENT);
    ck_assert_ptr_null(e);
}
END_TEST

/* The one walk of program headers (common/elf.c): this program's from its file and from
 * memory agree with the loader's; a file cut short, another class or bytes that are no ELF
 * are refused, nothing read past the size given. */
static int own_headers(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(size_t *)data = info->dlpi_phnum;
    return 1; /* the first object: the executable */
}

START_TEST(elf_program_headers_of_this_program)
{
    size_t loader_count = 0;
    dl_iterate_phdr(own_headers, &loader_count);
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    ck_assert_int_ge(fd, 0);
    struct stat info;
    ck_assert_int_eq(fstat(fd, &info), 0);
    Elf64_Ehdr eh;
    Elf64_Phdr *ph;
    size_t count;
    ck_assert_int_eq(ospc_elf_program_headers(fd, NULL, (uint64_t)info.st_size, &eh, &ph, &count),
                     0);
    ck_assert_uint_eq(count, loader_count);
    int loads = 0;
    for (size_t i = 0; i < count; i++)
        loads += ph[i].p_type == PT_LOAD;
    ck_assert_int_gt(loads, 0);
    /* The same bytes from memory. */
    size_t head = (size_t)(eh.e_phoff + count * sizeof(Elf64_Phdr));
    unsigned char *bytes = malloc(head);
    ck_assert_int_eq(pread(fd, bytes, head, 0), (ssize_t)head);
    Elf64_Phdr *again;
    size_t again_count;
    ck_assert_int_eq(ospc_elf_program_headers(-1, bytes, head, &eh, &again, &again_count), 0);
    ck_assert_uint_eq(again_count, count);
    ck_assert_mem_eq(again, ph, count * sizeof *ph);
    free(again);
    free(ph);
    /* Cut short, anywhere in the table: refused without a read past it. */
    for (size_t cut = 0; cut < head; cut += 7) {
        int rc = ospc_elf_program_headers(-1, bytes, cut, &eh, &again, &again_count);
        ck_assert_int_lt(rc, 0);
        ck_assert_ptr_null(again);
    }
    bytes[EI_CLASS] = ELFCLASS32;
    ck_assert_int_eq(ospc_elf_program_headers(-1, bytes, head, &eh, &again, &again_count),
                     -ENOTSUP);
    bytes[0] = 0;
    ck_assert_int_eq(ospc_elf_program_headers(-1, bytes, head, &eh, &again, &again_count),
                     -ENOEXEC);
    free(bytes);
    close(fd);
}
END_TEST

/* A search finds the first row at a key or the first after it, in rows of any size; a table
 * is sorted with its repeats left out; a hottest-first order breaks its ties by index. */
START_TEST(rows_searched_sorted_and_ordered)
{
    struct row {
        char name;
        uint64_t key;
    } rows[] = {{'a', 10}, {'b', 20}, {'c', 20}, {'d', 30}};
    size_t key = offsetof(struct row, key), n = sizeof rows / sizeof rows[0];
    ck_assert_uint_eq(ospc_rows_before(rows, n, sizeof *rows, key, 20, false), 1);
    ck_assert_uint_eq(ospc_rows_before(rows, n, sizeof *rows, key, 20, true), 3);
    ck_assert_uint_eq(ospc_rows_before(rows, n, sizeof *rows, key, 5, true), 0);
    ck_assert_uint_eq(ospc_rows_before(rows, n, sizeof *rows, key, 99, false), 4);
    ck_assert_uint_eq(ospc_rows_before(rows, 0, sizeof *rows, key, 20, true), 0);

    uint64_t values[] = {7, 3, 7, 1, 3, 3};
    ck_assert_uint_eq(ospc_sort_unique(values, 6), 3);
    ck_assert(values[0] == 1 && values[1] == 3 && values[2] == 7);
    ck_assert_uint_eq(ospc_sort_unique(values, 0), 0);
    /* a table long enough for the radix sort: values over every byte, repeats, the extremes */
    enum { MANY = 5000 };
    uint64_t *many = malloc(MANY * sizeof *many);
    ck_assert_ptr_nonnull(many);
    uint64_t state = 88172645463325252ULL;
    for (size_t i = 0; i < MANY; i++) {
        state ^= state << 13, state ^= state >> 7, state ^= state << 17;
        many[i] = i % 3 == 0 ? state : i % 3 == 1 ? state % 97 : 0x7f0000000000ULL + state % 4096;
    }
    many[10] = UINT64_MAX;
    many[11] = 0;
    many[12] = UINT64_MAX;
    size_t kept = ospc_sort_unique(many, MANY);
    ck_assert(kept > 100 && kept < MANY && many[0] == 0 && many[kept - 1] == UINT64_MAX);
    for (size_t i = 1; i < kept; i++)
        ck_assert(many[i - 1] < many[i]);
    free(many);

    ck_assert_int_eq(ospc_hottest_first(5, 4, 0, 9, 1, 0), -1); /* the larger first count */
    ck_assert_int_eq(ospc_hottest_first(5, 5, 1, 2, 0, 1), 1);  /* then the larger second */
    ck_assert_int_eq(ospc_hottest_first(5, 5, 2, 2, 0, 1), -1); /* then the smaller index */
    ck_assert_int_eq(ospc_hottest_first(5, 5, 2, 2, 1, 1), 0);

    char *a = malloc(8), *b = NULL, *c = malloc(8);
    OSPC_FREE_ALL(a, b, c); /* NULL among them; valgrind's setup sees nothing leak */
}
END_TEST

/* A pid whose memory cannot be read is named for what it is: a process that ended and was not
 * reaped, a kernel thread (kthreadd, pid 2 where the machine's pid namespace shows it), or none
 * ("no process"), not "no process" for all three. */
START_TEST(attach_refusal_names_zombies_and_kernel_threads)
{
    char err[256];
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0)
        _exit(0);
    /* Ended, not reaped: ESRCH once its memory is gone (waitid with WNOWAIT leaves it so). */
    siginfo_t info;
    ck_assert_int_eq(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT), 0);
    ck_assert_int_eq(ospc_ptrace_refused(child), ESRCH);
    ospc_attach_refusal(child, ESRCH, true, err, sizeof err);
    ck_assert_msg(strstr(err, "has ended (its parent has not reaped it yet)") != NULL, "%s", err);
    ck_assert_int_eq(waitpid(child, NULL, 0), child);
    ospc_attach_refusal(child, ESRCH, true, err, sizeof err);
    char expected[64];
    snprintf(expected, sizeof expected, "no process %d", (int)child);
    ck_assert_str_eq(err, expected);
    char comm[64] = "";
    FILE *f = fopen("/proc/2/comm", "re");
    if (f != NULL && fgets(comm, sizeof comm, f) != NULL && strcmp(comm, "kthreadd\n") == 0) {
        ck_assert_int_eq(ospc_ptrace_refused(2), ESRCH);
        ospc_attach_refusal(2, ESRCH, true, err, sizeof err);
        ck_assert_str_eq(err, "process 2 (kthreadd) is a kernel thread: it runs no user code to "
                              "sample");
    }
    if (f != NULL)
        fclose(f);
}
END_TEST

Suite *common_suite(void)
{
    Suite *s = suite_create("common");
    SUITE_CASE(s, "common", 0, atomic_write_keeps_umask_and_leaves_nothing_on_abort,
               atomic_publish_is_whole_before_its_sync, path_search_policy, raw_stems,
               elf_identity_of_this_program, cache_add_find_prune, prune_never_leaves_the_cache,
               the_cache_trusts_no_other_user, checksum_sees_a_flipped_bit, sizes,
               index_finds_every_key, clock_moves, printable_text,
               shared_open_refuses_what_is_not_ours, eh_frame_hdr_table,
               elf_program_headers_of_this_program, rows_searched_sorted_and_ordered,
               attach_refusal_names_zombies_and_kernel_threads);
    return s;
}
