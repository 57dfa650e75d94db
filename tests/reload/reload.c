/* reload.c — dlopens liba.so, burns SECONDS of CPU in its burn_a, dlcloses it, then dlopens
 * libb.so, which the loader puts where liba.so was, and burns as long in its burn_b (tests/
 * e2e-reload.sh). Prints "same" when both were loaded at the same address, "moved" when not
 * (the test is then skipped).
 * Usage: reload LIBA LIBB SECONDS */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

/* Loads `path`, burns `seconds` in its function `name`; stores the object's base. */
static int run(const char *path, const char *name, double seconds, void **base)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "reload: %s\n", dlerror());
        return -1;
    }
    unsigned long (*burn)(double) = (unsigned long (*)(double))dlsym(handle, name);
    Dl_info info;
    if (burn == NULL || dladdr((void *)burn, &info) == 0) {
        fprintf(stderr, "reload: %s: no %s\n", path, name);
        return -1;
    }
    *base = info.dli_fbase;
    volatile unsigned long sink = burn(seconds);
    (void)sink;
    return dlclose(handle);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: reload LIBA LIBB SECONDS\n");
        return 2;
    }
    double seconds = atof(argv[3]);
    void *a = NULL, *b = NULL;
    if (run(argv[1], "burn_a", seconds, &a) != 0 || run(argv[2], "burn_b", seconds, &b) != 0)
        return 1;
    puts(a == b ? "same" : "moved");
    return 0;
}
