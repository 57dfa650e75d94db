/* jit.c — code with neither unwind tables nor frame pointers, as a JIT makes it: the bytes of a
 * small loop copied into an anonymous executable mapping and run from there for about a
 * second of CPU time. The report must say that those samples' stacks end early and where. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

/* x86_64: mov rax, rdi; 1: dec rax; jnz 1b; ret — counts rdi down. */
static const unsigned char loop[] = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
#if defined(__x86_64__)
    unsigned char *code =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (code == MAP_FAILED)
        return 1;
    memcpy(code, loop, sizeof loop);
    long (*run)(long) = (long (*)(long))(void *)code;
    double end = cpu_seconds() + 1.0;
    while (cpu_seconds() < end)
        run(1000000);
#endif
    printf("jit done\n");
    return 0;
}
