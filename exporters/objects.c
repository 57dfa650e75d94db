/* objects.c — which object file describes an image of a profile. The profile names each
 * image's path and, since build ids travel with it, the object's identity; an object is
 * used only when it is that object:
 *
 *   1. `--binary` (for the main image only), then the recorded path: used when the profile
 *      has no build id for the image, or when the file's build id is the profile's;
 *   2. else, by build id: each `--symfs` directory as DIR/<id>/<name> (the layout pprof's
 *      PPROF_BINARY_PATH and the build-id cache use), DIR/.build-id/<xx>/<rest> (perf's and
 *      Debian's), then by name, DIR/<recorded path> and DIR/<base name>; then the build-id
 *      cache (common/buildid.c), where `osprey` keeps the binaries that ran; before those,
 *      the path through the process's root (/proc/PID/root/PATH) while the process lives,
 *      for a process in another mount namespace;
 *   3. else nothing: a file found at step 1 with another build id was rebuilt or replaced
 *      since the run, and resolving the profile's addresses against it would name the wrong
 *      functions. The caller says so in one line and the image's frames stay hex — unless
 *      asked (--ignore-build-id): then that file is used and its names are marked.
 *
 * Without a build id in the profile (older files, objects built without one) the recorded
 * path is trusted as before, and `--symfs` finds a moved object by name. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ospc.h"
#include "ospx_internal.h"

/* 1 when `path` is an ELF object we can read whose build id is `want` (any, when `want` is
 * ""); the object's build id goes to `found` (may be NULL) when it is one. */
static int object_matches(const char *path, const char *want, char *found, size_t found_size)
{
    struct ospc_elf_identity identity;
    if (ospc_elf_identity(path, &identity, NULL, 0) != 0)
        return 0;
    if (found != NULL)
        snprintf(found, found_size, "%s", identity.build_id);
    return want[0] == '\0' || strcmp(identity.build_id, want) == 0;
}

/* The --symfs directories, colon-separated, searched for `image`. Fills `out` and returns 1
 * when one holds the object. */
static int find_in_symfs(const char *symfs, const struct ospx_image *image, const char *want,
                         char *out, size_t size)
{
    const char *name = ospc_basename(image->path);
    while (symfs != NULL && *symfs != '\0') {
        size_t length = strcspn(symfs, ":");
        const char *dir = symfs;
        symfs += length + (symfs[length] == ':');
        if (length == 0)
            continue;
        if (strlen(want) > 2) { /* hex digits only (raw.c): the .build-id split is sound */
            if (snprintf(out, size, "%.*s/%s/%s", (int)length, dir, want, name) < (int)size &&
                object_matches(out, want, NULL, 0))
                return 1;
            if (snprintf(out, size, "%.*s/.build-id/%.2s/%s", (int)length, dir, want, want + 2) <
                    (int)size &&
                object_matches(out, want, NULL, 0))
                return 1;
            if (snprintf(out, size, "%.*s/.build-id/%.2s/%s.debug", (int)length, dir, want,
                         want + 2) < (int)size &&
                object_matches(out, want, NULL, 0))
                return 1;
        }
        if (image->path[0] == '/' &&
            snprintf(out, size, "%.*s%s", (int)length, dir, image->path) < (int)size &&
            object_matches(out, want, NULL, 0))
            return 1;
        if (name[0] != '\0' && snprintf(out, size, "%.*s/%s", (int)length, dir, name) < (int)size &&
            object_matches(out, want, NULL, 0))
            return 1;
    }
    return 0;
}

int ospx__find_object(const struct ospx_raw *raw, size_t index, const char *binary,
                      const char *symfs, int use_other_build, struct ospx__object *out)
{
    memset(out, 0, sizeof *out);
    const struct ospx_image *image = &raw->images[index];
    const char *want = ospx__str(image->build_id);
    /* A pseudo image ("[vdso]") has no file: the symbolizer decides what describes it. */
    if (image->path[0] == '[' || (image->path[0] != '/' && strchr(image->path, '/') == NULL)) {
        out->path = image->path;
        return 0;
    }
    int main_image = binary != NULL && raw->exe != NULL && strcmp(image->path, raw->exe) == 0;
    const char *candidates[2] = {main_image ? binary : NULL, image->path};
    for (int c = 0; c < 2; c++) {
        if (candidates[c] == NULL)
            continue;
        char found[OSPC_BUILD_ID_SIZE] = "";
        if (object_matches(candidates[c], want, found, sizeof found)) {
            out->path = candidates[c];
            return 0;
        }
        if (found[0] != '\0' || (want[0] != '\0' && access(candidates[c], F_OK) == 0)) {
            /* there, and another object: remember the first such for the warning */
            if (out->mismatched == NULL) {
                out->mismatched = candidates[c];
                snprintf(out->mismatched_id, sizeof out->mismatched_id, "%s",
                         found[0] != '\0' ? found : "none");
            }
        } else if (want[0] == '\0' && access(candidates[c], F_OK) == 0) {
            /* not an ELF file we read (the symbolizer says what it is): as before */
            out->path = candidates[c];
            return 0;
        }
    }
    char path[4096];
    /* First the object as its process sees it, while that process lives: one in another mount
     * namespace (a container) maps files the host has elsewhere or not at all. Only by build
     * id, which says it is the object that ran. */
    if ((want[0] != '\0' &&
         ospc_path_in_root((int32_t)ospx__process_pid(raw, image->process), image->path, path,
                           sizeof path) == 0 &&
         object_matches(path, want, NULL, 0)) ||
        find_in_symfs(symfs, image, want, path, sizeof path) ||
        (want[0] != '\0' && ospc_cache_find(want, image->path, path, sizeof path) == 0)) {
        out->owned = strdup(path);
        if (out->owned == NULL)
            return -ENOMEM;
        out->path = out->owned;
        out->mismatched = NULL;
        return 0;
    }
    /* Nothing that is the object: a mismatched file is not used; a missing one is reported
     * as missing by the symbolizer (its recorded path). */
    out->path = out->mismatched != NULL ? NULL : candidates[main_image ? 0 : 1];
    if (out->mismatched != NULL && use_other_build) { /* asked for: used, and marked */
        out->path = out->mismatched;
        out->other_build = 1;
    }
    return 0;
}

void ospx__object_free(struct ospx__object *object)
{
    free(object->owned);
    memset(object, 0, sizeof *object);
}
