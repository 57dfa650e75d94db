/* top-dump.c — `osprey dump PID`: the current stack of every thread of a running process,
 * printed once (py-spy dump).
 *
 * How it gets the stacks: through the attach machinery, as `osprey top` does — ospreyd's live
 * stream (`--attach-pid PID --stream --duration S`, daemon/stream.c: the kernel's perf events,
 * nothing loaded into the process, the process never stopped) for S seconds (default 1) — and
 * each thread's last sample is its stack: where it ran (a cpu-clock sample) or where it
 * blocked (the sample of a switch out). A thread blocked the whole time gives no sample: the
 * kernel samples no thread that does not run, and reading its registers would take ptrace,
 * which stops the thread and interrupts its system call — the program would not be left as it
 * was. Such a thread is named with what /proc says of it without stopping it: its state, the
 * system call it waits in and the function that made the call (the user pc of
 * /proc/PID/task/TID/syscall, symbolized), the kernel's wait channel; its whole stack is not
 * known, and one line on stderr says which threads those are.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "osprey_commands.h"
#include "osprey_top.h"

#define DUMP_SECONDS 1.0 /* how long to look, without --duration */
#define ERRORS_KEPT  2048

static volatile sig_atomic_t daemon_pid;

/* Async-signal-safe: kill(2) only (POSIX lists it), errno kept. Ctrl-C stops the look early:
 * ospreyd ends its stream and what came is printed. */
static void on_stop(int signal_number)
{
    (void)signal_number;
    int saved = errno;
    if (daemon_pid > 0)
        kill((pid_t)daemon_pid, SIGTERM);
    errno = saved;
}

/* A system call a thread waits in, by its x86_64 number (the attach is x86_64 only). */
static const char *syscall_name(long number)
{
#if defined(__x86_64__)
    static const struct {
        long number;
        const char *name;
    } names[] = {{0, "read"},
                 {1, "write"},
                 {7, "poll"},
                 {23, "select"},
                 {34, "pause"},
                 {35, "nanosleep"},
                 {42, "connect"},
                 {43, "accept"},
                 {44, "sendto"},
                 {45, "recvfrom"},
                 {46, "sendmsg"},
                 {47, "recvmsg"},
                 {61, "wait4"},
                 {65, "semop"},
                 {70, "msgrcv"},
                 {72, "fcntl"},
                 {73, "flock"},
                 {74, "fsync"},
                 {128, "rt_sigtimedwait"},
                 {130, "rt_sigsuspend"},
                 {202, "futex"},
                 {208, "io_getevents"},
                 {230, "clock_nanosleep"},
                 {232, "epoll_wait"},
                 {247, "waitid"},
                 {270, "pselect6"},
                 {271, "ppoll"},
                 {281, "epoll_pwait"},
                 {288, "accept4"},
                 {441, "epoll_pwait2"},
                 {449, "futex_waitv"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].number == number)
            return names[i].name;
#endif
    (void)number;
    return NULL;
}

/* One line of a /proc file of the thread, newline cut; "" when it cannot be read. */
static void task_file(int32_t pid, int32_t tid, const char *name, char *text, size_t size)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%d/task/%d/%s", (int)pid, (int)tid, name);
    text[0] = '\0';
    FILE *f = fopen(path, "re");
    if (f != NULL && fgets(text, (int)size, f) == NULL)
        text[0] = '\0';
    if (f != NULL)
        fclose(f);
    text[strcspn(text, "\n")] = '\0';
}

static const char *state_name(char state)
{
    switch (state) {
    case 'R':
        return "runnable";
    case 'S':
        return "sleeping";
    case 'D':
        return "in uninterruptible sleep";
    case 'T':
        return "stopped";
    case 't':
        return "stopped by a debugger";
    case 'Z':
        return "a zombie";
    default:
        return "in state ?";
    }
}

struct dump_thread {
    int32_t tid;
    int64_t index;          /* the stream's thread index; -1: it gave no sample */
    uint64_t last_t[2];     /* its last sample of each state (0 on-CPU, 1 waiting) */
    uint32_t last_stack[2]; /* and their stacks */
    uint8_t state;          /* where it spent most of the look: 0 on-CPU, 1 waiting */
    uint64_t periods[2];    /* on-CPU and waiting, in sampling periods */
    uint64_t blocks;        /* switches out sampled in the look */
    long syscall;           /* without a sample: the call it waits in (-1: none, -2: running) */
    uint64_t call_pc;       /* and the user pc of that call */
    int64_t pc_stack;       /* the stack made of call_pc, -1: none */
    char label[64];         /* its name */
    char run_state;         /* /proc's state letter */
    char wchan[64];         /* the kernel's wait channel, "" when none */
};

static int by_tid(const void *x, const void *y)
{
    const struct dump_thread *a = x, *b = y;
    return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* The process's threads now (/proc/PID/task) that are not in threads[0..count) yet, added.
 * Returns the new count, or -ENOMEM. */
static long add_tasks(int32_t pid, struct dump_thread **threads, size_t count, size_t *cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir == NULL)
        return (long)count; /* ended: the stream's threads are all there is */
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        int32_t tid = (int32_t)atoi(entry->d_name);
        if (tid <= 0)
            continue;
        size_t i = 0;
        while (i < count && (*threads)[i].tid != tid)
            i++;
        if (i < count)
            continue;
        if (count == *cap) {
            size_t grown_cap = *cap > 0 ? *cap * 2 : 16;
            struct dump_thread *grown = realloc(*threads, grown_cap * sizeof *grown);
            if (grown == NULL) {
                closedir(dir);
                return -ENOMEM;
            }
            *threads = grown;
            *cap = grown_cap;
        }
        struct dump_thread *t = &(*threads)[count++];
        memset(t, 0, sizeof *t);
        t->tid = tid;
        t->index = -1;
        t->pc_stack = -1;
        t->syscall = -1;
    }
    closedir(dir);
    return (long)count;
}

/* What /proc says of a thread that gave no sample; its call's pc given to the symbols as a
 * stack of one frame. */
static void describe_blocked(int32_t pid, struct dump_thread *t, struct osprey_top_symbols *symbols)
{
    osprey_top_command(pid, t->tid, t->label, sizeof t->label);
    char text[512];
    task_file(pid, t->tid, "stat", text, sizeof text);
    const char *close = strrchr(text, ')');
    t->run_state = close != NULL && close[1] == ' ' ? close[2] : '?';
    task_file(pid, t->tid, "wchan", t->wchan, sizeof t->wchan);
    if (strcmp(t->wchan, "0") == 0)
        t->wchan[0] = '\0';
    task_file(pid, t->tid, "syscall", text, sizeof text);
    if (strncmp(text, "running", 7) == 0) {
        t->syscall = -2;
        return;
    }
    /* "NR ARG1 ... ARG6 SP PC", or "-1 SP PC" when blocked outside a call */
    char *fields[9];
    size_t count = 0;
    for (char *field = strtok(text, " "); field != NULL && count < 9; field = strtok(NULL, " "))
        fields[count++] = field;
    if (count < 3)
        return;
    t->syscall = strtol(fields[0], NULL, 10);
    t->call_pc = strtoull(fields[count - 1], NULL, 16);
    if (t->syscall < 0 || t->call_pc == 0)
        return;
    char line[64];
    size_t index = osprey_top_symbols_stack_count(symbols);
    snprintf(line, sizeof line, "stack %zu %" PRIx64, index, t->call_pc);
    int ended = 0;
    char how[8];
    if (osprey_top_symbols_line(symbols, line, NULL, NULL, &ended, how, sizeof how) == 0 &&
        osprey_top_symbols_stack_count(symbols) == index + 1)
        t->pc_stack = (int64_t)index;
}

/* A stack's frames, leaf first: "    function (location)", or the function alone where it has
 * no location. */
static void print_frames(const struct osprey_top_symbols *symbols, uint32_t stack)
{
    const char *const *names, *const *locations;
    size_t function_count = osprey_top_symbols_functions(symbols, &names, &locations);
    const uint32_t *functions = NULL;
    size_t depth = osprey_top_symbols_stack((void *)symbols, stack, &functions);
    if (depth == 0)
        printf("    (no frames known)\n");
    for (size_t k = 0; k < depth; k++)
        if (functions[k] < function_count) {
            const char *location = locations[functions[k]];
            if (location[0] != '\0')
                printf("    %s (%s)\n", names[functions[k]], location);
            else /* the marker of frames a deep walk left out: no code, no location */
                printf("    %s\n", names[functions[k]]);
        }
}

int osprey_dump(const struct osprey_options *options, const char *daemon)
{
    int32_t pid = (int32_t)atoi(options->file);
    char command[64];
    osprey_top_command(pid, 0, command, sizeof command);
    double seconds = options->duration > 0 ? options->duration : DUMP_SECONDS;
    struct osprey_top_symbols *symbols = osprey_top_symbols_new();
    if (symbols != NULL)
        osprey_top_symbols_target(symbols, pid);
    struct osprey_top_window window = {.span_ns = UINT64_MAX};
    if (symbols == NULL) {
        fprintf(stderr, "osprey: %s\n", strerror(ENOMEM));
        return OSPREY_EXIT_FAILURE;
    }
    int stream_fd = -1, errors_fd = -1;
    pid_t child = osprey_top_start_daemon(daemon, options, seconds, &stream_fd, &errors_fd);
    if (child < 0) {
        fprintf(stderr, "osprey: cannot run %s: %s\n", daemon, strerror((int)-child));
        osprey_top_symbols_free(symbols);
        return OSPREY_EXIT_FAILURE;
    }
    daemon_pid = child;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_stop;
    action.sa_flags = SA_RESTART; /* the stream is read on to its end */
    sigaction(SIGINT, &action, NULL);
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGHUP, &action, NULL);

    /* The stream to its end: ospreyd stops when the look's seconds are over. */
    FILE *stream = fdopen(stream_fd, "r");
    char *line = NULL;
    size_t line_cap = 0;
    unsigned version = 0, rate = 997;
    int stream_pid = 0, attached = 0, ended = 0, failed = 0, gone;
    char how[64] = "";
    uint64_t now_ns = 0;
    if (stream != NULL && getline(&line, &line_cap, stream) > 0)
        attached = sscanf(line, "osprey-stream %u %d %u", &version, &stream_pid, &rate) == 3;
    while (attached && !failed && getline(&line, &line_cap, stream) > 0) {
        line[strcspn(line, "\n")] = '\0';
        failed =
            osprey_top_symbols_line(symbols, line, &window, &now_ns, &ended, how, sizeof how) != 0;
    }
    free(line);
    if (stream != NULL)
        fclose(stream);
    else
        close(stream_fd);
    char errors[ERRORS_KEPT];
    size_t errors_length = 0;
    for (ssize_t n = 1; n > 0;) {
        char buffer[512];
        n = read(errors_fd, buffer, sizeof buffer);
        for (ssize_t i = 0; i < n && errors_length + 1 < sizeof errors; i++)
            errors[errors_length++] = buffer[i];
    }
    errors[errors_length] = '\0';
    close(errors_fd);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    daemon_pid = 0;
    fputs(errors, stderr); /* ospreyd's lines: why it could not attach, or a warning */
    if (!attached || failed) {
        if (failed)
            fprintf(stderr, "osprey: %s\n", strerror(ENOMEM));
        osprey_top_window_free(&window);
        osprey_top_symbols_free(symbols);
        return OSPREY_EXIT_FAILURE;
    }

    gone = ended && strncmp(how, "stopped", 7) != 0; /* not the look's end: the process's */

    /* Each thread of the stream: its last sample. */
    const int32_t *tids;
    const char *const *labels;
    size_t stream_threads = osprey_top_symbols_threads(symbols, &tids, &labels);
    size_t count = 0, cap = stream_threads + 16;
    struct dump_thread *threads = calloc(cap, sizeof *threads);
    if (threads == NULL) {
        fprintf(stderr, "osprey: %s\n", strerror(ENOMEM));
        osprey_top_window_free(&window);
        osprey_top_symbols_free(symbols);
        return OSPREY_EXIT_FAILURE;
    }
    for (size_t i = 0; i < stream_threads; i++, count++) {
        threads[i] = (struct dump_thread){.tid = tids[i], .index = (int64_t)i, .pc_stack = -1};
        osprey_top_command(pid, tids[i], threads[i].label, sizeof threads[i].label);
        if (strcmp(threads[i].label, "?") == 0) /* gone since: the stream's name */
            snprintf(threads[i].label, sizeof threads[i].label, "%s", labels[i]);
    }
    for (size_t i = 0; i < window.count; i++) {
        const struct osprey_top_sample *s = &window.samples[i];
        if (s->thread >= stream_threads)
            continue;
        struct dump_thread *t = &threads[s->thread];
        t->periods[s->state] += s->weight;
        t->blocks += s->state;
        if (s->t_ns >= t->last_t[s->state]) {
            t->last_t[s->state] = s->t_ns;
            t->last_stack[s->state] = s->stack;
        }
    }
    /* Its stack: the last of the state it was in most (a thread that blocks 99% of the time
     * is shown where it blocks, though it ran last). */
    for (size_t i = 0; i < count; i++)
        threads[i].state = threads[i].periods[1] > threads[i].periods[0];
    /* The threads that gave no sample, from /proc, as they are now. */
    long all = gone ? (long)count : add_tasks(pid, &threads, count, &cap);
    if (all < 0) {
        fprintf(stderr, "osprey: %s\n", strerror(ENOMEM));
        all = (long)count;
    }
    for (size_t i = 0; i < (size_t)all; i++)
        if (threads[i].index < 0 || threads[i].periods[0] + threads[i].periods[1] == 0) {
            threads[i].index = -1;
            describe_blocked(pid, &threads[i], symbols);
        }
    osprey_top_symbols_resolve(symbols);
    qsort(threads, (size_t)all, sizeof *threads, by_tid);

    /* The stream's clock: the seconds sampled, the attach's start left out. */
    double looked = now_ns > 0 ? (double)now_ns / 1e9 : seconds;
    printf("Process %d (%s): %ld thread%s, sampled %.1f s at %u Hz\n", (int)pid, command, all,
           all == 1 ? "" : "s", looked, rate);
    size_t unknown = 0;
    char names[512] = "";
    for (size_t i = 0; i < (size_t)all; i++) {
        struct dump_thread *t = &threads[i];
        printf("\nThread %d (%s)", (int)t->tid, t->label);
        if (t->index >= 0) {
            if (t->state == 0)
                printf(": running (on-CPU %" PRIu64 " of %" PRIu64
                       " sampled periods in %.1f s); its "
                       "last sample:\n",
                       t->periods[0], t->periods[0] + t->periods[1], looked);
            else
                printf(": waiting (blocked %" PRIu64 " time%s, %" PRIu64 " of %" PRIu64
                       " sampled periods in %.1f s); where it last blocked:\n",
                       t->blocks, t->blocks == 1 ? "" : "s", t->periods[1],
                       t->periods[0] + t->periods[1], looked);
            print_frames(symbols, t->last_stack[t->state]);
            continue;
        }
        unknown++;
        size_t used = strlen(names);
        snprintf(names + used, sizeof names - used, "%s%d (%s)", used > 0 ? ", " : "", (int)t->tid,
                 t->label);
        printf(": %s, no sample in %.1f s", state_name(t->run_state), looked);
        const char *call = syscall_name(t->syscall);
        if (t->syscall >= 0 && call != NULL)
            printf(", in %s(2)", call);
        else if (t->syscall >= 0)
            printf(", in system call %ld", t->syscall);
        if (t->wchan[0] != '\0')
            printf(" (kernel: %s)", t->wchan);
        if (t->pc_stack >= 0) {
            printf("; the call made by:\n");
            print_frames(symbols, (uint32_t)t->pc_stack);
        } else {
            printf("\n");
        }
    }
    fflush(stdout);
    if (unknown > 0)
        fprintf(stderr,
                "osprey: %zu thread%s of %ld did not run in %.1f s, so %s whole stack%s not "
                "known (only the call each waits in): %s\n",
                unknown, unknown == 1 ? "" : "s", all, looked, unknown == 1 ? "its" : "their",
                unknown == 1 ? " is" : "s are", names);
    if (gone)
        osprey_top_say_end(pid, command, how);
    free(threads);
    osprey_top_window_free(&window);
    osprey_top_symbols_free(symbols);
    return 0;
}

/* osprey dump PID: the ospreyd beside us attached, each thread's stack printed. */
int osprey_cmd_dump(const struct osprey_options *options)
{
    struct osprey_paths paths;
    const char *daemon = osprey_find_daemon(&paths);
    return daemon != NULL ? osprey_dump(options, daemon) : OSPREY_EXIT_USAGE;
}
