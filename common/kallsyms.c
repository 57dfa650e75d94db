/* kallsyms.c — kernel frames named from /proc/kallsyms: each kernel pc an attach recorded
 * (perf events' call chains, where the kernel allows them) gets the name of the text symbol
 * that holds it, as perf names kernel frames: for the raw file's `kernel_symbols`
 * (daemon/raw-write.c, once, when a stack holds a kernel pc) and for `osprey top`'s stream
 * (tools/top-symbols.c, for the kernel pcs of each batch of new addresses). Where the addresses are
 * hidden (kernel.kptr_restrict, a user without CAP_SYSLOG: every address reads 0), nothing is named
 * and the frames stay addresses.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ospc.h"

struct symbol {
    uint64_t address;
    char *name;
};

static int by_address(const void *x, const void *y)
{
    const struct symbol *a = x, *b = y;
    return a->address < b->address ? -1 : a->address > b->address;
}

static void free_symbols(struct symbol *symbols, uint64_t count)
{
    for (uint64_t i = 0; i < count; i++)
        free(symbols[i].name);
    free(symbols);
}

int ospc_kallsyms_name(const char *path, const uint64_t *pcs, uint32_t count, char **names)
{
    for (uint32_t i = 0; i < count; i++)
        names[i] = NULL;
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return -errno;
    struct symbol *symbols = NULL;
    uint64_t symbol_count = 0, cap = 0;
    char line[512];
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        uint64_t address;
        char type, name[256];
        if (sscanf(line, "%" SCNx64 " %c %255s", &address, &type, name) != 3 || address == 0 ||
            (type != 't' && type != 'T' && type != 'w' && type != 'W'))
            continue;
        if (symbol_count == cap) {
            uint64_t more = cap > 0 ? 2 * cap : 4096;
            struct symbol *grown = realloc(symbols, more * sizeof *symbols);
            if (grown == NULL) {
                rc = -ENOMEM;
                break;
            }
            symbols = grown;
            cap = more;
        }
        symbols[symbol_count].address = address;
        symbols[symbol_count].name = strdup(name);
        if (symbols[symbol_count++].name == NULL)
            rc = -ENOMEM;
    }
    fclose(f);
    if (rc == 0 && symbol_count > 1)
        qsort(symbols, symbol_count, sizeof *symbols, by_address);
    for (uint32_t i = 0; rc == 0 && i < count; i++) {
        size_t after = ospc_rows_before(symbols, symbol_count, sizeof *symbols,
                                        offsetof(struct symbol, address), pcs[i], true);
        if (after > 0 && (names[i] = strdup(symbols[after - 1].name)) == NULL)
            rc = -ENOMEM;
    }
    free_symbols(symbols, symbol_count);
    return rc;
}
