/* loop.c — one round: a read of one byte from /dev/zero and an uncontended mutex locked and
 * unlocked; ROUNDS rounds (argv[1], default 200000) in rounds(), the function callgrind counts.
 * With argv[2] "mutex", a round is the mutex alone (bench/waits/mutex.sh); with "pipe", a byte
 * written to a pipe the program made and read back, neither call blocking (bench/waits/
 * cost.sh's callgrind rows). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int pipe_fds[2];

__attribute__((noinline)) long pipe_rounds(long n)
{
    char c = 'x';
    long got = 0;
    for (long i = 0; i < n; i++) {
        if (write(pipe_fds[1], &c, 1) == 1)
            got += read(pipe_fds[0], &c, 1);
    }
    return got;
}

__attribute__((noinline)) long rounds(int fd, long n, int mutex_only)
{
    char c;
    long got = 0;
    if (pipe_fds[0] != pipe_fds[1])
        return pipe_rounds(n);
    for (long i = 0; i < n; i++) {
        got += mutex_only ? 1 : read(fd, &c, 1);
        pthread_mutex_lock(&lock);
        pthread_mutex_unlock(&lock);
    }
    return got;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) {
        perror("/dev/zero");
        return 1;
    }
    if (argc > 2 && strcmp(argv[2], "pipe") == 0 && pipe(pipe_fds) != 0) {
        perror("pipe");
        return 1;
    }
    long got = rounds(fd, n, argc > 2 && strcmp(argv[2], "mutex") == 0);
    close(fd);
    return got == n ? 0 : 1;
}
