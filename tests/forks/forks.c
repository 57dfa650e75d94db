/* forks.c — a program whose work is done by forked children, for tests/e2e-forks.sh.
 *
 *   forks workers   two workers burn CPU in functions of their own (0.4 s in work_a, ending
 *                   with exit; 0.3 s in work_b, ending with _exit), work_a's worker forks a
 *                   grandchild (0.2 s in work_grandchild), a third sleeps 0.3 s in
 *                   nanosleep, a fourth execs /bin/true, a fifth ends at once; the parent
 *                   burns 0.1 s in work_parent and exits with status 3.
 *   forks prefork   a pre-fork server: the parent listens on a loopback port, forks two
 *                   workers that accept connections and answer each request after 10 ms of
 *                   CPU in serve_request, sends 40 requests itself, then one "q" to each
 *                   (a worker that takes one ends) and exits 0.
 *   forks orphan    the parent forks a child that burns 0.3 s in work_orphan and exits at
 *                   once, without waiting for it.
 *   forks daemon    daemonizes as daemon(3) does: a child forks a grandchild and ends at
 *                   once; the grandchild burns 0.3 s in work_daemon; the parent ends after
 *                   the child.
 *   forks many      600 children of 3 ms CPU each in work_short, 20 at a time, half ending
 *                   with exit, half with _exit; the parent
 *                   says the CPU its children used (RUSAGE_CHILDREN) as "children".
 *   forks lowfd     RLIMIT_NOFILE 8, then a child burns 0.3 s in work_a; the parent waits.
 *   forks setuid    (as root) a worker becomes nobody (setgid, setuid) and forks a child that
 *                   burns 0.5 s in work_b; the parent burns 0.1 s in work_parent, waits.
 *   forks setsid    daemonizes with a double fork and setsid: the daemon says its pid at once,
 *                   burns 0.2 s in work_daemon and sleeps 30 s (the test kills it); the
 *                   parent ends once the middle process has.
 *   forks daemons   daemonizes 4 times in a row, as daemon(3) with a double fork does: a child
 *                   calls setsid, forks a grandchild and ends at once (by _exit, and every
 *                   other time by the exit_group system call, no exit handler of any library
 *                   run); each grandchild burns 0.1 s in work_daemon and says "daemon"; the
 *                   parent burns 0.1 s in work_parent first and ends once every grandchild
 *                   has said so (a pipe).
 *   forks setsid-worker  a worker as PostgreSQL forks its backends: it calls setsid, burns
 *                   1.5 s in work_b; the parent waits for it.
 *   forks setsid-orphan  a child calls setsid, says its pid, burns 0.3 s in work_daemon and
 *                   sleeps 30 s (the test kills it); the parent ends once the child's work is
 *                   done (a pipe), without waiting for it: the child outlives it, reparented.
 *   forks clone3    a child made by calling the clone3 system call directly (syscall(2))
 *                   burns 0.3 s in work_b; the parent waits for it.
 *   forks burn      burns 1.5 s in work_parent, alone (e2e-forks-hardening's flood).
 *   forks escape    runs /bin/true twice where the profiler cannot follow: posix_spawn with
 *                   an empty environment, and a forked child's execve with OSPREY_PROFILE
 *                   kept but LD_PRELOAD dropped.
 * Each line on stdout names a process and what it did: "ROLE PID CPU_SECONDS".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile double sink;

/* Burn `seconds` of this process's CPU time. */
static void burn(double seconds)
{
    double end = cpu_seconds() + seconds;
    while (cpu_seconds() < end)
        for (int i = 0; i < 20000; i++)
            sink += i * 0.5;
}

/* WORKER(name): a function of its own that burns its argument's seconds, so that the profile
 * names it. */
#define WORKER(name)                                                                               \
    __attribute__((noinline)) static void name(double s)                                           \
    {                                                                                              \
        burn(s);                                                                                   \
    }
WORKER(work_a)
WORKER(work_b)
WORKER(work_grandchild)
WORKER(work_parent)
WORKER(work_orphan)
WORKER(work_daemon)
WORKER(work_short)

__attribute__((noinline)) static void serve_request(void)
{
    burn(0.010);
}
static void say(const char *role)
{
    printf("%s %d %.4f\n", role, (int)getpid(), cpu_seconds());
    fflush(stdout);
}

/* A child that burns `seconds` in `work`, says it is `role` and exits; its pid. */
static pid_t fork_to(void (*work)(double), double seconds, const char *role)
{
    pid_t child = fork();
    if (child == 0) {
        work(seconds);
        say(role);
        exit(0);
    }
    return child;
}

static int workers(void)
{
    pid_t a = fork();
    if (a == 0) {
        pid_t g = fork_to(work_grandchild, 0.2, "grandchild");
        work_a(0.4);
        waitpid(g, NULL, 0);
        say("worker_a");
        exit(0);
    }
    pid_t b = fork();
    if (b == 0) {
        work_b(0.3);
        say("worker_b");
        _exit(0);
    }
    pid_t s = fork();
    if (s == 0) {
        struct timespec nap = {0, 300000000}, t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        nanosleep(&nap, NULL);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        char role[48]; /* what it slept, its wait for a CPU once woken included */
        snprintf(role, sizeof role, "sleeper(%.4f)",
                 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        say(role);
        exit(0);
    }
    pid_t e = fork();
    if (e == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    pid_t q = fork();
    if (q == 0)
        _exit(0);
    printf("execer %d 0\nquick %d 0\n", (int)e, (int)q);
    work_parent(0.1);
    while (wait(NULL) > 0)
        ;
    say("parent");
    return 3;
}

/* Serve until a request says "q" (a signal would race with accept). */
static void worker_loop(int listener)
{
    int served = 0;
    for (;;) {
        int c = accept(listener, NULL, NULL);
        if (c < 0)
            continue;
        char buf[16];
        ssize_t n = read(c, buf, sizeof buf);
        if (n > 0 && buf[0] == 'q') {
            close(c);
            break;
        }
        if (n > 0) {
            serve_request();
            served++;
            if (write(c, "ok", 2) != 2)
                served--;
        }
        close(c);
    }
    char role[32];
    snprintf(role, sizeof role, "server_worker(%d)", served);
    say(role);
    exit(0);
}

static int prefork(void)
{
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(listener, 64) != 0 || getsockname(listener, (struct sockaddr *)&addr, &len) != 0) {
        perror("forks: listen");
        return 1;
    }
    pid_t w[2];
    for (int i = 0; i < 2; i++) {
        w[i] = fork();
        if (w[i] == 0)
            worker_loop(listener);
    }
    for (int i = 0; i < 42; i++) {
        int c = socket(AF_INET, SOCK_STREAM, 0);
        char reply[4];
        const char *request = i < 40 ? "go" : "q";
        if (c < 0 || connect(c, (struct sockaddr *)&addr, sizeof addr) != 0 ||
            write(c, request, 2) != 2 || (i < 40 && read(c, reply, sizeof reply) != 2)) {
            perror("forks: request");
            return 1;
        }
        close(c);
    }
    for (int i = 0; i < 2; i++)
        waitpid(w[i], NULL, 0);
    say("master");
    return 0;
}

static int many(void)
{
    int running = 0;
    for (int i = 0; i < 600; i++) {
        if (running == 20 && wait(NULL) > 0)
            running--;
        pid_t c = fork();
        if (c == 0) {
            work_short(0.003);
            if (i % 2)
                _exit(0);
            exit(0);
        }
        running += c > 0;
    }
    while (wait(NULL) > 0)
        ;
    struct rusage children;
    getrusage(RUSAGE_CHILDREN, &children);
    printf("children %d %.4f\n", (int)getpid(),
           (double)children.ru_utime.tv_sec + children.ru_utime.tv_usec / 1e6 +
               (double)children.ru_stime.tv_sec + children.ru_stime.tv_usec / 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "workers") == 0)
        return workers();
    if (argc == 2 && strcmp(argv[1], "prefork") == 0)
        return prefork();
    if (argc == 2 && strcmp(argv[1], "escape") == 0) {
        char *args[] = {"true", NULL}, *empty[] = {"PATH=/usr/bin:/bin", NULL};
        pid_t spawned;
        if (posix_spawn(&spawned, "/bin/true", NULL, NULL, args, empty) != 0)
            return 1;
        waitpid(spawned, NULL, 0);
        pid_t child = fork();
        if (child == 0) {
            static char profile[4200];
            snprintf(profile, sizeof profile, "OSPREY_PROFILE=%s", getenv("OSPREY_PROFILE"));
            char *kept[] = {profile, NULL};
            execve("/bin/true", args, kept);
            _exit(127);
        }
        waitpid(child, NULL, 0);
        printf("spawned %d\nexecd %d\n", (int)spawned, (int)child);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "daemon") == 0) {
        pid_t middle = fork();
        if (middle == 0) {
            if (fork() == 0) {
                work_daemon(0.3);
                say("daemon");
                exit(0);
            }
            _exit(0);
        }
        waitpid(middle, NULL, 0);
        say("parent");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "many") == 0)
        return many();
    if (argc == 2 && strcmp(argv[1], "lowfd") == 0) {
        struct rlimit eight = {8, 8};
        if (setrlimit(RLIMIT_NOFILE, &eight) != 0)
            return 1;
        pid_t child = fork_to(work_a, 0.3, "child");
        waitpid(child, NULL, 0);
        say("parent");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "setuid") == 0) {
        pid_t worker = fork();
        if (worker == 0) {
            if (setgid(65534) != 0 || setuid(65534) != 0)
                _exit(1);
            pid_t child = fork_to(work_b, 0.5, "child");
            waitpid(child, NULL, 0);
            say("worker");
            exit(0);
        }
        work_parent(0.1);
        int status = 1;
        waitpid(worker, &status, 0);
        say("parent");
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    if (argc == 2 && strcmp(argv[1], "setsid") == 0) {
        pid_t middle = fork();
        if (middle == 0) {
            setsid();
            if (fork() == 0) {
                say("daemon");
                work_daemon(0.2);
                sleep(30);
                exit(0);
            }
            _exit(0);
        }
        waitpid(middle, NULL, 0);
        say("parent");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "daemons") == 0) {
        int done[2];
        if (pipe(done) != 0)
            return 1;
        work_parent(0.1);
        for (int round = 0; round < 4; round++) {
            pid_t middle = fork();
            if (middle == 0) {
                setsid();
                if (fork() == 0) {
                    close(done[0]);
                    work_daemon(0.1);
                    say("daemon");
                    char byte = 'd';
                    if (write(done[1], &byte, 1) != 1)
                        _exit(1);
                    exit(0);
                }
                if (round % 2 == 1)
                    syscall(SYS_exit_group, 0);
                _exit(0);
            }
            waitpid(middle, NULL, 0);
        }
        close(done[1]);
        char byte;
        for (int said = 0; said < 4;) {
            ssize_t got = read(done[0], &byte, 1);
            if (got == 1)
                said++;
            else if (got == 0 || errno != EINTR)
                break;
        }
        say("parent");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "setsid-worker") == 0) {
        pid_t worker = fork();
        if (worker == 0) {
            setsid();
            work_b(1.5);
            say("worker");
            exit(0);
        }
        waitpid(worker, NULL, 0);
        say("parent");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "setsid-orphan") == 0) {
        int done[2];
        if (pipe(done) != 0)
            return 1;
        if (fork() == 0) {
            setsid();
            say("daemon");
            work_daemon(0.3);
            close(done[1]); /* the parent ends once the work is done, however loaded */
            sleep(30);
            exit(0);
        }
        close(done[1]);
        char byte;
        while (read(done[0], &byte, 1) < 0 && errno == EINTR) {
        }
        say("parent");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "clone3") == 0) {
        struct clone_args args = {.exit_signal = SIGCHLD};
        long child = syscall(SYS_clone3, &args, sizeof args);
        if (child == 0) {
            work_b(0.3);
            say("child");
            exit(0);
        }
        if (child < 0) { /* a kernel before 5.3: as a fork */
            child = fork();
            if (child == 0) {
                work_b(0.3);
                say("child");
                exit(0);
            }
        }
        waitpid((pid_t)child, NULL, 0);
        say("parent");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "burn") == 0) {
        work_parent(1.5);
        say("parent");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "orphan") == 0) {
        if (fork() == 0) {
            work_orphan(0.3);
            say("orphan");
            exit(0);
        }
        say("parent");
        return 0;
    }
    fprintf(
        stderr,
        "usage: forks workers|prefork|orphan|daemon|daemons|many|lowfd|setuid|setsid|setsid-worker|"
        "setsid-orphan|clone3|burn|escape\n");
    return 2;
}
