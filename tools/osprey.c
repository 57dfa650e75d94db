/* osprey.c — the `osprey` command's main(): the command line parsed (args.c), the help and
 * the version, and the command's row of the table (commands.c) run. Each command lives in a
 * file of its own (cmd-run.c, cmd-report.c, cmd-diff.c, cmd-cache.c, cmd-attach.c, top.c,
 * top-dump.c).
 */
#include <stdio.h>

#include "ospc_version.h"
#include "osprey_cli.h"

int main(int argc, char **argv)
{
    struct osprey_options options;
    char error[1024];
    if (osprey_parse_args(argc, argv, &options, error, sizeof error) != 0) {
        fprintf(stderr, "osprey: %s\n", error);
        return OSPREY_EXIT_USAGE;
    }
    if (options.command == OSPREY_COMMAND_HELP) {
        osprey_print_help(stdout, options.help_for);
        return 0;
    }
    if (options.command == OSPREY_COMMAND_VERSION) {
        printf("osprey %s\n", OSPREY_VERSION);
        return 0;
    }
    return osprey_command_of(options.command)->run(&options);
}
