/* unwind-rows.h — the unwind rows the tests write by hand (test-cfi.c, test-walks.c). */
#ifndef OSP_TEST_UNWIND_ROWS_H
#define OSP_TEST_UNWIND_ROWS_H

#include "osp_unwind.h"

/* A row of a frame that saved the frame pointer: from `pc` the CFA is `rule` + `offset`, the
 * return address at CFA - 8 and the caller's frame pointer at CFA - 16 (x86_64's push rbp). */
#define ROW_FP_SAVED(pc, rule, offset)                                                             \
    {                                                                                              \
        .pc_offset = (pc), .cfa_rule = (rule), .cfa_offset = (offset), .ra_offset = -8,            \
        .fp_rule = OSP_FP_AT_CFA, .fp_offset = -16                                                 \
    }

#endif
