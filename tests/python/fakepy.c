/* A program that looks like another Python to the shim (tests/e2e-python.sh): it exports
 * _PyRuntime and a Py_Version the shim does not read (3.12), so the shim refuses it in one line
 * and the program runs on as plain. */
#include <stdio.h>

unsigned char _PyRuntime[4096];
const unsigned long Py_Version = 0x030c00f0; /* 3.12.0 final */

int main(void)
{
    volatile unsigned long s = 0;
    for (unsigned long i = 0; i < 100000000ul; i++)
        s += i * i;
    printf("fakepy %lu\n", (unsigned long)(s & 1));
    return 0;
}
