/* top.c — `osprey top PID`: ospreyd attaches to the process in its streaming mode
 * (`--attach-pid PID --stream`, daemon/stream.c) with its stdout on a pipe to us; we keep the
 * last seconds of samples (top-window.c), symbolize each new address once (top-symbols.c) and
 * redraw the screen about once a second until `q`, Ctrl-C, or the process ends.
 *
 * The terminal: stdin in non-canonical mode without echo (termios; signals stay on, so Ctrl-C
 * is a SIGINT we turn into quitting), the alternate screen with the cursor hidden, so that
 * leaving puts back the shell's screen as it was; every change undone on the way out, by any
 * way out: SIGINT, SIGTERM, SIGHUP and SIGQUIT (Ctrl-\) quit through the loop; SIGTSTP
 * (Ctrl-Z) gives the terminal back, stops, and on SIGCONT takes it again and redraws; a fatal
 * signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) restores it in its handler, from what
 * was saved before the first change, and dies of the same signal; exit() restores it too.
 * Without a terminal on stdout: a plain snapshot per refresh, no escapes.
 * Signals reach the loop through a pipe, read with the others in one poll(2).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ospc.h"
#include "osprey_commands.h"
#include "osprey_top.h"

#define STDERR_KEPT 2048 /* of ospreyd's own lines, said once the screen is gone */

static int signal_pipe[2] = {-1, -1};

/* Async-signal-safe: write(2) only (POSIX lists it), errno kept. */
static void on_signal(int signal_number)
{
    int saved = errno;
    unsigned char byte = (unsigned char)signal_number;
    if (write(signal_pipe[1], &byte, 1) < 0) {
        /* a full pipe already holds a wake-up */
    }
    errno = saved;
}

struct terminal {
    int active; /* the screen and termios are ours: undo on the way out */
    int keys;   /* stdin is a terminal we read keys from */
    struct termios saved;
    size_t width, height;
    int color;
};

/* What a fatal signal's handler undoes: set before the terminal is changed, cleared once it
 * is given back (sig_atomic_t: read in the handler). */
static struct termios fatal_saved;
static volatile sig_atomic_t fatal_screen, fatal_keys;

#define SCREEN_LEAVE "\033[0m\033[?25h\033[?1049l" /* colours off, cursor, the shell's screen */

/* Async-signal-safe: write(2), tcsetattr(3) (POSIX lists both), sigaction, raise. */
static void on_fatal(int signal_number)
{
    if (fatal_screen && write(STDOUT_FILENO, SCREEN_LEAVE, sizeof SCREEN_LEAVE - 1) < 0) {
        /* nothing more to do for a terminal gone */
    }
    if (fatal_keys)
        tcsetattr(STDIN_FILENO, TCSANOW, &fatal_saved);
    fatal_screen = fatal_keys = 0;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigaction(signal_number, &action, NULL);
    raise(signal_number); /* delivered when this handler returns: the same death */
}

static void terminal_size(struct terminal *t)
{
    struct winsize ws;
    t->width = 100;
    t->height = 40;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        t->width = ws.ws_col;
        t->height = ws.ws_row;
        return;
    }
    const char *columns = getenv("COLUMNS"), *lines = getenv("LINES");
    if (columns != NULL && atoi(columns) > 0)
        t->width = (size_t)atoi(columns);
    if (lines != NULL && atoi(lines) > 0)
        t->height = (size_t)atoi(lines);
}

static void terminal_enter(struct terminal *t)
{
    const char *no_color = getenv("NO_COLOR");
    int tty = isatty(STDOUT_FILENO);
    t->color = tty && (no_color == NULL || no_color[0] == '\0');
    terminal_size(t);
    if (!tty)
        return;
    /* In the background (after Ctrl-Z and `bg`) the terminal is not ours to change. */
    if (tcgetpgrp(STDOUT_FILENO) != getpgrp())
        return;
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
        struct termios raw = t->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        fatal_saved = t->saved;
        fatal_keys = 1;
        t->keys = tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0;
        fatal_keys = t->keys;
    }
    fatal_screen = 1;
    fputs("\033[?1049h\033[?25l\033[H\033[2J", stdout); /* alternate screen, no cursor */
    fflush(stdout);
    t->active = 1;
}

static void terminal_leave(struct terminal *t)
{
    if (!t->active)
        return;
    fputs(SCREEN_LEAVE, stdout);
    fflush(stdout);
    fatal_screen = 0;
    if (t->keys)
        tcsetattr(STDIN_FILENO, TCSAFLUSH, &t->saved);
    fatal_keys = 0;
    t->active = t->keys = 0;
}

static struct terminal *exit_terminal; /* what exit() gives back */

static void leave_at_exit(void)
{
    if (exit_terminal != NULL)
        terminal_leave(exit_terminal);
}

/* Ctrl-Z: the terminal given back, then stopped as the default action would stop us (our
 * handler back once we run again); the SIGCONT that wakes us takes the terminal again. */
static void suspend(struct terminal *t)
{
    terminal_leave(t);
    struct sigaction action, ours;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigaction(SIGTSTP, &action, &ours);
    raise(SIGTSTP); /* stopped here until SIGCONT */
    sigaction(SIGTSTP, &ours, NULL);
}

struct top {
    const struct osprey_options *options;
    int32_t pid;
    char command[64];
    uint32_t rate_hz;
    struct terminal terminal;
    struct osprey_top_window window;
    struct osprey_top_symbols *symbols;
    uint64_t now_ns; /* the stream's clock: the last flush */
    int ended;
    enum osprey_top_view view, before_help; /* what the keys chose */
    enum osprey_top_sort sort;
    int paused; /* the window and its clock stay as they were; the stream is still read */
    char how[64];
    char pending[1 << 16]; /* a line of the stream not whole yet */
    size_t pending_length;
    char errors[STDERR_KEPT];
    size_t errors_length;
};

/* Draw the screen once: the window at the stream's clock, into one write. */
static void draw(struct top *top)
{
    osprey_top_symbols_resolve(top->symbols);
    osprey_top_window_advance(&top->window, top->now_ns);
    const char *const *names, *const *locations;
    size_t functions = osprey_top_symbols_functions(top->symbols, &names, &locations);
    struct osprey_top_row *rows = NULL;
    size_t row_count = 0;
    struct osprey_top_screen screen = {.pid = top->pid,
                                       .command = top->command,
                                       .rate_hz = top->rate_hz,
                                       .names = names,
                                       .locations = locations,
                                       .width = top->terminal.width,
                                       .height = top->terminal.height,
                                       .color = top->terminal.color,
                                       .line_end = top->terminal.active ? "\033[K\n" : "\n",
                                       .hint = top->terminal.keys ? "  (? help, q quits)" : NULL,
                                       .view = top->view,
                                       .sort = top->sort,
                                       .paused = top->paused};
    if (osprey_top_aggregate(&top->window, top->now_ns, functions, osprey_top_symbols_stack,
                             top->symbols, &rows, &row_count, &screen.totals) != 0)
        return;
    osprey_top_sort(rows, row_count, top->sort);
    struct osprey_top_thread_row *threads = NULL;
    if (top->view == OSPREY_TOP_THREADS &&
        osprey_top_threads(&top->window, top->now_ns, functions, osprey_top_symbols_stack,
                           top->symbols, &threads, &screen.thread_row_count) != 0) {
        free(rows);
        return;
    }
    screen.threads = threads;
    screen.thread_count =
        osprey_top_symbols_threads(top->symbols, &screen.tids, &screen.thread_labels);
    uint64_t covered = top->now_ns < top->window.span_ns ? top->now_ns : top->window.span_ns;
    screen.seconds = (double)covered / 1e9;
    screen.rows = rows;
    screen.row_count = row_count;
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    if (out != NULL) {
        if (top->terminal.active)
            fputs("\033[H", out);
        osprey_top_render(out, &screen);
        if (top->terminal.active)
            fputs("\033[J", out);
        else
            fputs("\n", out);
        fclose(out);
        fwrite(text, 1, length, stdout);
        fflush(stdout);
    }
    free(text);
    free(rows);
    free(threads);
}

/* A key of the view (the help's keys in tools/top-window.c). 1: quit. */
static int key(struct top *top, char k)
{
    if (top->view == OSPREY_TOP_HELP && k != 'q' && k != 'Q' && k != 3) {
        top->view = top->before_help; /* any key closes the help */
        return 0;
    }
    switch (k) {
    case 'q':
    case 'Q':
    case 3: /* Ctrl-C */
        return 1;
    case 's':
    case '1':
        top->view = OSPREY_TOP_FUNCTIONS;
        top->sort = OSPREY_TOP_BY_SELF;
        break;
    case 'c':
    case '2':
        top->view = OSPREY_TOP_FUNCTIONS;
        top->sort = OSPREY_TOP_BY_TOTAL;
        break;
    case 'f':
        top->view = OSPREY_TOP_FUNCTIONS;
        break;
    case 't':
        top->view = top->view == OSPREY_TOP_THREADS ? OSPREY_TOP_FUNCTIONS : OSPREY_TOP_THREADS;
        break;
    case ' ':
    case 'p':
        top->paused = !top->paused;
        break;
    case '?':
    case 'h':
        top->before_help = top->view;
        top->view = OSPREY_TOP_HELP;
        break;
    default:
        break;
    }
    return 0;
}

/* Read what the stream has; split it into lines. 0, or 1 at its end. */
static int read_stream(struct top *top, int fd)
{
    ssize_t n =
        read(fd, top->pending + top->pending_length, sizeof top->pending - 1 - top->pending_length);
    if (n < 0)
        return errno == EINTR || errno == EAGAIN ? 0 : 1;
    if (n == 0)
        return 1;
    top->pending_length += (size_t)n;
    top->pending[top->pending_length] = '\0';
    char *start = top->pending, *newline;
    while ((newline = memchr(start, '\n', top->pending_length - (size_t)(start - top->pending)))) {
        *newline = '\0';
        if (osprey_top_symbols_line(top->symbols, start, top->paused ? NULL : &top->window,
                                    top->paused ? NULL : &top->now_ns, &top->ended, top->how,
                                    sizeof top->how) != 0)
            return 1; /* out of memory */
        start = newline + 1;
    }
    size_t rest = top->pending_length - (size_t)(start - top->pending);
    if (rest == sizeof top->pending - 1)
        rest = 0; /* a line longer than any ospreyd writes: dropped */
    memmove(top->pending, start, rest);
    top->pending_length = rest;
    return 0;
}

static void read_errors(struct top *top, int fd)
{
    char buffer[512];
    ssize_t n = read(fd, buffer, sizeof buffer);
    for (ssize_t i = 0; i < n && top->errors_length + 1 < sizeof top->errors; i++)
        top->errors[top->errors_length++] = buffer[i];
    top->errors[top->errors_length] = '\0';
}

pid_t osprey_top_start_daemon(const char *daemon, const struct osprey_options *options,
                              double duration, int *stream, int *errors)
{
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0)
        return -errno;
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        return -errno;
    }
    char rate[16];
    snprintf(rate, sizeof rate, "%u", options->frequency != 0 ? options->frequency : 997u);
    char seconds[32];
    snprintf(seconds, sizeof seconds, "%g", duration);
    char *argv[] = {(char *)daemon,
                    "--attach-pid",
                    (char *)options->file,
                    "--stream",
                    "--rate",
                    rate,
                    duration > 0 ? "--duration" : NULL,
                    seconds,
                    NULL};
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0)
            dup2(null, STDIN_FILENO);
        dup2(out[1], STDOUT_FILENO);
        dup2(err[1], STDERR_FILENO);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        execv(daemon, argv);
        dprintf(STDERR_FILENO, "osprey: cannot run %s: %s\n", daemon, strerror(errno));
        _exit(127);
    }
    int e = errno;
    close(out[1]);
    close(err[1]);
    if (pid < 0) {
        close(out[0]);
        close(err[0]);
        return -e;
    }
    *stream = out[0];
    *errors = err[0];
    return pid;
}

/* The first line of the stream: ospreyd attached (1), or it could not (0: its stderr says
 * why). */
static int wait_attached(struct top *top, int stream)
{
    while (top->pending_length < sizeof top->pending - 1) {
        ssize_t n = read(stream, top->pending + top->pending_length, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return 0;
        if (top->pending[top->pending_length] == '\n') {
            top->pending[top->pending_length] = '\0';
            unsigned version, rate;
            int pid;
            int ok = sscanf(top->pending, "osprey-stream %u %d %u", &version, &pid, &rate) == 3;
            top->rate_hz = ok ? rate : 997u;
            top->pending_length = 0;
            return ok;
        }
        top->pending_length++;
    }
    return 0;
}

void osprey_top_command(int32_t pid, int32_t tid, char *command, size_t size)
{
    char path[96];
    if (tid > 0)
        snprintf(path, sizeof path, "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    else
        snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
    snprintf(command, size, "?");
    FILE *f = fopen(path, "re");
    if (f != NULL && fgets(command, (int)size, f) != NULL)
        command[strcspn(command, "\n")] = '\0';
    if (f != NULL)
        fclose(f);
}

void osprey_top_say_end(int32_t pid, const char *command, const char *how)
{
    int code;
    if (sscanf(how, "exited %d", &code) == 1)
        fprintf(stderr, "osprey: process %d (%s) exited with status %d\n", (int)pid, command, code);
    else if (sscanf(how, "killed %d", &code) == 1)
        fprintf(stderr, "osprey: process %d (%s) was killed by signal %d (%s)\n", (int)pid, command,
                code, strsignal(code));
    else
        fprintf(stderr, "osprey: process %d (%s) ended\n", (int)pid, command);
}

int osprey_top(const struct osprey_options *options, const char *daemon)
{
    static struct top top; /* its line buffer is large */
    memset(&top, 0, sizeof top);
    top.options = options;
    top.pid = (int32_t)atoi(options->file);
    top.window.span_ns = OSPREY_TOP_WINDOW_NS;
    top.symbols = osprey_top_symbols_new();
    if (top.symbols != NULL)
        osprey_top_symbols_target(top.symbols, top.pid);
    if (top.symbols == NULL || pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "osprey: %s\n", strerror(ENOMEM));
        return OSPREY_EXIT_FAILURE;
    }
    osprey_top_command(top.pid, 0, top.command, sizeof top.command);
    int stream = -1, errors = -1;
    pid_t child = osprey_top_start_daemon(daemon, options, 0, &stream, &errors);
    if (child < 0) {
        fprintf(stderr, "osprey: cannot run %s: %s\n", daemon, strerror((int)-child));
        return OSPREY_EXIT_FAILURE;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    static const int quits[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof quits / sizeof quits[0]; i++)
        sigaction(quits[i], &action, NULL);
    sigaction(SIGWINCH, &action, NULL);
    sigaction(SIGTSTP, &action, NULL);
    sigaction(SIGCONT, &action, NULL);
    signal(SIGPIPE, SIG_IGN);
    action.sa_handler = on_fatal;
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
        sigaction(fatal[i], &action, NULL);
    exit_terminal = &top.terminal;
    atexit(leave_at_exit);

    int attached = wait_attached(&top, stream);
    /* The view's terminal, when stdout is one: given back on Ctrl-Z, taken again on SIGCONT. */
    int screen = attached && isatty(STDOUT_FILENO);
    if (attached)
        terminal_enter(&top.terminal);
    double interval = options->interval > 0 ? options->interval : 1.0;
    /* The first screen once the first batch is in (ospreyd flushes every 250 ms). */
    uint64_t next_draw = ospc_clock_ns(CLOCK_MONOTONIC) + 300000000u;
    int quit = !attached, stream_open = attached, errors_open = 1;
    while (!quit && stream_open && !top.ended) {
        uint64_t now = ospc_clock_ns(CLOCK_MONOTONIC);
        if (now >= next_draw) {
            if (!screen || top.terminal.active) /* not over the shell while in the background */
                draw(&top);
            next_draw = now + (uint64_t)(interval * 1e9);
        }
        struct pollfd fds[4] = {{stream, POLLIN, 0},
                                {signal_pipe[0], POLLIN, 0},
                                {errors_open ? errors : -1, POLLIN, 0},
                                {top.terminal.keys ? STDIN_FILENO : -1, POLLIN, 0}};
        int timeout = (int)((next_draw - now) / 1000000u) + 1;
        if (poll(fds, 4, timeout) < 0 && errno != EINTR)
            break;
        if (fds[0].revents != 0 && read_stream(&top, stream) != 0)
            stream_open = 0;
        if (fds[2].revents != 0) {
            size_t before = top.errors_length;
            read_errors(&top, errors);
            errors_open = top.errors_length > before || (fds[2].revents & POLLIN);
        }
        if (fds[1].revents != 0) {
            unsigned char signals[16];
            ssize_t n = read(signal_pipe[0], signals, sizeof signals);
            for (ssize_t i = 0; i < n; i++) {
                if (signals[i] == SIGWINCH) {
                    terminal_size(&top.terminal);
                    next_draw = 0;
                } else if (signals[i] == SIGTSTP) {
                    suspend(&top.terminal);
                } else if (signals[i] == SIGCONT) {
                    if (screen) { /* the shell may have reset the modes meanwhile: set again */
                        terminal_leave(&top.terminal);
                        terminal_enter(&top.terminal);
                    }
                    next_draw = 0;
                } else {
                    quit = 1;
                }
            }
        }
        if (fds[3].revents != 0) {
            char keys[32];
            ssize_t n = read(STDIN_FILENO, keys, sizeof keys);
            for (ssize_t i = 0; i < n && !quit; i++)
                quit = key(&top, keys[i]);
            next_draw = 0; /* what the key changed, at once */
            if (n == 0)
                top.terminal.keys = 0; /* end of input: Ctrl-C still quits */
        }
    }
    terminal_leave(&top.terminal);
    exit_terminal = NULL;
    if (!top.ended)
        kill(child, SIGTERM); /* it closes its events and ends: nothing is left in the process */
    /* What it still says (one line when it could not attach), to its end. */
    for (ssize_t n = 1; n > 0;) {
        char buffer[4096];
        n = read(stream, buffer, sizeof buffer);
    }
    read_errors(&top, errors);
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    close(stream);
    close(errors);
    if (top.errors_length > 0)
        fputs(top.errors, stderr);
    int exit_code = 0;
    if (!attached)
        exit_code = OSPREY_EXIT_FAILURE; /* ospreyd's line said why */
    else if (top.ended)
        osprey_top_say_end(top.pid, top.command, top.how);
    else if (!quit && !stream_open)
        fprintf(stderr, "osprey: ospreyd ended unexpectedly (%s)\n",
                WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "its stream closed");
    if (!quit && !stream_open && !top.ended)
        exit_code = OSPREY_EXIT_FAILURE;
    osprey_top_window_free(&top.window);
    osprey_top_symbols_free(top.symbols);
    close(signal_pipe[0]);
    close(signal_pipe[1]);
    return exit_code;
}

/* osprey top PID: the ospreyd beside us attached, the view run. */
int osprey_cmd_top(const struct osprey_options *options)
{
    struct osprey_paths paths;
    const char *daemon = osprey_find_daemon(&paths);
    return daemon != NULL ? osprey_top(options, daemon) : OSPREY_EXIT_USAGE;
}
