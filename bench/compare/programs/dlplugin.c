/* dlplugin.c — dlopens ./plugin.so (beside the binary) after start and calls its hot function;
 * a smaller part of the time is in the main binary (host_work). Expected: plugin_hot ≈ 75%,
 * host_work ≈ 25%, with plugin_hot symbolized from the dlopen'd object. */
#include <dlfcn.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static __attribute__((noinline)) uint64_t host_work(uint64_t x, long n)
{
    for (long i = 0; i < n; i++)
        x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9ULL;
    return x;
}

int main(void)
{
    char path[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", path, sizeof path - 16);
    if (len <= 0)
        return 2;
    path[len] = 0;
    char *slash = strrchr(path, '/');
    strcpy(slash + 1, "plugin.so");
    void *handle = dlopen(path, RTLD_NOW);
    if (!handle) {
        fprintf(stderr, "dlplugin: %s\n", dlerror());
        return 2;
    }
    uint64_t (*hot)(uint64_t, long) = (uint64_t(*)(uint64_t, long))dlsym(handle, "plugin_hot");
    uint64_t x = host_work(5, 100000000L);
    x = hot(x, 300000000L);
    printf("%llx\n", (unsigned long long)x);
    dlclose(handle);
    return 0;
}
