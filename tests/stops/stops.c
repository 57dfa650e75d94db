/* stops.c — programs whose profile ends before they do (tests/e2e-stops.sh).
 *   stops wait:    a thread waits in pthread_cond_wait while main runs 3 s, then is woken
 *   stops sandbox: main runs 0.3 s, enters a seccomp filter that refuses execve and kill
 *                  (EPERM), runs 0.3 s more and exits 7
 *   stops spin:    main runs 0.3 s (e2e-comm: run through a link of another name)
 *   stops strict:  main runs 0.2 s, enters a filter that kills on the calls the profiler makes
 *                  and this program does not (a strict allow-list's way), then starts a thread,
 *                  forks a child and execs `stops spin`: each runs 0.1-0.3 s (e2e-sandbox)
 *   stops hold:    main runs 0.2 s, says "ready", waits until a byte (or EOF) comes on stdin,
 *                  runs 0.1 s more, says "done" and exits 5 (e2e-stops: its collector killed
 *                  or stopped meanwhile) */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t woken = PTHREAD_COND_INITIALIZER;
static int go;

static __attribute__((noinline)) void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    while (!go)
        pthread_cond_wait(&woken, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static volatile unsigned long sink;

static __attribute__((noinline)) void spin(double seconds)
{
    double end = now() + seconds;
    while (now() < end)
        for (int i = 0; i < 10000; i++)
            sink += (unsigned long)i;
}

static int sandbox(void)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_kill, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
    };
    struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("stops: seccomp");
        return 1;
    }
    return 0;
}

static void *spinner(void *arg)
{
    (void)arg;
    spin(0.1);
    return NULL;
}

/* Every call of the shim's list that this program makes none of kills it. */
static int strict(char **argv)
{
    static const long killed[] = {SYS_timer_create,     SYS_timer_settime, SYS_timer_delete,
                                  SYS_process_vm_readv, SYS_kill,          SYS_tgkill,
                                  SYS_memfd_create,     SYS_socket,        SYS_perf_event_open,
                                  SYS_getrusage,        SYS_sigaltstack,   SYS_rt_sigtimedwait,
                                  SYS_getpid,           SYS_getppid,       SYS_getsid,
                                  SYS_sched_getaffinity};
    enum { COUNT = sizeof killed / sizeof killed[0] };
    struct sock_filter code[COUNT + 3];
    unsigned n = 0;
    code[n++] =
        (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
    for (unsigned i = 0; i < COUNT; i++)
        code[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)killed[i],
                                                 COUNT - i, 0);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    code[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
    struct sock_fprog prog = {.len = (unsigned short)n, .filter = code};
    spin(0.2);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
        perror("stops: seccomp");
        return 1;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, spinner, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    pid_t child = fork();
    if (child == 0) {
        spin(0.1);
        _exit(3);
    }
    int status = 0;
    if (child < 0 || waitpid(child, &status, 0) != child)
        return 1;
    printf("child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
    fflush(stdout);
    char *spin_argv[] = {argv[0], "spin", NULL};
    execv(argv[0], spin_argv);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "wait") == 0) {
        pthread_t t;
        pthread_create(&t, NULL, waiter, NULL);
        spin(3.0);
        pthread_mutex_lock(&lock);
        go = 1;
        pthread_cond_signal(&woken);
        pthread_mutex_unlock(&lock);
        pthread_join(t, NULL);
        puts("woken");
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "sandbox") == 0) {
        spin(0.3);
        if (sandbox() != 0)
            return 1;
        spin(0.3);
        puts("sandboxed");
        return 7;
    }
    if (argc == 2 && strcmp(argv[1], "strict") == 0)
        return strict(argv);
    if (argc == 2 && strcmp(argv[1], "spin") == 0) {
        spin(0.3);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "hold") == 0) {
        spin(0.2);
        puts("ready");
        fflush(stdout);
        char byte;
        while (read(0, &byte, 1) < 0 && errno == EINTR) {
        }
        spin(0.1);
        puts("done");
        return 5;
    }
    fprintf(stderr, "usage: stops wait|sandbox|spin|strict|hold\n");
    return 2;
}
