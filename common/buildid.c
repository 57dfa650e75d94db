/* buildid.c — the build-id cache: binaries that ran, kept as DIR/<build id>/<base name> so a
 * profile can be symbolized after its binary is deleted (a C file's scratch build) or rebuilt.
 * perf keeps ~/.debug the same way; the layout is the one pprof's PPROF_BINARY_PATH searches.
 * An entry's modification time is when it was last added or found: pruning removes the least
 * recently used entries until the cache is within its bound.
 *
 * The cache is this user's alone (private.c): its directory and each id's are opened without
 * following a link and must be ours (0700); only regular files of ours in them are read,
 * found or removed, every one relative to its directory's descriptor, so neither a lookup nor
 * a prune ever leaves the cache. Only objects of ours or root's, that no one else can write,
 * are kept: a copy of another user's file could be anything under that build id. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"

int ospc_cache_dir(char *out, size_t size)
{
    const char *explicit_dir = getenv("OSPREY_BUILDID_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int written;
    if (explicit_dir != NULL && explicit_dir[0] != '\0')
        written = snprintf(out, size, "%s", explicit_dir);
    else if (xdg != NULL && xdg[0] == '/') /* the XDG spec ignores a relative one */
        written = snprintf(out, size, "%s/osprey/buildid", xdg);
    else if (home != NULL && home[0] != '\0')
        written = snprintf(out, size, "%s/.cache/osprey/buildid", home);
    else
        return -ENOENT;
    return written > 0 && (size_t)written < size ? 0 : -ENAMETOOLONG;
}

int ospc_parse_size(const char *text, uint64_t *bytes)
{
    char *end;
    errno = 0;
    unsigned long long value = strtoull(text, &end, 10);
    if (end == text || errno != 0 || text[0] == '-')
        return -EINVAL;
    int shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'i' && shift != 0)
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || value > (UINT64_MAX >> shift))
        return -EINVAL;
    *bytes = (uint64_t)value << shift;
    return 0;
}

uint64_t ospc_cache_max_bytes(void)
{
    const char *text = getenv("OSPREY_BUILDID_CACHE_MAX");
    uint64_t bytes;
    if (text != NULL && ospc_parse_size(text, &bytes) == 0)
        return bytes;
    return OSPC_CACHE_DEFAULT_MAX;
}

/* A build id as the cache files it: lowercase hex, 2..128 digits. */
static int valid_build_id(const char *id)
{
    size_t length = strlen(id);
    if (length < 2 || length >= OSPC_BUILD_ID_SIZE)
        return 0;
    for (size_t i = 0; i < length; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            return 0;
    return 1;
}

/* The cache's directory, private (made when `create`): its descriptor, or -errno (-ENOENT
 * when there is no home to put it in, or it was never made). */
static int open_cache(int create)
{
    char root[4096];
    int rc = ospc_cache_dir(root, sizeof root);
    return rc != 0 ? rc : ospc_private_directory(root, create);
}

/* 1 when `name` in the private directory `directory` is a file of ours with build id `id`;
 * then its time is now (it was used). */
static int has_build_id(int directory, const char *name, const char *id)
{
    struct stat info;
    int fd = ospc_private_open(directory, name, &info);
    if (fd < 0)
        return 0;
    struct ospc_elf_identity identity;
    int found = ospc_elf_identity_fd(fd, info.st_size, &identity) == 0 &&
                strcmp(identity.build_id, id) == 0;
    if (found)
        (void)futimens(fd, NULL);
    close(fd);
    return found;
}

/* The object open as `source` into DIR/<id>/<name>: a temporary file renamed into place. 0
 * when copied, 1 when it was there already (marked used), or -errno. */
static int keep_copy(int source, const struct stat *info, const char *build_id, const char *name)
{
    int cache = open_cache(1);
    if (cache < 0)
        return cache;
    int directory = ospc_private_subdirectory(cache, build_id, 1);
    close(cache);
    if (directory < 0)
        return directory;
    int rc = 1;
    if (!has_build_id(directory, name, build_id)) {
        char temp[NAME_MAX + 1];
        int fd = ospc_private_temp(directory, name, temp, sizeof temp);
        rc = fd < 0 ? fd : ospc_copy_fd(source, fd);
        if (fd >= 0) {
            (void)fchmod(fd, (info->st_mode & 0777) & ~ospc_umask());
            int committed = ospc_private_commit(directory, fd, temp, name, rc == 0);
            rc = rc != 0 ? rc : committed;
        }
    }
    close(directory);
    return rc;
}

int ospc_cache_add(const char *path, const char *build_id)
{
    if (!valid_build_id(build_id))
        return -EINVAL;
    const char *name = ospc_basename(path);
    if (name[0] == '\0' || name[0] == '.' || strlen(name) > NAME_MAX - 32)
        name = "object";
    int source = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (source < 0)
        return -errno;
    struct stat info;
    struct ospc_elf_identity identity;
    int rc = fstat(source, &info) != 0 ? -errno : !S_ISREG(info.st_mode) ? -EINVAL : 0;
    if (rc == 0 && (uint64_t)info.st_size > ospc_cache_max_bytes())
        rc = -EFBIG;
    else if (rc == 0 && !ospc_trusted_source(&info))
        rc = 1; /* another user's (or one others can write): never kept */
    else if (rc == 0 && (ospc_elf_identity_fd(source, info.st_size, &identity) != 0 ||
                         strcmp(identity.build_id, build_id) != 0))
        rc = -ESTALE; /* not (or no longer) that object */
    int kept = rc == 0 ? keep_copy(source, &info, build_id, name) : rc;
    close(source);
    if (rc != 0 || kept == 1) /* 1: there already */
        return rc;
    return kept == 0 ? ospc_cache_prune(ospc_cache_max_bytes(), NULL, NULL, NULL, NULL) : kept;
}

const char *ospc_cache_strerror(int rc)
{
    if (rc == -EPERM)
        return "the directory is another user's: not used";
    if (rc == -ENOTDIR)
        return "not a directory (a link is not followed)";
    return strerror(-rc);
}

/* A listing of the private directory open as `directory` (which stays open). */
static DIR *list_directory(int directory)
{
    int fd = dup(directory);
    DIR *listing = fd >= 0 ? fdopendir(fd) : NULL;
    if (listing == NULL && fd >= 0)
        close(fd);
    return listing;
}

/* `from` into name[NAME_MAX + 1] when it fits and is an object of ours with build id `id`. */
static void take_if_object(char *name, int directory, const char *from, const char *id)
{
    size_t length = strlen(from);
    if (length > 0 && length <= NAME_MAX && from[0] != '.' && has_build_id(directory, from, id))
        memcpy(name, from, length + 1);
}

int ospc_cache_find(const char *build_id, const char *name_hint, char *out, size_t size)
{
    if (size > 0)
        out[0] = '\0';
    char root[4096];
    if (build_id == NULL || !valid_build_id(build_id) || ospc_cache_dir(root, sizeof root) != 0)
        return -ENOENT;
    int cache = ospc_private_directory(root, 0);
    int directory = cache < 0 ? -1 : ospc_private_subdirectory(cache, build_id, 0);
    if (cache >= 0)
        close(cache);
    if (directory < 0)
        return -ENOENT;
    char name[NAME_MAX + 1] = "";
    if (name_hint != NULL)
        take_if_object(name, directory, ospc_basename(name_hint), build_id);
    DIR *listing = name[0] == '\0' ? list_directory(directory) : NULL;
    for (struct dirent *item; listing != NULL && name[0] == '\0' && (item = readdir(listing));)
        take_if_object(name, directory, item->d_name, build_id);
    if (listing != NULL)
        closedir(listing);
    close(directory);
    if (name[0] == '\0' || snprintf(out, size, "%s/%s/%s", root, build_id, name) >= (int)size) {
        if (size > 0)
            out[0] = '\0';
        return -ENOENT;
    }
    return 0;
}

struct cache_entry {
    char *id, *name;
    uint64_t bytes;
    struct timespec used;
};

static int oldest_first(const void *a, const void *b)
{
    const struct cache_entry *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec)
        return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec)
        return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    int order = strcmp(x->id, y->id);
    return order != 0 ? order : strcmp(x->name, y->name);
}

/* Every regular file of ours two levels down, DIR/<id>/<name>, never through a link: an id
 * that is not a directory of ours is not looked into. */
static int list_entries(int cache, struct cache_entry **entries, size_t *count)
{
    *entries = NULL;
    *count = 0;
    size_t capacity = 0;
    DIR *top = list_directory(cache);
    if (top == NULL)
        return -errno;
    struct dirent *id;
    int rc = 0;
    while (rc == 0 && (id = readdir(top)) != NULL) {
        int directory = id->d_name[0] == '.' ? -1 : ospc_private_subdirectory(cache, id->d_name, 0);
        DIR *inner = directory >= 0 ? list_directory(directory) : NULL;
        struct dirent *item;
        while (inner != NULL && rc == 0 && (item = readdir(inner)) != NULL) {
            struct stat info;
            if (item->d_name[0] == '.' &&
                (item->d_name[1] == '\0' || strcmp(item->d_name, "..") == 0))
                continue;
            if (fstatat(directory, item->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0 ||
                !S_ISREG(info.st_mode) || info.st_uid != geteuid())
                continue;
            if (*count == capacity) {
                capacity = capacity != 0 ? capacity * 2 : 64;
                struct cache_entry *grown = realloc(*entries, capacity * sizeof *grown);
                if (grown == NULL) {
                    rc = -ENOMEM;
                    break;
                }
                *entries = grown;
            }
            struct cache_entry entry = {strdup(id->d_name), strdup(item->d_name),
                                        (uint64_t)info.st_size, info.st_mtim};
            if (entry.id == NULL || entry.name == NULL) {
                free(entry.id);
                free(entry.name);
                rc = -ENOMEM;
                break;
            }
            (*entries)[(*count)++] = entry;
        }
        if (inner != NULL)
            closedir(inner);
        if (directory >= 0)
            close(directory);
    }
    closedir(top);
    return rc;
}

/* Remove DIR/<id>/<name>, and DIR/<id> when it was its last file: relative to the cache's
 * descriptor, the id's directory checked again (ours, not a link). 0 or -errno. */
static int remove_entry(int cache, const struct cache_entry *entry)
{
    int directory = ospc_private_subdirectory(cache, entry->id, 0);
    if (directory < 0)
        return directory;
    int rc = unlinkat(directory, entry->name, 0) == 0 ? 0 : -errno;
    close(directory);
    if (rc == 0)
        (void)unlinkat(cache, entry->id, AT_REMOVEDIR); /* fails unless empty */
    return rc;
}

int ospc_cache_prune(uint64_t max_bytes, size_t *kept, uint64_t *kept_bytes, size_t *removed,
                     uint64_t *removed_bytes)
{
    size_t kept_count = 0, removed_count = 0;
    uint64_t total = 0, removed_total = 0;
    struct cache_entry *entries = NULL;
    size_t count = 0;
    int cache = open_cache(0);
    int rc = cache < 0 ? cache : list_entries(cache, &entries, &count);
    if (rc == 0) {
        for (size_t i = 0; i < count; i++)
            total += entries[i].bytes;
        qsort(entries, count, sizeof *entries, oldest_first);
        for (size_t i = 0; i < count; i++) {
            /* A temporary file of an addition in progress is not an entry to remove. */
            if (total > max_bytes && strstr(entries[i].name, ".tmp-") == NULL &&
                remove_entry(cache, &entries[i]) == 0) {
                total -= entries[i].bytes;
                removed_total += entries[i].bytes;
                removed_count++;
            } else {
                kept_count++;
            }
        }
    }
    for (size_t i = 0; i < count; i++) {
        free(entries[i].id);
        free(entries[i].name);
    }
    free(entries);
    if (cache >= 0)
        close(cache);
    if (rc == -ENOENT)
        rc = 0; /* no home, or never made: nothing kept */
    if (kept != NULL)
        *kept = kept_count;
    if (kept_bytes != NULL)
        *kept_bytes = total;
    if (removed != NULL)
        *removed = removed_count;
    if (removed_bytes != NULL)
        *removed_bytes = removed_total;
    return rc;
}
