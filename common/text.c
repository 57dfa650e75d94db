/* text.c — text from a profile made safe to print: names, labels, paths and reasons come from
 * the profiled program, so their control characters never reach a terminal. */
#include "ospc.h"

void ospc_printable(char *text)
{
    unsigned char *p = (unsigned char *)text;
    for (; *p != '\0'; p++) {
        if (*p < 0x20 || *p == 0x7f)
            *p = '?';
        else if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) /* C1 controls, U+0080..U+009F */
            p[0] = '?', p[1] = '?';
    }
}
