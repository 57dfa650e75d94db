/* buildid.c — the build-id cache: binaries that ran, kept as DIR/<build id>/<base name> so a
 * profile can be symbolized after its binary is deleted (a C file's scratch build) or rebuilt.
 * perf keeps ~/.debug the same way; the layout is the one pprof's PPROF_BINARY_PATH searches.
 * An entry's modification time is when it was last added or found: pruning removes the least
 * recently used entries until the cache is within its bound. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
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

/* The entry's time is now: it was used. */
static void touch(const char *path)
{
    (void)utimensat(AT_FDCWD, path, NULL, 0);
}

/* 1 when the object at `path` has build id `id`. */
static int has_build_id(const char *path, const char *id)
{
    struct ospc_elf_identity identity;
    return ospc_elf_identity(path, &identity, NULL, 0) == 0 && strcmp(identity.build_id, id) == 0;
}

int ospc_cache_add(const char *path, const char *build_id)
{
    if (!valid_build_id(build_id))
        return -EINVAL;
    char directory[4096], entry[4096 + 256];
    int rc = ospc_cache_dir(directory, sizeof directory - OSPC_BUILD_ID_SIZE - 2);
    if (rc != 0)
        return rc;
    size_t length = strlen(directory);
    snprintf(directory + length, sizeof directory - length, "/%s", build_id);
    const char *name = ospc_basename(path);
    if (name[0] == '\0' || name[0] == '.')
        name = "object";
    if (snprintf(entry, sizeof entry, "%s/%s", directory, name) >= (int)sizeof entry)
        return -ENAMETOOLONG;
    if (has_build_id(entry, build_id)) {
        touch(entry);
        return 0;
    }
    uint64_t max = ospc_cache_max_bytes();
    struct stat info;
    if (stat(path, &info) != 0)
        return -errno;
    if ((uint64_t)info.st_size > max)
        return -EFBIG;
    rc = ospc_make_directories(directory, 0755);
    if (rc == 0)
        rc = ospc_copy_file(path, entry);
    if (rc == 0)
        rc = ospc_cache_prune(max, NULL, NULL, NULL, NULL);
    return rc;
}

int ospc_cache_find(const char *build_id, const char *name_hint, char *out, size_t size)
{
    if (build_id == NULL || !valid_build_id(build_id))
        return -ENOENT;
    char directory[4096];
    int rc = ospc_cache_dir(directory, sizeof directory - OSPC_BUILD_ID_SIZE - 2);
    if (rc != 0)
        return -ENOENT;
    size_t length = strlen(directory);
    snprintf(directory + length, sizeof directory - length, "/%s", build_id);
    if (name_hint != NULL && ospc_basename(name_hint)[0] != '\0' &&
        snprintf(out, size, "%s/%s", directory, ospc_basename(name_hint)) < (int)size &&
        has_build_id(out, build_id)) {
        touch(out);
        return 0;
    }
    DIR *listing = opendir(directory);
    if (listing == NULL)
        return -ENOENT;
    struct dirent *item;
    rc = -ENOENT;
    while (rc != 0 && (item = readdir(listing)) != NULL) {
        if (item->d_name[0] == '.')
            continue;
        if (snprintf(out, size, "%s/%s", directory, item->d_name) < (int)size &&
            has_build_id(out, build_id)) {
            touch(out);
            rc = 0;
        }
    }
    closedir(listing);
    if (rc != 0 && size > 0)
        out[0] = '\0';
    return rc;
}

struct cache_entry {
    char *path;
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
    return strcmp(x->path, y->path);
}

/* Every file two levels down: DIR/<id>/<name>. */
static int list_entries(const char *root, struct cache_entry **entries, size_t *count)
{
    *entries = NULL;
    *count = 0;
    size_t capacity = 0;
    DIR *top = opendir(root);
    if (top == NULL)
        return errno == ENOENT ? 0 : -errno;
    struct dirent *id;
    int rc = 0;
    while (rc == 0 && (id = readdir(top)) != NULL) {
        if (id->d_name[0] == '.')
            continue;
        char directory[4096 + 256];
        snprintf(directory, sizeof directory, "%s/%s", root, id->d_name);
        DIR *inner = opendir(directory);
        if (inner == NULL)
            continue;
        struct dirent *item;
        while (rc == 0 && (item = readdir(inner)) != NULL) {
            if (strcmp(item->d_name, ".") == 0 || strcmp(item->d_name, "..") == 0)
                continue;
            char path[sizeof directory + 256];
            snprintf(path, sizeof path, "%s/%s", directory, item->d_name);
            struct stat info;
            if (lstat(path, &info) != 0 || !S_ISREG(info.st_mode))
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
            char *copy = strdup(path);
            if (copy == NULL) {
                rc = -ENOMEM;
                break;
            }
            (*entries)[(*count)++] =
                (struct cache_entry){copy, (uint64_t)info.st_size, info.st_mtim};
        }
        closedir(inner);
    }
    closedir(top);
    return rc;
}

int ospc_cache_prune(uint64_t max_bytes, size_t *kept, uint64_t *kept_bytes, size_t *removed,
                     uint64_t *removed_bytes)
{
    char root[4096];
    size_t kept_count = 0, removed_count = 0;
    uint64_t total = 0, removed_total = 0;
    int rc = ospc_cache_dir(root, sizeof root);
    struct cache_entry *entries = NULL;
    size_t count = 0;
    if (rc == 0)
        rc = list_entries(root, &entries, &count);
    if (rc == 0) {
        for (size_t i = 0; i < count; i++)
            total += entries[i].bytes;
        qsort(entries, count, sizeof *entries, oldest_first);
        for (size_t i = 0; i < count; i++) {
            /* A temporary file of an addition in progress is not an entry to remove. */
            if (total > max_bytes && strstr(ospc_basename(entries[i].path), ".tmp-") == NULL &&
                unlink(entries[i].path) == 0) {
                total -= entries[i].bytes;
                removed_total += entries[i].bytes;
                removed_count++;
                char *slash = strrchr(entries[i].path, '/');
                *slash = '\0';
                (void)rmdir(entries[i].path); /* when it was the id's last file */
            } else {
                kept_count++;
            }
        }
    }
    for (size_t i = 0; i < count; i++)
        free(entries[i].path);
    free(entries);
    if (rc == -ENOENT)
        rc = 0; /* no home: nothing kept */
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
