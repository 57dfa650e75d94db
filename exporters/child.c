/* child.c — the tools the symbolizer backends run (llvm-symbolizer, atos) as child processes:
 * started with posix_spawn, stdin on a socket (a dead tool is EPIPE, not SIGPIPE in the
 * caller), stdout on a pipe read a line at a time, stderr on /dev/null, bounded
 * in memory and CPU time, killed when silent too long, always reaped. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "symbolize_internal.h"

extern char **environ;

/* How long a tool may take to exit once its input is closed. */
#define CHILD_EXIT_MS 10000
/* The tool's limits (see ospx__child_bound). */
#define CHILD_MEMORY_BASE (UINT64_C(2) << 30)
#define CHILD_CPU_SECONDS 600

/* Start argv[0] with stdout on a pipe, stderr on /dev/null and stdin on a socket (with_input)
 * or /dev/null. Returns 0 or a negative errno. */
int ospx__child_start(char *const argv[], int with_input, struct ospx__child *process)
{
    int output_pipe[2], input_pair[2] = {-1, -1};
    if (pipe2(output_pipe, O_CLOEXEC) != 0)
        return -errno;
    /* A socket rather than a pipe for the tool's stdin: send(MSG_NOSIGNAL) then reports a
     * dead tool as EPIPE instead of raising SIGPIPE in the caller's process. */
    if (with_input && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, input_pair) != 0) {
        int code = errno;
        close(output_pipe[0]);
        close(output_pipe[1]);
        return -code;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (with_input)
        posix_spawn_file_actions_adddup2(&actions, input_pair[1], STDIN_FILENO);
    else
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, output_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawn(&process->pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(output_pipe[1]);
    if (with_input)
        close(input_pair[1]);
    if (rc != 0) {
        close(output_pipe[0]);
        if (with_input)
            close(input_pair[0]);
        return -rc;
    }
    process->input = input_pair[0];
    process->output = output_pipe[0];
    return 0;
}

/* Close the pipes and reap the child; kill it first when `kill_it`, or when it has not
 * exited (its stdout reaching end of file) a while after its input closed: a tool must never
 * hang the caller. */
void ospx__child_finish(struct ospx__child *process, int kill_it)
{
    if (process->input >= 0)
        close(process->input);
    struct pollfd poll_fd = {.fd = process->output, .events = POLLIN};
    char discard[4096];
    while (!kill_it) {
        int ready = poll(&poll_fd, 1, CHILD_EXIT_MS);
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready <= 0)
            kill_it = 1;
        else if (read(process->output, discard, sizeof discard) <= 0)
            break;
    }
    close(process->output);
    if (kill_it)
        kill(process->pid, SIGKILL);
    while (waitpid(process->pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* Wait until fd has something to read. Returns 1, or 0 when the tool stayed silent too long. */
int ospx__child_wait_readable(int fd)
{
    struct pollfd poll_fd = {.fd = fd, .events = POLLIN};
    int ready;
    while ((ready = poll(&poll_fd, 1, OSPX_CHILD_SILENCE_MS)) < 0 && errno == EINTR)
        ;
    return ready > 0;
}

/* Read what is available from fd into the buffer. Returns bytes read, 0 at end of file, or a
 * negative errno. */
ssize_t ospx__line_buffer_fill(struct ospx__line_buffer *buffer, int fd)
{
    if (buffer->capacity - buffer->length < 4096) {
        size_t capacity = buffer->capacity > 0 ? buffer->capacity * 2 : 65536;
        char *data = realloc(buffer->data, capacity);
        if (data == NULL)
            return -ENOMEM;
        buffer->data = data;
        buffer->capacity = capacity;
    }
    ssize_t got = read(fd, buffer->data + buffer->length, buffer->capacity - buffer->length - 1);
    if (got < 0)
        return errno == EINTR || errno == EAGAIN ? 1 : -errno;
    buffer->length += (size_t)got;
    return got;
}

/* Take the first complete line out of the buffer into line (NUL-terminated, without its
 * newline). Returns 1 when a line was taken, 0 when none is complete yet. */
int ospx__line_buffer_take(struct ospx__line_buffer *buffer, char **line, size_t *consumed)
{
    char *start = buffer->data + *consumed;
    char *newline = memchr(start, '\n', buffer->length - *consumed);
    if (newline == NULL)
        return 0;
    *newline = '\0';
    *line = start;
    *consumed = (size_t)(newline - buffer->data) + 1;
    return 1;
}

/* Drop the consumed bytes from the front of the buffer. */
void ospx__line_buffer_compact(struct ospx__line_buffer *buffer, size_t *consumed)
{
    memmove(buffer->data, buffer->data + *consumed, buffer->length - *consumed);
    buffer->length -= *consumed;
    *consumed = 0;
}

/* Limits on a symbolizer process, so that no object, however odd, takes the machine: address
 * space CHILD_MEMORY_BASE plus four times the object (it maps the file and builds its
 * indexes beside it), and CHILD_CPU_SECONDS of CPU time. */
void ospx__child_bound(pid_t pid, off_t object_size)
{
    uint64_t memory = CHILD_MEMORY_BASE + 4 * (uint64_t)object_size;
    struct rlimit address_space = {memory, memory};
    struct rlimit cpu = {CHILD_CPU_SECONDS, CHILD_CPU_SECONDS};
    /* Best effort: without the limits the silence timeout still ends a hung tool. */
    (void)prlimit(pid, RLIMIT_AS, &address_space, NULL);
    (void)prlimit(pid, RLIMIT_CPU, &cpu, NULL);
}
