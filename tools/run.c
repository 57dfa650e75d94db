/* run.c — starting children for the `osprey` command: clang for a C file, then the program
 * itself. The child inherits stdin, stdout and stderr; its exit status comes back unchanged
 * (128+N for a signal, as a shell reports it). While we wait, SIGINT and SIGTERM aimed at
 * this process are forwarded to the child, so an interrupted program still exits through
 * its own handlers and the profile up to that point is kept. Also here: the environment the
 * program runs with (OSPREY_PROFILE, OSPREY_DAEMON, LD_PRELOAD).
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ospc.h"
#include "osprey_cli.h"

/* The child signals are forwarded to; 0 when none. Written only by osprey_run_child on the
 * main thread, read by forward_signal, which runs on that same thread (the CLI has no other
 * threads) and only while the signals are unblocked after the store: relaxed ordering is
 * enough because the signal mask change orders the store before any delivery. */
static atomic_int forward_pid;
/* The last child started, for osprey_last_child. */
static pid_t last_child;

/* Async-signal-safe: only kill(2) (POSIX lists it as async-signal-safe) and errno. */
static void forward_signal(int signal_number, siginfo_t *info, void *context)
{
    (void)context;
    int saved_errno = errno;
    pid_t pid = (pid_t)atomic_load_explicit(&forward_pid, memory_order_relaxed);
    /* si_code <= 0: sent by a process (kill, sigqueue, tkill). A terminal's Ctrl-C comes
     * from the kernel (SI_KERNEL) and has already reached the child's process group. */
    if (pid > 0 && info != NULL && info->si_code <= 0)
        kill(pid, signal_number);
    errno = saved_errno;
}

static const int forwarded_signals[] = {SIGINT, SIGTERM};
#define FORWARDED_COUNT (sizeof forwarded_signals / sizeof forwarded_signals[0])

int osprey_run_child(const char *path, char *const argv[], char *const envp[], int *wait_status)
{
    return osprey_run_child_until(path, argv, envp, wait_status, 0, NULL, NULL);
}

static double mono_seconds(void)
{
    return (double)ospc_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

int osprey_run_child_until(const char *path, char *const argv[], char *const envp[],
                           int *wait_status, double after_seconds, int (*at_deadline)(void *),
                           void *ctx)
{
    /* posix_spawn reports a failed exec on glibc, but not everywhere (under valgrind the
     * child just exits 127): the common failures are checked first. */
    if (access(path, X_OK) != 0)
        return -errno;
    sigset_t block, original_mask;
    sigemptyset(&block);
    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaddset(&block, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &original_mask);

    /* A signal we were started with ignored (a background job of a non-interactive shell)
     * stays ignored, for us and for the child, which inherits the disposition. */
    struct sigaction previous[FORWARDED_COUNT];
    sigset_t defaults;
    sigemptyset(&defaults);
    for (size_t i = 0; i < FORWARDED_COUNT; i++) {
        sigaction(forwarded_signals[i], NULL, &previous[i]);
        if (previous[i].sa_handler == SIG_IGN)
            continue;
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = forward_signal;
        action.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&action.sa_mask);
        sigaction(forwarded_signals[i], &action, NULL);
        sigaddset(&defaults, forwarded_signals[i]);
    }

    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setsigmask(&attributes, &original_mask);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    fflush(NULL); /* our buffered output must not come after the child's */
    pid_t pid;
    int spawn_error = posix_spawn(&pid, path, NULL, &attributes, argv, envp);
    posix_spawnattr_destroy(&attributes);

    int result = -spawn_error;
    if (spawn_error == 0) {
        atomic_store_explicit(&forward_pid, (int)pid, memory_order_relaxed);
        last_child = pid;
        sigprocmask(SIG_SETMASK, &original_mask, NULL);
        double deadline = at_deadline != NULL ? mono_seconds() + after_seconds : 0;
        for (;;) {
            int polling = at_deadline != NULL;
            pid_t waited = waitpid(pid, wait_status, polling ? WNOHANG : 0);
            if (waited == 0 && polling) { /* still running */
                if (mono_seconds() >= deadline && at_deadline(ctx) != 0)
                    at_deadline = NULL; /* done: wait for the program's own end */
                struct timespec step = {0, 20000000};
                nanosleep(&step, NULL);
                continue;
            }
            if (waited == pid)
                break;
            if (waited < 0 && errno != EINTR) {
                result = -errno;
                break;
            }
        }
        sigprocmask(SIG_BLOCK, &block, NULL);
        atomic_store_explicit(&forward_pid, 0, memory_order_relaxed);
    }

    for (size_t i = 0; i < FORWARDED_COUNT; i++)
        sigaction(forwarded_signals[i], &previous[i], NULL);
    sigprocmask(SIG_SETMASK, &original_mask, NULL);
    return result;
}

pid_t osprey_last_child(void)
{
    return last_child;
}

int osprey_exit_code(int wait_status)
{
    if (WIFEXITED(wait_status))
        return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status))
        return 128 + WTERMSIG(wait_status);
    return OSPREY_EXIT_FAILURE;
}

char **osprey_env_set(char *const envp[], const char *name, const char *value, int prepend)
{
    size_t name_length = strlen(name);
    size_t count = 0;
    while (envp[count] != NULL)
        count++;
    char **result = calloc(count + 2, sizeof *result);
    if (result == NULL)
        return NULL;
    const char *old_value = NULL;
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
        if (strncmp(envp[i], name, name_length) == 0 && envp[i][name_length] == '=') {
            old_value = envp[i] + name_length + 1;
            continue;
        }
        result[kept] = strdup(envp[i]);
        if (result[kept] == NULL)
            goto fail;
        kept++;
    }
    int length;
    if (prepend && old_value != NULL && *old_value != '\0')
        length = asprintf(&result[kept], "%s=%s:%s", name, value, old_value);
    else
        length = asprintf(&result[kept], "%s=%s", name, value);
    if (length < 0) {
        result[kept] = NULL;
        goto fail;
    }
    return result;
fail:
    osprey_env_free(result);
    return NULL;
}

void osprey_env_free(char **envp)
{
    if (envp == NULL)
        return;
    for (size_t i = 0; envp[i] != NULL; i++)
        free(envp[i]);
    free(envp);
}

int osprey_compile(enum osprey_file_kind kind, const char *source, const char *output,
                   const char *shim_archive, const char *include_dir, int *exit_code)
{
    const char *compiler = kind == OSPREY_FILE_CXX_SOURCE ? "clang++" : "clang";
    char include_flag[PATH_MAX + 3];
    snprintf(include_flag, sizeof include_flag, "-I%s", include_dir != NULL ? include_dir : ".");
    /* The profile build mode: optimized like a release, DWARF lines for the symbolizer, and
     * a frame pointer in every function, leaves included, so the sampler's frame-pointer
     * walk sees every caller. */
    const char *argv[32];
    size_t count = 0;
    argv[count++] = compiler;
    argv[count++] = "-O2";
    argv[count++] = "-g";
    argv[count++] = "-fno-omit-frame-pointer";
    argv[count++] = "-mno-omit-leaf-frame-pointer";
    argv[count++] = "-pthread";
    if (include_dir != NULL)
        argv[count++] = include_flag;
    argv[count++] = source;
    argv[count++] = "-o";
    argv[count++] = output;
    if (shim_archive != NULL) {
        /* The archive's constructor starts the profiler and its pthread_create wrapper
         * registers threads: nothing references them, so pull in every member. */
        argv[count++] = "-Wl,--whole-archive";
        argv[count++] = shim_archive;
        argv[count++] = "-Wl,--no-whole-archive";
        argv[count++] = "-ldl";
    }
    argv[count++] = "-pthread";
    argv[count++] = "-lm";
    argv[count] = NULL;

    /* posix_spawn needs a path, and "not installed" deserves its own message. */
    char clang_path[PATH_MAX];
    if (osprey_find_on_path(compiler, clang_path, sizeof clang_path) != 0)
        return -ENOENT;

    extern char **environ;
    int status;
    int result = osprey_run_child(clang_path, (char *const *)argv, environ, &status);
    if (result != 0)
        return result;
    *exit_code = osprey_exit_code(status);
    return 0;
}
