/* path.c — names of things on disk: a command looked up on PATH (as execvp would, with one
 * policy for an unset PATH), the stem of a raw profile's name, base names, mkdir -p, a path
 * as another process sees it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ospc.h"

static int is_executable_file(const char *path)
{
    struct stat info;
    return stat(path, &info) == 0 && S_ISREG(info.st_mode) && access(path, X_OK) == 0;
}

char *ospc_find_on_path(const char *name)
{
    if (name == NULL || name[0] == '\0')
        return NULL;
    if (strchr(name, '/') != NULL)
        return is_executable_file(name) ? strdup(name) : NULL;
    const char *path = getenv("PATH");
    if (path == NULL)
        path = "/usr/local/bin:/usr/bin:/bin";
    if (path[0] == '\0')
        return NULL;
    for (;;) {
        size_t length = strcspn(path, ":");
        char candidate[4096];
        int written =
            length == 0 ? snprintf(candidate, sizeof candidate, "./%s", name)
                        : snprintf(candidate, sizeof candidate, "%.*s/%s", (int)length, path, name);
        if (written > 0 && (size_t)written < sizeof candidate && is_executable_file(candidate))
            return strdup(candidate);
        if (path[length] == '\0')
            return NULL;
        path += length + 1;
    }
}

static int has_suffix(const char *text, size_t length, const char *suffix)
{
    size_t suffix_length = strlen(suffix);
    return length > suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

int ospc_raw_stem(const char *raw_path, char *stem, size_t size)
{
    size_t length = strlen(raw_path);
    if (has_suffix(raw_path, length, ".raw.json"))
        length -= strlen(".raw.json");
    else if (has_suffix(raw_path, length, ".json"))
        length -= strlen(".json");
    int written = snprintf(stem, size, "%.*s", (int)length, raw_path);
    return written >= 0 && (size_t)written < size ? written : -ENAMETOOLONG;
}

const char *ospc_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL && slash[1] != '\0' ? slash + 1 : path;
}

int ospc_make_directories(const char *directory, mode_t mode)
{
    char buffer[4096];
    if (snprintf(buffer, sizeof buffer, "%s", directory) >= (int)sizeof buffer)
        return -ENAMETOOLONG;
    for (char *p = buffer + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        if (mkdir(buffer, mode) != 0 && errno != EEXIST)
            return -errno;
        *p = saved;
        if (saved == '\0')
            break;
    }
    struct stat info;
    if (stat(buffer, &info) != 0)
        return -errno;
    return S_ISDIR(info.st_mode) ? 0 : -ENOTDIR;
}

int ospc_path_in_root(int32_t pid, const char *path, char *out, size_t size)
{
    if (pid <= 0 || path[0] != '/')
        return -EINVAL;
    int n = snprintf(out, size, "/proc/%d/root%s", (int)pid, path);
    return n >= 0 && (size_t)n < size ? 0 : -ENAMETOOLONG;
}
