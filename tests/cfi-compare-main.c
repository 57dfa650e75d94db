/* cfi-compare-main.c — `cfi-compare [--full] [--samples N] [--machine E_MACHINE] [--verbose]
 * PATH...`: the translator against libdw's rows on every object under each PATH, of ospreyd's
 * own machine or E_MACHINE's (183: the arm64 libraries of a cross toolchain);
 * bench/unwind/cfi-compare.sh runs it full on /usr/lib/x86_64-linux-gnu and /usr/bin. Exit 0
 * when no row differs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cfi-compare.h"

int main(int argc, char **argv)
{
    struct cfi_compare_options options = {.samples = 256};
    struct cfi_compare_totals t = {0};
    int first = 1;
    for (; first < argc && argv[first][0] == '-'; first++) {
        if (strcmp(argv[first], "--full") == 0)
            options.full = true;
        else if (strcmp(argv[first], "--verbose") == 0)
            options.verbose = true;
        else if (strcmp(argv[first], "--machine") == 0 && first + 1 < argc)
            options.machine = (uint16_t)strtoul(argv[++first], NULL, 0);
        else if (strcmp(argv[first], "--samples") == 0 && first + 1 < argc)
            options.samples = (unsigned)strtoul(argv[++first], NULL, 10);
        else {
            fprintf(stderr, "usage: cfi-compare [--full] [--samples N] [--machine E_MACHINE] "
                            "[--verbose] PATH...\n");
            return 2;
        }
    }
    for (int i = first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
            cfi_compare_tree(argv[i], &options, &t, stdout);
        else
            cfi_compare_object(argv[i], &options, &t, stdout);
    }
    printf("objects %lu: translated %lu, left to libdw %lu, no rows %lu, libdw failed %lu\n"
           "rows %lu; %s %lu, differing %lu\n"
           "CPU: translator %.1f ms%s",
           (unsigned long)t.objects, (unsigned long)t.translated, (unsigned long)t.left_to_libdw,
           (unsigned long)t.unbuilt, (unsigned long)t.failed, (unsigned long)t.rows,
           options.full ? "row boundaries compared" : "addresses compared",
           (unsigned long)t.addresses, (unsigned long)t.differing, t.translator_ns / 1e6,
           options.full ? "" : "\n");
    if (options.full)
        printf(", libdw %.1f ms (the objects translated)\n", t.libdw_ns / 1e6);
    return t.differing == 0 ? 0 : 1;
}
