/* frameless.c — a program whose call chains and work split are known by construction, built
 * without frame pointers (gcc -O2's default, or clang -O2 -fomit-frame-pointer) by
 * tests/e2e-unwind.sh: main -> run_for -> middle -> leaf_a (3 parts) / leaf_b (1 part), and a
 * thread worker -> middle -> the same leaves. Argument: seconds of CPU time (default 1.5).
 * With `plugin PATH`, it dlopens the frameless module at PATH after 0.2 s and spends the
 * rest of the time in its plugin_work (main -> run_plugin -> plugin_work -> plugin_leaf). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The thread's own CPU time: the work is the same however loaded the machine is. */
#define CHAIN_CLOCK      CLOCK_THREAD_CPUTIME_ID
#define CHAIN_LEAF_STEPS 20000
#include "chain.h"

__attribute__((noinline)) static void run_plugin(const char *path, double seconds)
{
    run_for(0.2);
    void *module = dlopen(path, RTLD_NOW);
    if (module == NULL) {
        fprintf(stderr, "frameless: %s\n", dlerror());
        exit(2);
    }
    double (*work)(double, double) = (double (*)(double, double))dlsym(module, "plugin_work");
    sink = work(1.0, seconds - 0.2);
    dlclose(module);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "plugin") == 0) {
        run_plugin(argv[2], argc >= 4 ? atof(argv[3]) : 1.5);
        printf("plugin done\n");
        return 0;
    }
    double seconds = argc >= 2 ? atof(argv[1]) : 1.5;
    pthread_t thread;
    double half = seconds / 2;
    pthread_create(&thread, NULL, worker, &half);
    sink = (double)run_for(seconds); /* its rounds used: gcc keeps the name run_for (no .isra) */
    pthread_join(thread, NULL);
    printf("done\n");
    return 0;
}
