/* ospc.h — libospcommon: the helpers the parts of Osprey outside the shim share, each written
 * once with one policy: writing a file atomically, the clock, looking a command up on PATH, the
 * stem of a raw profile's name, an object file's identity (its GNU build id and where its code
 * sits in the file), the build-id cache of binaries that ran, and an open-addressing index.
 *
 * Used by daemon/, exporters/ and tools/; never by the shim, which links nothing.
 * Functions return 0 or a negative errno; those that return a pointer return NULL on failure.
 */
#ifndef OSPC_H
#define OSPC_H

#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

/* ---- atomic.c: a file that appears whole or not at all ---- */

/* A file being written: a temporary file beside `path` (mkstemp, so rename never crosses a
 * file system), with the mode a plain create would give (0666 less the umask). Commit fsyncs
 * it, renames it over `path` and fsyncs the directory, so the rename itself survives a crash;
 * abort removes it. */
struct ospc_atomic {
    int fd;          /* write here; -1 once closed */
    char *temp_path; /* malloc'd */
    char *path;      /* malloc'd copy of the destination */
};

/* Returns 0 or a negative errno (nothing is left behind on failure). */
int ospc_atomic_open(struct ospc_atomic *file, const char *path);
/* fsync, close, rename into place, fsync the directory. On failure the temporary file is
 * removed. Returns 0 or a negative errno; *step (may be NULL) names what failed ("write",
 * "rename"). Either way the struct is released. */
int ospc_atomic_commit(struct ospc_atomic *file, const char **step);
/* Visible first, durable right after: rename into place now (readers see the whole file at
 * once, as with commit), and leave the fsync of the file and its directory to
 * ospc_atomic_sync — for a writer that someone waits on for the file to exist (ospreyd: the
 * profiled program's exit), when the fsync can take longer than everything else (4-22 ms
 * here). On failure the temporary file is removed and the struct released. 0 or -errno;
 * *step (may be NULL) names what failed. */
int ospc_atomic_publish(struct ospc_atomic *file, const char **step);
/* After a successful ospc_atomic_publish: fsync, close, fsync of the directory; releases the
 * struct. Best effort. */
void ospc_atomic_sync(struct ospc_atomic *file);
/* After a successful ospc_atomic_publish, for a file that need not outlive a crash (it sits in
 * a scratch directory its reader moves it out of): close and release, without the fsyncs. */
void ospc_atomic_release(struct ospc_atomic *file);
/* Close and remove the temporary file; safe after a failed commit or a failed open. */
void ospc_atomic_abort(struct ospc_atomic *file);
/* All of `size` bytes at `data` to fd, through EINTR and short writes. 0 or -errno. */
int ospc_write_all(int fd, const void *data, size_t size);
/* Everything `from` has left to read, written to `to`. 0 or -errno. */
int ospc_copy_fd(int from, int to);
/* Copy the file at `source` to `destination` atomically (the copy gets `source`'s permission
 * bits less the umask). 0 or -errno. */
int ospc_copy_file(const char *source, const char *destination);
/* The process's umask, read without changing it (from /proc/self/status; else set and put back
 * once, at the first call). */
mode_t ospc_umask(void);

/* ---- clock.c ---- */

/* `clock`'s time in nanoseconds (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_THREAD_CPUTIME_ID...);
 * 0 when the clock cannot be read. */
uint64_t ospc_clock_ns(clockid_t clock);
/* Seconds from `then` to `now`, both ospc_clock_ns values of one clock. */
double ospc_seconds_between(uint64_t then, uint64_t now);

/* ---- path.c ---- */

/* The full path of the executable `name`, malloc'd: `name` itself when it holds a '/',
 * else the first regular, executable file of that name in PATH's directories (an empty entry
 * is the current directory; PATH unset searches /usr/local/bin:/usr/bin:/bin, PATH set but
 * empty searches nothing). NULL when there is none. */
char *ospc_find_on_path(const char *name);
/* The stem of a raw profile's path: without ".raw.json", else without ".json", else the path
 * itself ("out/run.raw.json" → "out/run"). Into `stem`; returns its length, or -ENAMETOOLONG
 * (stem then holds a cut copy). */
int ospc_raw_stem(const char *raw_path, char *stem, size_t size);
/* The last component of `path` ("" stays ""; a path ending in '/' is kept whole). */
const char *ospc_basename(const char *path);
/* mkdir -p of `directory` itself. 0 or -errno. */
int ospc_make_directories(const char *directory, mode_t mode);
/* `path` as process pid sees it, through its root: "/proc/PID/root/PATH" (a process in
 * another mount namespace, a container's, maps files the host does not have at their path).
 * 0, or -ENAMETOOLONG, or -EINVAL for a pid <= 0 or a relative path. */
int ospc_path_in_root(int32_t pid, const char *path, char *out, size_t size);

/* ---- attach-check.c: may this process attach to another ---- */

/* Who may attach is who may ptrace the process: the kernel's own check (ptrace's attach mode,
 * Yama's ptrace_scope included), without stopping or reading it. 0, or the errno of the
 * refusal (ESRCH: no such process). */
int ospc_ptrace_refused(int32_t pid);

/* One line saying why the kernel refused an event on pid with errno e (ptrace: refused by
 * ptrace's check, where perf_event_paranoid plays no part). */
void ospc_attach_refusal(int32_t pid, int e, bool ptrace, char *err, size_t err_size);

/* ---- shared.c: files in directories other users can write ---- */

/* What ospc_open_shared found instead of a regular file of the expected owner. */
#define OSPC_ENOTREG   EMEDIUMTYPE /* not a regular file (a FIFO, a device, a directory) */
#define OSPC_ENOTOWNER EPERM       /* owned by neither the expected user nor root */
/* ospc_open_shared's owner when any will do (an object another process mapped): only a
 * regular file, never a link, never blocking. */
#define OSPC_ANY_OWNER ((uid_t)-1)

/* Open `path` in a directory other users may write (/tmp, a profile's directory) with `flags`
 * (O_CREAT with `mode` allowed) plus O_NOFOLLOW, O_NONBLOCK, O_NOCTTY and O_CLOEXEC, and keep
 * it only when it is a regular file owned by `owner` or by root (root can do anything to any
 * user already; a file root made, when a root program dropped its privileges, is as good as
 * ours). O_NONBLOCK is cleared once it is known to be a regular file. Returns the descriptor,
 * or a negative errno: -ELOOP for a symbolic link, -OSPC_ENOTREG, -OSPC_ENOTOWNER; never
 * blocks. */
int ospc_open_shared(const char *path, int flags, mode_t mode, uid_t owner);
/* The check both ospc_open_shared and ospc_private_open make, once: `name` under `directory`
 * (AT_FDCWD, or a descriptor) opened with `flags` plus O_NOFOLLOW, O_NONBLOCK (cleared after),
 * O_NOCTTY and O_CLOEXEC, kept only when a regular file owned by `owner` (OSPC_ANY_OWNER: any;
 * `root_too`: root as well); its fstat into *info (may be NULL). The descriptor, or -ELOOP,
 * -OSPC_ENOTREG, -OSPC_ENOTOWNER, -errno. */
struct stat;
int ospc_open_regular(int directory, const char *name, int flags, mode_t mode, uid_t owner,
                      bool root_too, struct stat *info);
/* The reason ospc_open_shared gave, as a phrase after the path ("is a symbolic link", "is not
 * a regular file", "belongs to another user", else strerror). */
const char *ospc_shared_strerror(int rc);
/* The user's runtime directory, ours alone, into `out`: $XDG_RUNTIME_DIR when it is an absolute
 * path of a directory owned by us (or root) that no group or other user may write; else $TMPDIR (or
 * /tmp) /osprey-<euid>, made 0700 and then checked the same way (another user who made it first
 * makes this fail, never lends us theirs). 0 or a negative errno. */
int ospc_runtime_dir(char *out, size_t size);

/* ---- text.c ---- */

/* Replace, in place, every control character of `text` (C0, DEL and the UTF-8 encoded C1
 * range) with '?', so text taken from a profile cannot drive the terminal it is printed on. */
void ospc_printable(char *text);

/* ---- elf.c: an object file's identity ---- */

#define OSPC_BUILD_ID_SIZE 129 /* 64 bytes of id in hex, and the NUL */

struct ospc_elf_identity {
    char build_id[OSPC_BUILD_ID_SIZE]; /* NT_GNU_BUILD_ID in lowercase hex; "" when none */
    /* the PT_LOAD with PF_X of lowest address: its file offset and link-time address (what a
     * pprof mapping's file_offset and a symbolizer's base need); has_text 0 when none */
    int has_text;
    uint64_t text_offset, text_vaddr;
    uint16_t type; /* e_type: ET_EXEC, ET_DYN, ... */
};

/* The program headers of the 64-bit little-endian ELF object of `size` bytes in memory (when
 * `memory` is not NULL) or read from `fd`: its ELF header into *header and the headers into
 * *out (malloc'd, *count of them; the caller frees). Every read checked against `size`.
 * 0; -ENOEXEC not ELF; -ENOTSUP another class, byte order or header size, none, or more
 * than a real object has; -EIO a short read; -ENOMEM. */
int ospc_elf_program_headers(int fd, const void *memory, uint64_t size, Elf64_Ehdr *header,
                             Elf64_Phdr **out, size_t *count);

/* Read the identity of the ELF object at `path`: opened without blocking, only a regular file,
 * every offset bounds-checked against the file (paths come from profiles). 64-bit
 * little-endian objects only. 0, or a negative errno with one short phrase in `why` (may be
 * NULL): "cannot open: ...", "not a regular file", "not an ELF file", ... */
int ospc_elf_identity(const char *path, struct ospc_elf_identity *out, char *why, size_t why_size);
/* The same from an open descriptor (the caller checked it is a regular file of `file_size`
 * bytes). */
int ospc_elf_identity_fd(int fd, off_t file_size, struct ospc_elf_identity *out);

/* ---- eh-frame.c: .eh_frame_hdr, and the DWARF pointer encodings of .eh_frame ---- */

/* LEB128 values at *p (advanced past them), inside [*p, end). 0, or -1. */
int ospc_dwarf_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out);
int ospc_dwarf_sleb(const uint8_t **p, const uint8_t *end, int64_t *out);
/* A value of DWARF pointer encoding `encoding` at *p (advanced past it), inside [*p, end): its
 * format (the low four bits: absptr, uleb128, udata2/4/8, sleb128, sdata2/4/8) applied as its
 * high bits say (none; pcrel: plus pc_base, the value's own address; datarel: plus
 * data_base). 0, or -1 for a form this does not read or bytes past end. */
int ospc_dwarf_read_encoded(const uint8_t **p, const uint8_t *end, unsigned encoding,
                            uint64_t pc_base, uint64_t data_base, uint64_t *out);

/* One entry of .eh_frame_hdr's search table, in link-time addresses. */
struct ospc_eh_frame_entry {
    uint64_t start; /* the FDE's initial location: where its function starts */
    uint64_t fde;   /* the FDE's address (in .eh_frame) */
};
/* The search table of the .eh_frame_hdr bytes [data, data + size), whose link-time address is
 * vaddr, sorted by start into *out (malloc'd; *count entries; the caller frees). 0;
 * -ENOENT when the bytes are no version-1 header with a table of encodings this reads;
 * -ENOMEM. */
int ospc_eh_frame_hdr_table(const uint8_t *data, size_t size, uint64_t vaddr,
                            struct ospc_eh_frame_entry **out, size_t *count);

/* ---- private.c: a directory of this user's, and its files ----
 *
 * The caches live in directories another user must not reach: each is opened without
 * following a link in its last component and checked on the descriptor (a directory the
 * effective user owns; one with group or other bits is narrowed to 0700), and what is in it
 * is reached relative to that descriptor. */

/* The private directory at `path` (made, parents included, 0700, when `create`): its
 * descriptor (O_DIRECTORY, close-on-exec), or -ENOTDIR (not a directory, or a link),
 * -EPERM (another user's), -ENOENT... */
int ospc_private_directory(const char *path, int create);
/* The directory open as `fd` checked: a directory, the effective user's; where others have
 * bits on it, narrowed to 0700 when `narrow`, else -EACCES if group or others may write in
 * it. 0, -ENOTDIR, -EPERM (another user's), -EACCES or -errno. */
int ospc_directory_check(int fd, int narrow);
/* The same for `name` (one component, not starting with '.') inside the private directory
 * `parent`. */
int ospc_private_subdirectory(int parent, const char *name, int create);
/* `name` in a private directory, opened for reading without following a link or blocking: a
 * regular file the effective user owns (its fstat into *info, which may be NULL). The
 * descriptor, or -EINVAL (not a regular file), -EPERM (another user's), -errno. */
int ospc_private_open(int directory, const char *name, struct stat *info);
/* A temporary file beside `name` ("NAME.tmp-PID-N", its name into `temp`), created
 * exclusively, 0600: the descriptor to write, or -errno. */
int ospc_private_temp(int directory, const char *name, char *temp, size_t temp_size);
/* Close `fd` and, when `ok` (everything was written), rename `temp` over `name`; else, or
 * when that fails, remove `temp`. 0 or -errno. */
int ospc_private_commit(int directory, int fd, const char *temp, const char *name, int ok);
/* Whether an object file (its fstat) may feed a cache: owned by the effective user or by
 * root, and writable by no one else (nor by a group other than ours). What another user's
 * file holds is used for the run at hand, never kept. */
int ospc_trusted_source(const struct stat *info);

/* ---- buildid.c: the build-id cache ----
 *
 * Binaries that ran, kept by build id so a profile can be symbolized after they are gone or
 * rebuilt, the way perf's ~/.debug build-id cache keeps them:
 *   DIR/<build id>/<base name>
 * where DIR is $OSPREY_BUILDID_CACHE, else $XDG_CACHE_HOME/osprey/buildid, else
 * ~/.cache/osprey/buildid. It is the layout pprof's PPROF_BINARY_PATH searches
 * (DIR/<build id>/<any name>), so `PPROF_BINARY_PATH=DIR go tool pprof` finds them too. Its size is
 * bounded: an addition prunes the least recently used entries past the bound
 * (OSPREY_BUILDID_CACHE_MAX, bytes with an optional K/M/G suffix; default 1G). */

#define OSPC_CACHE_DEFAULT_MAX (UINT64_C(1) << 30)

/* The cache directory into `out`. 0, or -ENOENT when there is no home to put it in. */
int ospc_cache_dir(char *out, size_t size);
/* The size bound: OSPREY_BUILDID_CACHE_MAX when it parses, else the default. */
uint64_t ospc_cache_max_bytes(void);
/* Parse "512M", "2G", "1000" into bytes. 0 or -EINVAL. */
int ospc_parse_size(const char *text, uint64_t *bytes);
/* Keep the object at `path`, whose build id is `build_id`, in the cache (a no-op, but for
 * marking it used, when it is there already), then prune to the bound. 0; 1 when it is not
 * kept because another user owns it or others can write it (ospc_trusted_source); or -errno:
 * -EFBIG past the bound, -ESTALE when the file is not that object, -EPERM or -ENOTDIR when
 * the cache's directory is another user's or a link. */
int ospc_cache_add(const char *path, const char *build_id);
/* The kept object with build id `build_id` into `out` (its name `name_hint`'s base name when
 * present, else any file in its directory whose build id matches; only regular files of
 * ours, in directories of ours, never through a link). 0, or -ENOENT. Marks it used (its
 * time, for pruning). */
int ospc_cache_find(const char *build_id, const char *name_hint, char *out, size_t size);
/* What an error of the cache's functions means, in a few words ("the directory is another
 * user's: not used" for -EPERM). */
const char *ospc_cache_strerror(int rc);
/* Remove the least recently used entries until the cache holds at most `max_bytes`: only
 * regular files of ours, two levels down, reached relative to directories of ours opened
 * without following a link (a link planted in the cache is neither followed nor counted). The
 * entries kept and their bytes go to *kept and *kept_bytes, those removed to *removed and
 * *removed_bytes
 * (any may be NULL). 0 or -errno (a missing cache is empty, not an error). */
int ospc_cache_prune(uint64_t max_bytes, size_t *kept, uint64_t *kept_bytes, size_t *removed,
                     uint64_t *removed_bytes);

/* ---- index.c: an open-addressing hash index ----
 *
 * Maps a 64-bit hash to the uint32 entries of a caller's table (the caller keeps the keys and
 * compares them): linear probing over a power-of-two array of slots, grown to keep it at most
 * half full. */
struct ospc_index {
    uint32_t *slots; /* entry + 1; 0 empty */
    size_t slot_count;
    size_t used;
};

/* An empty index with room for `expected` entries before it grows. 0 or -ENOMEM. */
int ospc_index_init(struct ospc_index *index, size_t expected);
void ospc_index_free(struct ospc_index *index);
/* Walk the slots for `hash`: start with *slot = ospc_index_start(index, hash), then while
 * ospc_index_entry(index, *slot) != UINT32_MAX compare that entry, else step with
 * ospc_index_next. */
static inline size_t ospc_index_start(const struct ospc_index *index, uint64_t hash)
{
    return (size_t)(hash ^ (hash >> 29)) & (index->slot_count - 1);
}
static inline size_t ospc_index_next(const struct ospc_index *index, size_t slot)
{
    return (slot + 1) & (index->slot_count - 1);
}
static inline uint32_t ospc_index_entry(const struct ospc_index *index, size_t slot)
{
    return index->slots[slot] - 1; /* UINT32_MAX when empty */
}
/* Put `entry` in the empty slot `slot` found by a walk that ended there, growing the index
 * when it gets half full (the hash of each entry is asked from `hash_of`). 0 or -ENOMEM. */
int ospc_index_insert(struct ospc_index *index, size_t slot, uint32_t entry,
                      uint64_t (*hash_of)(uint32_t entry, void *context), void *context);
/* FNV-1a over `size` bytes, continuing `hash` (start with OSPC_HASH_SEED). */
#define OSPC_HASH_SEED UINT64_C(1469598103934665603)
uint64_t ospc_hash_bytes(uint64_t hash, const void *data, size_t size);
/* A checksum of `size` bytes, continuing `seed` (chain calls by passing the previous result),
 * eight times as fast as ospc_hash_bytes on long data (the unwind cache's rows and call-frame
 * sections): it tells damaged or rewritten bytes from the ones checksummed, not an adversary's
 * chosen ones. */
uint64_t ospc_checksum(uint64_t seed, const void *data, size_t size);

/* ---- memory.c: what an owner holds, freed and ordered in one line ----
 *
 * free() of each of the `count` pointers (any may be NULL). */
void ospc_free_all(void *const *pointers, size_t count);
/* The `count` values sorted, each kept once: how many are left. */
size_t ospc_sort_unique(uint64_t *values, size_t count);
/* OSPC_FREE_ALL(a, b, c...): ospc_free_all over the pointers listed. */
#define OSPC_FREE_ALL(...)                                                                         \
    ospc_free_all((void *const[]){__VA_ARGS__},                                                    \
                  sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))
/* The order of two counts for qsort, the larger first: -1, 0 or 1. */
static inline int ospc_larger_first(uint64_t a, uint64_t b)
{
    return a > b ? -1 : a < b;
}
/* The same, the smaller first (an index breaking a tie). */
static inline int ospc_smaller_first(uint64_t a, uint64_t b)
{
    return -ospc_larger_first(a, b);
}
/* The order of two (first, second) pairs of counts for qsort, the larger first by `first`,
 * then by `second`: a hottest-first table's (self, total) or (on CPU, waiting). */
static inline int ospc_larger_first_by(uint64_t a_first, uint64_t b_first, uint64_t a_second,
                                       uint64_t b_second)
{
    int c = ospc_larger_first(a_first, b_first);
    return c != 0 ? c : ospc_larger_first(a_second, b_second);
}
/* A hottest-first table's order: by `first`, then `second`, the larger first, then by `index`
 * (a function's or a thread's), the smaller first. */
static inline int ospc_hottest_first(uint64_t a_first, uint64_t b_first, uint64_t a_second,
                                     uint64_t b_second, uint64_t a_index, uint64_t b_index)
{
    int c = ospc_larger_first_by(a_first, b_first, a_second, b_second);
    return c != 0 ? c : ospc_smaller_first(a_index, b_index);
}
/* A binary search over `count` rows of `size` bytes from `rows`, sorted by the uint64_t at
 * `offset` in each: how many rows come before `key`, those whose key is below it (`at_most`
 * false: the index of the first row at `key`, when one is) or at most it (`at_most` true: the
 * row at or below `key` is the one before that index). Inline, for the constants to fold. */
static inline size_t ospc_rows_before(const void *rows, size_t count, size_t size, size_t offset,
                                      uint64_t key, bool at_most)
{
    size_t low = 0, high = count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        uint64_t row_key;
        memcpy(&row_key, (const char *)rows + middle * size + offset, sizeof row_key);
        if (row_key < key || (at_most && row_key == key))
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

/* kallsyms.c: names[i] (malloc'd, NULL when none) for each kernel pcs[i], the text symbol at
 * or below it in the kallsyms file at `path` (/proc/kallsyms; addresses hidden by
 * kptr_restrict, all 0, name nothing). 0 or a negative errno. */
int ospc_kallsyms_name(const char *path, const uint64_t *pcs, uint32_t count, char **names);

#endif /* OSPC_H */
