/* waits.c — waits inside glibc, built without frame pointers: main joins a worker from
 * join_site, a consumer waits on a condition variable in consumer_wait, a reader blocks in
 * read() in read_site, a locker waits for a held mutex in lock_site. Each waiting stack must
 * reach its site and main (or the thread's start routine). */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER, held = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int ready, fds[2];
static volatile double sink;

static void spin(double seconds)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        for (int i = 0; i < 10000; i++)
            sink = sink * 1.0000001 + 1.0;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

__attribute__((noinline)) static void consumer_wait(void)
{
    pthread_mutex_lock(&lock);
    while (!ready)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static void *consumer(void *arg)
{
    (void)arg;
    consumer_wait();
    return NULL;
}

__attribute__((noinline)) static void read_site(void)
{
    char c;
    if (read(fds[0], &c, 1) != 1)
        perror("read");
}

static void *reader(void *arg)
{
    (void)arg;
    read_site();
    return NULL;
}

__attribute__((noinline)) static void lock_site(void)
{
    pthread_mutex_lock(&held);
    pthread_mutex_unlock(&held);
}

static void *locker(void *arg)
{
    (void)arg;
    lock_site();
    return NULL;
}

static void *worker(void *arg)
{
    (void)arg;
    spin(1.0);
    pthread_mutex_lock(&lock);
    ready = 1;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    if (write(fds[1], "x", 1) != 1)
        perror("write");
    pthread_mutex_unlock(&held);
    return NULL;
}

__attribute__((noinline)) static void join_site(pthread_t t)
{
    pthread_join(t, NULL);
    sink = 0; /* a call, not a jump: join_site keeps its frame */
}

int main(void)
{
    pthread_t w, c, r, l;
    if (pipe(fds) != 0)
        return 1;
    pthread_mutex_lock(&held); /* unlocked by the worker: locker waits a second */
    spin(0.05);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_create(&r, NULL, reader, NULL);
    pthread_create(&l, NULL, locker, NULL);
    pthread_create(&w, NULL, worker, NULL);
    join_site(w);
    pthread_join(c, NULL);
    pthread_join(r, NULL);
    pthread_join(l, NULL);
    printf("waited\n");
    return 0;
}
