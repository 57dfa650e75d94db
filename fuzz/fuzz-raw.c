/* fuzz-raw.c — fuzz target for the raw profile reader (exporters/raw.c, ospx_raw_read).
 *
 * The input is the whole raw file. The reader takes a path, so the bytes go into an anonymous
 * in-memory file opened through /proc/self/fd. Any crash, leak or undefined behaviour is a bug,
 * and so is a success that breaks the reader's promise to later stages (indices in range,
 * stacks non-empty: see fuzz_check_raw_result) or a failure without one clear error line.
 */
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "ospx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memory_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0; /* out of descriptors or memory: nothing to learn from this input */
    struct ospx_raw raw;
    struct ospx_error err;
    memset(&err, 0, sizeof err);
    int rc = ospx_raw_read(path, &raw, &err);
    fuzz_check_raw_result(rc, &raw, &err, path);
    ospx_raw_free(&raw);
    close(fd);
    return 0;
}
