/* hot.c — the arm64 end-to-end program (tests/e2e-arm64.sh): two threads whose call chains
 * and work split are known by construction, built for arm64 with and without frame pointers
 * and run under qemu-aarch64. main -> run_for -> middle -> leaf_a (3 parts) / leaf_b (1 part),
 * and a thread worker -> run_for -> the same. Arguments: seconds to run (default 1.5) and the
 * exit status to end with (default 0); it prints one line, which must come through profiling
 * unchanged. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../unwind/chain.h"

int main(int argc, char **argv)
{
    double seconds = argc >= 2 ? atof(argv[1]) : 1.5;
    int status = argc >= 3 ? atoi(argv[2]) : 0;
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, &seconds) != 0)
        return 99;
    long rounds = run_for(seconds);
    pthread_join(thread, NULL);
    printf("hot: %s rounds, exit %d\n", rounds > 0 ? "some" : "no", status);
    return status;
}
