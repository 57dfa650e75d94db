/* eh.c — the part of test-cfi-mixed.so built as usual: its functions in `.eh_frame`. */
int osp_cfi_debug_only(int n);

int osp_cfi_with_eh(int n)
{
    return osp_cfi_debug_only(n) + 1;
}
