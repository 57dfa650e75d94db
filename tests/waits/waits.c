/* waits.c — programs whose waits are known by construction: each wait is bracketed by clock
 * reads and the program prints its own truth, one line per thread and site:
 *   truth SITE SECONDS WAITS
 * Cases (argv[1]):
 *   join    main joins a worker that computes for 2 s, with no work of its own first;
 *   sites   one thread waits on a condition variable (timed) at two sites, 0.6 s then 1.8 s;
 *   pipe    a reader blocks in read() on a pipe written every 10 ms, 150 times;
 *   nap     100 rounds of 50 us of work and a 15 ms nanosleep;
 *   mutex   3 threads take turns on a contended mutex, holding it 5 ms each time, 1.5 s (and
 *           each thread's own: thread_truth lock_site TID SECONDS WAITS);
 *   pingpong  a client sends a byte and waits for its echo, over and over for 1.5 s, on a
 *           socket with both timeouts set (as clients set them): two guarded calls, one after
 *           the other, 100,000 times a second and more;
 *   calls   20,000 rounds of a byte written to the program's own pipe and read back (neither
 *           call waits), then 200 timed waits of 1 ms on a condition variable nobody signals:
 *           what the shim's timing of such calls costs in system calls (e2e-waits-noperf).
 * Built without frame pointers, as distributions build. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile double sink;
__attribute__((noinline)) static void spin(double seconds)
{
    double end = now() + seconds;
    while (now() < end)
        for (int i = 0; i < 100; i++)
            sink = sink * 1.0000001 + 1.0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;

/* Wait on the condition variable (nobody signals it) for `seconds`; returns the time waited. */
static double cond_for(double seconds)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long ns = ts.tv_nsec + (long)((seconds - (double)(long)seconds) * 1e9);
    ts.tv_sec += (time_t)seconds + ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    double t0 = now();
    pthread_mutex_lock(&lock);
    while (pthread_cond_timedwait(&cond, &lock, &ts) == 0)
        ;
    pthread_mutex_unlock(&lock);
    return now() - t0;
}
__attribute__((noinline)) static double site_short(void)
{
    double w = cond_for(0.6);
    sink += 1; /* not a tail call: the site stays on the stack */
    return w;
}
__attribute__((noinline)) static double site_long(void)
{
    double w = cond_for(1.8);
    sink += 1;
    return w;
}

static void *busy(void *arg)
{
    spin(*(double *)arg);
    return NULL;
}

__attribute__((noinline)) static double join_site(pthread_t t)
{
    double t0 = now();
    pthread_join(t, NULL);
    double w = now() - t0;
    sink += 1;
    return w;
}

static int fds[2];
static void *writer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 150; i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        if (write(fds[1], "x", 1) != 1)
            perror("write");
    }
    close(fds[1]);
    return NULL;
}
__attribute__((noinline)) static double read_site(int *waits)
{
    char c;
    double waited = 0;
    for (;;) {
        double t0 = now();
        ssize_t n = read(fds[0], &c, 1);
        waited += now() - t0;
        if (n != 1)
            break;
        ++*waits;
    }
    sink += 1;
    return waited;
}

__attribute__((noinline)) static double nap_site(void)
{
    double waited = 0;
    for (int i = 0; i < 100; i++) {
        spin(50e-6);
        struct timespec ts = {0, 15000000};
        double t0 = now();
        nanosleep(&ts, NULL);
        waited += now() - t0;
    }
    sink += 1;
    return waited;
}

static pthread_mutex_t contended = PTHREAD_MUTEX_INITIALIZER;
static double mutex_end;
struct locker {
    double waited;
    int waits;
    pid_t tid;
};
__attribute__((noinline)) static void lock_site(struct locker *l)
{
    double t0 = now();
    pthread_mutex_lock(&contended);
    l->waited += now() - t0;
    l->waits++;
    sink += 1;
}
static void *locker(void *arg)
{
    struct locker *l = arg;
    l->tid = (pid_t)syscall(SYS_gettid);
    while (now() < mutex_end) {
        lock_site(l);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL); /* holds it 5 ms, off the CPU */
        pthread_mutex_unlock(&contended);
        sched_yield();
    }
    return NULL;
}

static int pair[2];
static void *echo(void *arg)
{
    (void)arg;
    char c;
    while (recv(pair[1], &c, 1, 0) == 1 && c != 'q')
        if (send(pair[1], &c, 1, 0) != 1)
            break;
    return NULL;
}
__attribute__((noinline)) static void send_site(char c)
{
    if (send(pair[0], &c, 1, 0) != 1)
        perror("send");
    sink += 1;
}
static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
/* The truth here is the time off the CPU: each wait is a few microseconds, and the kernel's
 * own work in recv is a good part of its wall time. */
__attribute__((noinline)) static double recv_site(int *waits)
{
    char c;
    double t0 = now(), c0 = cpu_now();
    if (recv(pair[0], &c, 1, 0) != 1)
        perror("recv");
    double off = (now() - t0) - (cpu_now() - c0);
    ++*waits;
    sink += 1;
    return off;
}
static void pingpong(void)
{
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0)
        exit(1);
    struct timeval limit = {5, 0};
    for (int i = 0; i < 2; i++) {
        setsockopt(pair[i], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
        setsockopt(pair[i], SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
    }
    pthread_t t;
    pthread_create(&t, NULL, echo, NULL);
    double end = now() + 1.5, waited = 0;
    int waits = 0;
    while (now() < end) {
        send_site('x');
        waited += recv_site(&waits);
    }
    send_site('q');
    pthread_join(t, NULL);
    /* Not a "truth" line: the kernel times a block from its switch out to its switch in, and
     * the shim's spans name short ones by sampling; e2e-waits checks the shares instead. */
    printf("offcpu recv_site %.6f %d\n", waited, waits);
}

static void calls(void)
{
    if (pipe(fds) != 0)
        exit(1);
    char c = 'x';
    long moved = 0;
    for (int i = 0; i < 20000; i++)
        if (write(fds[1], &c, 1) == 1)
            moved += read(fds[0], &c, 1);
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t never = PTHREAD_COND_INITIALIZER;
    pthread_mutex_lock(&m);
    for (int i = 0; i < 200; i++) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 1000000;
        if (until.tv_nsec >= 1000000000) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&never, &m, &until);
    }
    pthread_mutex_unlock(&m);
    printf("calls %ld\n", moved);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "join") == 0) {
        double d = 2.0;
        pthread_t t;
        pthread_create(&t, NULL, busy, &d);
        printf("truth join_site %.6f 1\n", join_site(t));
    } else if (strcmp(mode, "sites") == 0) {
        double a = site_short();
        double b = site_long();
        printf("truth site_short %.6f 1\ntruth site_long %.6f 1\n", a, b);
    } else if (strcmp(mode, "pipe") == 0) {
        if (pipe(fds) != 0)
            return 1;
        pthread_t t;
        pthread_create(&t, NULL, writer, NULL);
        int waits = 0;
        double w = read_site(&waits);
        pthread_join(t, NULL);
        printf("truth read_site %.6f %d\n", w, waits);
    } else if (strcmp(mode, "nap") == 0) {
        printf("truth nap_site %.6f 100\n", nap_site());
    } else if (strcmp(mode, "mutex") == 0) {
        mutex_end = now() + 1.5;
        pthread_t t[3];
        struct locker l[3] = {{0, 0, 0}};
        for (int i = 0; i < 3; i++)
            pthread_create(&t[i], NULL, locker, &l[i]);
        double total = 0;
        int waits = 0;
        for (int i = 0; i < 3; i++) {
            pthread_join(t[i], NULL);
            total += l[i].waited;
            waits += l[i].waits;
            printf("thread_truth lock_site %d %.6f %d\n", (int)l[i].tid, l[i].waited, l[i].waits);
        }
        printf("truth lock_site %.6f %d\n", total, waits);
    } else if (strcmp(mode, "pingpong") == 0) {
        pingpong();
    } else if (strcmp(mode, "calls") == 0) {
        calls();
    } else {
        fprintf(stderr, "usage: waits join|sites|pipe|nap|mutex|pingpong|calls\n");
        return 2;
    }
    return 0;
}
