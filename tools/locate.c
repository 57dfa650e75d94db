/* locate.c — where the shim archive, the preload library, ospreyd and the shim header are,
 * found from the CLI's own executable. Run from a build tree (<build>/tools/osprey), the
 * pieces are the ones built beside it, so a fresh `ninja -C build` is always what runs;
 * installed, they are at the paths meson configured (osprey_config.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "osprey_cli.h"
#include "osprey_config.h"

/* directory/name into out; a path too long for PATH_MAX is left empty, so the check that
 * follows reports it missing rather than using a truncated path. */
static void join(char *out, size_t size, const char *directory, const char *name)
{
    int written = snprintf(out, size, "%s/%s", directory, name);
    if (written < 0 || (size_t)written >= size)
        out[0] = '\0';
}

void osprey_locate(const char *self_exe, struct osprey_paths *out)
{
    memset(out, 0, sizeof *out);
    char directory[PATH_MAX];
    snprintf(directory, sizeof directory, "%s", self_exe != NULL ? self_exe : "");
    char *slash = strrchr(directory, '/');
    if (slash != NULL) {
        *slash = '\0'; /* <build>/tools */
        slash = strrchr(directory, '/');
    }
    if (slash != NULL && strcmp(slash, "/tools") == 0) {
        *slash = '\0'; /* <build> */
        char archive[PATH_MAX + 32];
        snprintf(archive, sizeof archive, "%s/shim/libospreyprof.a", directory);
        if (access(archive, F_OK) == 0) {
            out->build_tree = 1;
            join(out->shim_archive, sizeof out->shim_archive, directory, "shim/libospreyprof.a");
            join(out->shim_preload, sizeof out->shim_preload, directory, "shim/libospreyprof.so");
            join(out->daemon, sizeof out->daemon, directory, "daemon/ospreyd");
            join(out->include_dir, sizeof out->include_dir, OSPREY_SOURCE_ROOT, "shim");
            return;
        }
    }
    join(out->shim_archive, sizeof out->shim_archive, OSPREY_LIBDIR, "libospreyprof.a");
    join(out->shim_preload, sizeof out->shim_preload, OSPREY_LIBDIR, "libospreyprof.so");
    join(out->daemon, sizeof out->daemon, OSPREY_BINDIR, "ospreyd");
    join(out->include_dir, sizeof out->include_dir, OSPREY_INCLUDEDIR, "osprey");
}

static int check_one(const char *path, const char *what, char *error, size_t error_size)
{
    if (access(path, R_OK) == 0)
        return 0;
    snprintf(error, error_size, "%s %s is missing (%s); build or install Osprey first", what, path,
             strerror(errno));
    return -ENOENT;
}

int osprey_paths_check(const struct osprey_paths *paths, int need_archive, int need_preload,
                       char *error, size_t error_size)
{
    if (need_archive &&
        check_one(paths->shim_archive, "the profiler archive", error, error_size) != 0)
        return -ENOENT;
    if (need_preload &&
        check_one(paths->shim_preload, "the preload library", error, error_size) != 0)
        return -ENOENT;
    if (check_one(paths->daemon, "the collector daemon", error, error_size) != 0)
        return -ENOENT;
    if (access(paths->daemon, X_OK) != 0) {
        snprintf(error, error_size, "the collector daemon %s is not executable", paths->daemon);
        return -EACCES;
    }
    return 0;
}
