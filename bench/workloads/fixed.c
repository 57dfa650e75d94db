/* fixed.c — benchmark workload: a fixed amount of single-threaded work (ROUNDS calls of a
 * known call chain, main → crunch → step), so a profiler's cost shows as extra CPU time, not
 * as less work done. Usage: fixed ROUNDS. Prints a checksum and the program's own CPU time
 * (fixed_main.h). */
#define _GNU_SOURCE
#include "chain.h"
#include "fixed_main.h"

int main(int argc, char **argv)
{
    return fixed_main(argc, argv, "fixed", 10000, crunch);
}
