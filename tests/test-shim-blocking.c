/* test-shim-blocking.c — every blocking call a C program makes through libc that the kernel
 * does not restart after a signal handler, each entered right after a busy spell (when a
 * signal of the profiler's is most likely in flight), counting the calls that fail with EINTR
 * or return early. Built with -O2 -D_FORTIFY_SOURCE=2 (Debian's packaging default), so poll
 * and ppoll become __poll_chk and __ppoll_chk.
 *
 *   test-shim-blocking ROUNDS [FD]   prints "<call> <early>" per call, then "early <total>";
 *                                    FD: a socket with SO_RCVTIMEO inherited from the caller
 */

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ipc.h>
#include <sys/select.h>
#include <sys/sem.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#define SPIN_ROUNDS 200
#include "spin.h"

#define WAIT_MS 3

static struct timespec wait_ts(void)
{
    return (struct timespec){0, WAIT_MS * 1000000L};
}

static struct timespec deadline_ts(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_nsec += WAIT_MS * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static volatile int nfds_one = 1; /* not a constant: the fortified poll checks it at run time */
static int epfd, semid, sock_fd;
static sem_t sem;

/* Each returns the call's result; the caller checks the time it took. Timeouts are results:
 * what counts as early is EINTR, or coming back before WAIT_MS. */
static int call_poll(void)
{
    struct pollfd fds[2] = {{.fd = -1}, {.fd = -1}};
    return poll(fds, (nfds_t)nfds_one, WAIT_MS);
}
static int call_ppoll(void)
{
    struct pollfd fds[2] = {{.fd = -1}, {.fd = -1}};
    struct timespec t = wait_ts();
    return ppoll(fds, (nfds_t)nfds_one, &t, NULL);
}
static int call_raw_nanosleep(void)
{
    struct timespec t = wait_ts();
    return (int)syscall(SYS_nanosleep, &t, NULL);
}
static int call_thrd_sleep(void)
{
    struct timespec t = wait_ts();
    return thrd_sleep(&t, NULL) == 0 ? 0 : -1;
}
static int call_semtimedop(void)
{
    struct sembuf op = {0, -1, 0};
    struct timespec t = wait_ts();
    return semtimedop(semid, &op, 1, &t);
}
static int call_sem_timedwait(void)
{
    struct timespec t = deadline_ts(CLOCK_REALTIME);
    return sem_timedwait(&sem, &t);
}
static int call_sigtimedwait(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR2);
    struct timespec t = wait_ts();
    return sigtimedwait(&set, NULL, &t);
}
static int call_epoll_pwait2(void)
{
    struct epoll_event ev;
    struct timespec t = wait_ts();
    return epoll_pwait2(epfd, &ev, 1, &t, NULL);
}
static int call_epoll_wait(void)
{
    struct epoll_event ev;
    return epoll_wait(epfd, &ev, 1, WAIT_MS);
}
static int call_recv_timeout(void)
{
    char c;
    return (int)recv(sock_fd, &c, 1, 0);
}
/* read and write on sockets with a timeout: the kernel's socket calls behind them return EINTR
 * as recv does. The length is not a constant, so the fortified read is __read_chk. */
static volatile size_t one_byte = 1;
static int send_fd, dup_fd, inherited_fd;
static int call_read_timeout(void)
{
    char c[4];
    return (int)read(sock_fd, c, one_byte);
}
static int call_read_dup_timeout(void)
{
    struct iovec v = {&(char){0}, 1};
    return (int)readv(dup_fd, &v, 1);
}
static int call_read_inherited_timeout(void)
{
    char c[4];
    return (int)read(inherited_fd, c, one_byte);
}
static int call_write_timeout(void)
{
    char c = 0;
    return (int)write(send_fd, &c, 1); /* its peer's buffer is full: blocks, then EAGAIN */
}
static int call_select(void)
{
    struct timeval t = {0, WAIT_MS * 1000};
    return select(0, NULL, NULL, NULL, &t);
}
static int call_clock_nanosleep(void)
{
    struct timespec t = wait_ts();
    return clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL);
}

struct blocking_call {
    const char *name;
    int (*call)(void);
    int jiffies; /* its timeout counts kernel ticks (SO_RCVTIMEO): only EINTR tells */
};

static const struct blocking_call calls[] = {
    {"poll", call_poll, 0},
    {"ppoll", call_ppoll, 0},
    {"syscall-nanosleep", call_raw_nanosleep, 0},
    {"clock_nanosleep", call_clock_nanosleep, 0},
    {"thrd_sleep", call_thrd_sleep, 0},
    {"semtimedop", call_semtimedop, 0},
    {"sem_timedwait", call_sem_timedwait, 0},
    {"sigtimedwait", call_sigtimedwait, 0},
    {"epoll_wait", call_epoll_wait, 0},
    {"epoll_pwait2", call_epoll_pwait2, 0},
    {"recv-SO_RCVTIMEO", call_recv_timeout, 1},
    {"read-SO_RCVTIMEO", call_read_timeout, 1},
    {"readv-dup-SO_RCVTIMEO", call_read_dup_timeout, 1},
    {"read-inherited-SO_RCVTIMEO", call_read_inherited_timeout, 1},
    {"write-SO_SNDTIMEO", call_write_timeout, 1},
    {"select", call_select, 0},
};

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    epfd = epoll_create1(0);
    semid = semget(IPC_PRIVATE, 1, 0600);
    sem_init(&sem, 0, 0);
    sigset_t usr2;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, NULL);
    int pair[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, pair);
    sock_fd = pair[0];
    struct timeval rcv = {0, WAIT_MS * 1000};
    setsockopt(sock_fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv);
    dup_fd = dup(sock_fd);
    inherited_fd = argc > 2 ? atoi(argv[2]) : sock_fd;
    int full[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, full);
    send_fd = full[0];
    setsockopt(send_fd, SOL_SOCKET, SO_SNDTIMEO, &rcv, sizeof rcv);
    static char chunk[4096];
    while (send(send_fd, chunk, sizeof chunk, MSG_DONTWAIT) > 0)
        ; /* the peer never reads: its buffer stays full */
    int total = 0;
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        int early = 0;
        for (int r = 0; r < rounds; r++) {
            spin_for(2000000); /* running right up to the wait */
            uint64_t t0 = now_ns();
            errno = 0;
            int rc = calls[c].call();
            uint64_t took = now_ns() - t0;
            int short_wait = !calls[c].jiffies && took < (uint64_t)WAIT_MS * 1000000u * 9 / 10;
            if ((rc < 0 && errno == EINTR) || short_wait)
                early++;
        }
        printf("%s %d\n", calls[c].name, early);
        total += early;
    }
    printf("early %d\n", total);
    semctl(semid, 0, IPC_RMID);
    return 0;
}
