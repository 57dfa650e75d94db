/* files.c — the file-system side of the `osprey` command: deciding what FILE is (a source to
 * build, an executable to run, or something it cannot use), the default output stems, the
 * scratch directory's removal, and keeping the raw profile beside the outputs (renamed, or
 * across file systems copied with common/'s atomic write, so a reader never sees half a
 * file).
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "osp_ring.h"
#include "ospc.h"
#include "osprey_cli.h"

static int has_suffix(const char *text, const char *suffix)
{
    size_t text_length = strlen(text), suffix_length = strlen(suffix);
    return text_length > suffix_length && strcmp(text + text_length - suffix_length, suffix) == 0;
}

static const char *const cxx_suffixes[] = {".cc", ".cpp", ".cxx", ".C"};

int osprey_find_on_path(const char *name, char *resolved, size_t size)
{
    /* A bare name only: common/'s search, one policy for an unset or empty PATH. */
    char *found = strchr(name, '/') == NULL ? ospc_find_on_path(name) : NULL;
    if (found == NULL)
        return -ENOENT;
    int written = snprintf(resolved, size, "%s", found);
    free(found);
    return written > 0 && (size_t)written < size ? 0 : -ENAMETOOLONG;
}

int osprey_classify_file(const char *file, enum osprey_file_kind *kind, char *resolved,
                         size_t resolved_size, char *error, size_t error_size)
{
    struct stat info;
    if (snprintf(resolved, resolved_size, "%s", file) >= (int)resolved_size) {
        snprintf(error, error_size, "%s: %s", file, strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    if (stat(file, &info) != 0) {
        int code = errno;
        if (code == ENOENT && strchr(file, '/') == NULL &&
            osprey_find_on_path(file, resolved, resolved_size) == 0) {
            *kind = OSPREY_FILE_EXECUTABLE;
            return 0;
        }
        snprintf(error, error_size, "%s: %s", file, strerror(code));
        return -code;
    }
    if (S_ISDIR(info.st_mode)) {
        snprintf(error, error_size, "%s: is a directory, not a C source or an executable", file);
        return -EISDIR;
    }
    if (!S_ISREG(info.st_mode)) {
        snprintf(error, error_size, "%s: not a regular file", file);
        return -EINVAL;
    }
    if (has_suffix(file, ".c")) {
        *kind = OSPREY_FILE_C_SOURCE;
        return 0;
    }
    for (size_t i = 0; i < sizeof cxx_suffixes / sizeof cxx_suffixes[0]; i++) {
        if (has_suffix(file, cxx_suffixes[i])) {
            *kind = OSPREY_FILE_CXX_SOURCE;
            return 0;
        }
    }
    if (access(file, X_OK) != 0) {
        enum osprey_profile_kind profile = osprey_profile_kind(file);
        if (profile == OSPREY_KIND_RAW)
            snprintf(error, error_size,
                     "%s: a raw profile, not a program: did you mean 'osprey report %s'?", file,
                     file);
        else if (osprey_describe_kind(file, profile, error, error_size) != 0)
            snprintf(error, error_size, "%s: not a C source (.c) and not executable", file);
        return -EACCES;
    }
    /* A bare name that exists in the current directory is run from there, as the user
     * named it, not searched on PATH. */
    if (strchr(file, '/') == NULL &&
        snprintf(resolved, resolved_size, "./%s", file) >= (int)resolved_size) {
        snprintf(error, error_size, "%s: %s", file, strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    *kind = OSPREY_FILE_EXECUTABLE;
    return 0;
}

int osprey_is_static_elf(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    Elf64_Ehdr header;
    Elf64_Phdr *segments;
    size_t count;
    int is_static = 0;
    if (ospc_elf_program_headers(fd, NULL, UINT64_MAX, &header, &segments, &count) == 0) {
        is_static = header.e_type == ET_EXEC || header.e_type == ET_DYN;
        for (size_t i = 0; i < count; i++)
            if (segments[i].p_type == PT_INTERP)
                is_static = 0;
        free(segments);
    }
    close(fd);
    return is_static;
}

static void name_or_id(char *out, size_t size, const char *what, const char *name, unsigned id)
{
    if (name != NULL)
        snprintf(out, size, "%s %s", what, name);
    else
        snprintf(out, size, "%s %u", what, id);
}

int osprey_gains_privileges(const char *path, char *how, size_t how_size)
{
    struct stat st;
    struct statvfs fs;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    /* Neither a nosuid mount nor a process that may gain no privileges honours the bits. */
    if ((statvfs(path, &fs) == 0 && (fs.f_flag & ST_NOSUID)) ||
        prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1)
        return 0;
    if ((st.st_mode & S_ISUID) && st.st_uid != geteuid()) {
        const struct passwd *owner = getpwuid(st.st_uid);
        name_or_id(how, how_size, "set-user-ID", owner != NULL ? owner->pw_name : NULL, st.st_uid);
        return 1;
    }
    if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP) && st.st_gid != getegid()) {
        const struct group *group = getgrgid(st.st_gid);
        name_or_id(how, how_size, "set-group-ID", group != NULL ? group->gr_name : NULL, st.st_gid);
        return 1;
    }
    /* File capabilities raise a user's; root has them all already. */
    if (geteuid() != 0 && getxattr(path, "security.capability", NULL, 0) > 0) {
        snprintf(how, how_size, "given capabilities by the file");
        return 1;
    }
    return 0;
}

void osprey_default_run_stem(const char *file, char *stem, size_t size)
{
    const char *slash = strrchr(file, '/');
    const char *name = slash != NULL ? slash + 1 : file;
    size_t length = strlen(name);
    static const char *const source_suffixes[] = {".c", ".cc", ".cpp", ".cxx", ".C"};
    for (size_t i = 0; i < sizeof source_suffixes / sizeof source_suffixes[0]; i++) {
        if (has_suffix(name, source_suffixes[i])) {
            length -= strlen(source_suffixes[i]);
            break;
        }
    }
    snprintf(stem, size, "./%.*s", (int)length, name);
}

void osprey_default_report_stem(const char *raw, char *stem, size_t size)
{
    (void)ospc_raw_stem(raw, stem, size);
}

void osprey_output_stem(const struct osprey_options *options, char *stem, size_t size)
{
    if (options->stem != NULL)
        snprintf(stem, size, "%s", options->stem);
    else if (options->command == OSPREY_COMMAND_REPORT)
        osprey_default_report_stem(options->file, stem, size);
    else
        osprey_default_run_stem(options->file, stem, size);
}

/* path becomes the directory it is in: "a/b" → "a", "/a" → "/", "a" → ".". */
static void to_parent(char *path, size_t size)
{
    char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(path, size, ".");
    else if (slash == path)
        slash[1] = '\0';
    else
        *slash = '\0';
}

int osprey_check_output_place(const char *stem, char *error, size_t error_size)
{
    struct stat info;
    if (stat(stem, &info) == 0 && S_ISDIR(info.st_mode)) {
        snprintf(error, error_size,
                 "%s: is a directory; -o takes a stem the outputs are named after (e.g. %s/%s)",
                 stem, stem, "prog");
        return -EISDIR;
    }
    char raw[PATH_MAX];
    if (snprintf(raw, sizeof raw, "%s.raw.json", stem) >= (int)sizeof raw) {
        snprintf(error, error_size, "%s: %s", stem, strerror(ENAMETOOLONG));
        return -ENAMETOOLONG;
    }
    if (stat(raw, &info) == 0 && S_ISDIR(info.st_mode)) {
        snprintf(error, error_size, "%s: is a directory, where the raw profile goes", raw);
        return -EISDIR;
    }
    /* The stem's directory, else its nearest ancestor that exists (the rest is created). */
    char directory[PATH_MAX];
    snprintf(directory, sizeof directory, "%s", stem);
    to_parent(directory, sizeof directory);
    int to_create = 0;
    while (stat(directory, &info) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) {
            int code = errno;
            snprintf(error, error_size, "%s: cannot write the outputs there: %s", directory,
                     strerror(code));
            return -code;
        }
        to_create = 1;
        to_parent(directory, sizeof directory);
    }
    if (!S_ISDIR(info.st_mode)) {
        snprintf(error, error_size, "%s: not a directory, so the outputs at %s cannot be written",
                 directory, stem);
        return -ENOTDIR;
    }
    if (access(directory, W_OK | X_OK) != 0) {
        int code = errno;
        if (to_create)
            snprintf(error, error_size,
                     "%s: cannot create the directories of the outputs at %s (%s)", directory, stem,
                     strerror(code));
        else
            snprintf(error, error_size, "%s: cannot write the outputs at %s there (%s)", directory,
                     stem, strerror(code));
        return -code;
    }
    return 0;
}

int osprey_make_parent_dirs(const char *path)
{
    char buffer[PATH_MAX];
    if (snprintf(buffer, sizeof buffer, "%s", path) >= (int)sizeof buffer)
        return -ENAMETOOLONG;
    char *last = strrchr(buffer, '/');
    if (last == NULL || last == buffer)
        return 0;
    *last = '\0';
    return ospc_make_directories(buffer, 0777);
}

int osprey_move_file(const char *source, const char *destination)
{
    if (rename(source, destination) == 0)
        return 0;
    if (errno != EXDEV)
        return -errno;
    /* Another file system: an atomic copy (common/), then the source goes. */
    int result = ospc_copy_file(source, destination);
    if (result == 0)
        unlink(source);
    return result;
}

int osprey_remove_tree(const char *path)
{
    DIR *directory = opendir(path);
    if (directory == NULL)
        return -errno;
    int result = 0;
    struct dirent *entry;
    while ((entry = readdir(directory)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        char child[PATH_MAX];
        if (snprintf(child, sizeof child, "%s/%s", path, entry->d_name) >= (int)sizeof child) {
            result = -ENAMETOOLONG;
            continue;
        }
        struct stat info;
        if (lstat(child, &info) == 0 && S_ISDIR(info.st_mode)) {
            int removed = osprey_remove_tree(child);
            if (removed != 0)
                result = removed;
        } else if (unlink(child) != 0 && errno != ENOENT) {
            result = -errno;
        }
    }
    closedir(directory);
    if (rmdir(path) != 0 && result == 0)
        result = -errno;
    return result;
}

int osprey_make_run_lock(const char *scratch)
{
    char lock[PATH_MAX + sizeof OSP_RUN_LOCK + 2];
    snprintf(lock, sizeof lock, "%s/%s", scratch, OSP_RUN_LOCK);
    int fd = open(lock, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    close(fd);
    return 0;
}

/* How long a collector re-parented to us may stay stopped before we stop waiting for it (ms),
 * as the program's exit does (shim/README.md, "The exit's wait for its collector"). */
#define STOPPED_COLLECTOR_MS 1000

/* A collector of the run that is our child (re-parented to us: we are the run's subreaper)
 * and has been stopped (SIGSTOP) at every look for STOPPED_COLLECTOR_MS: its pid, else 0.
 * `watch` keeps the first look at a stop. Nothing reaped: a stopped child stays ours, its pid
 * not taken by another while we look at its name. */
struct stop_watch {
    pid_t pid;
    int64_t since_ms;
};
static pid_t collector_stopped(struct stop_watch *watch, int64_t now_ms)
{
    siginfo_t info;
    memset(&info, 0, sizeof info);
    char path[64], comm[32] = "";
    if (waitid(P_ALL, 0, &info, WSTOPPED | WNOHANG | WNOWAIT) == 0 && info.si_pid > 0) {
        snprintf(path, sizeof path, "/proc/%d/comm", (int)info.si_pid);
        FILE *f = fopen(path, "re");
        if (f != NULL) {
            if (fgets(comm, sizeof comm, f) == NULL)
                comm[0] = '\0';
            fclose(f);
        }
    }
    if (strcmp(comm, "ospreyd\n") != 0) {
        watch->pid = 0;
        return 0;
    }
    if (watch->pid != info.si_pid) {
        watch->pid = info.si_pid;
        watch->since_ms = now_ms;
    }
    return now_ms - watch->since_ms >= STOPPED_COLLECTOR_MS ? watch->pid : 0;
}

int osprey_wait_for_collectors(const char *scratch, int timeout_ms, pid_t *stopped)
{
    char lock[PATH_MAX + sizeof OSP_RUN_LOCK + 2];
    snprintf(lock, sizeof lock, "%s/%s", scratch, OSP_RUN_LOCK);
    int fd = ospc_open_shared(lock, O_RDONLY, 0, geteuid());
    if (fd < 0)
        return 0; /* no lock (or not ours), nothing to wait for */
    const int step_ms = 20;
    int result = -ETIMEDOUT;
    struct stop_watch watch = {0, 0};
    *stopped = 0;
    for (int waited = 0; waited <= timeout_ms; waited += step_ms) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            result = 0;
            break;
        }
        /* No reaping here: a collector re-parented to us lets go of the lock as it exits, and
         * under --duration the program, our child, runs on and is waited for later. */
        if ((*stopped = collector_stopped(&watch, waited)) != 0) {
            result = OSPREY_COLLECTOR_STOPPED;
            break;
        }
        struct timespec pause = {.tv_sec = 0, .tv_nsec = step_ms * 1000000L};
        nanosleep(&pause, NULL);
    }
    close(fd);
    return result;
}

int osprey_wait_for_file(const char *path, int timeout_ms, pid_t *stopped)
{
    const int step_ms = 20;
    struct stop_watch watch = {0, 0};
    *stopped = 0;
    for (int waited = 0;; waited += step_ms) {
        if (access(path, F_OK) == 0)
            return 0;
        /* Reap whatever was re-parented to us; once nothing is left, nobody can still be
         * writing the file. */
        int status;
        pid_t reaped;
        while ((reaped = waitpid(-1, &status, WNOHANG)) > 0)
            ;
        if (reaped < 0 && errno == ECHILD)
            return access(path, F_OK) == 0 ? 0 : -ENOENT;
        if ((*stopped = collector_stopped(&watch, waited)) != 0)
            return OSPREY_COLLECTOR_STOPPED;
        if (waited >= timeout_ms)
            return -ETIMEDOUT;
        struct timespec pause = {.tv_sec = 0, .tv_nsec = step_ms * 1000000L};
        nanosleep(&pause, NULL);
    }
}
