/* debug-only.c — the part of test-cfi-mixed.so built without unwind tables (as Go's linker
 * leaves its own functions): described in `.debug_frame` alone, a gap in `.eh_frame`. */
volatile int osp_cfi_sink;

int osp_cfi_debug_only(int n)
{
    int x = 0;
    for (int i = 0; i < n; i++)
        x += osp_cfi_sink * i;
    return x;
}
