/* help.c — `osprey --help` and each command's `--help`: the usage lines and opening paragraph
 * of every command from the command table (commands.c), then the options' rows below, each
 * marked with the commands it belongs to, with the exporters' lists of formats and outputs in
 * place.
 */
#include <stdio.h>
#include <string.h>

#include "osprey_cli.h"
#include "ospx.h"

/* The options' part of the help, one row per part, each marked with the commands whose help
 * shows it: `osprey --help` prints every row, `osprey report --help` those of report. The
 * usage lines and the paragraph that open a command's help are its row of the command table
 * (commands.c). @FORMATS@ and @OUTPUTS@ come from the exporters' registry (outputs.c). */
enum {
    FOR_RUN = 1u << OSPREY_COMMAND_RUN,
    FOR_REPORT = 1u << OSPREY_COMMAND_REPORT,
    FOR_DIFF = 1u << OSPREY_COMMAND_DIFF,
    FOR_CACHE = 1u << OSPREY_COMMAND_CACHE,
    FOR_ATTACH = 1u << OSPREY_COMMAND_ATTACH,
    FOR_TOP = 1u << OSPREY_COMMAND_TOP,
    FOR_DUMP = 1u << OSPREY_COMMAND_DUMP,
    FOR_ALL = FOR_RUN | FOR_REPORT | FOR_DIFF | FOR_CACHE | FOR_ATTACH | FOR_TOP | FOR_DUMP,
    FOR_GENERAL = 1u << 16, /* `osprey --help` only */
    NOT_GENERAL = 1u << 17, /* not in `osprey --help` (a command's own wording) */
};
static const struct {
    unsigned commands;
    const char *text;
} help_rows[] = {
    {FOR_ALL, "\n"},
    {FOR_TOP | NOT_GENERAL,
     "  -F, --frequency N\n"
     "                 N samples per second per thread, 10 to 10000 (default 997)\n"
     "  --interval SECONDS\n"
     "                 between refreshes, 0.1 to 3600 (default 1)\n"},
    {FOR_GENERAL, "  --interval SECONDS\n"
                  "                 top: between refreshes (default 1)\n"},
    {FOR_DUMP | NOT_GENERAL,
     "  --duration SECONDS\n"
     "                 look this long, 0.1 to 60 (default 1)\n"
     "  -F, --frequency N\n"
     "                 N samples per second per thread, 10 to 10000 (default 997)\n"},
    {FOR_ATTACH | NOT_GENERAL,
     "  --duration SECONDS\n"
     "                 attach: profile this long (default: until Ctrl-C)\n"
     "  -F, --frequency N\n"
     "                 attach: N samples per second per thread, 10 to 10000\n"
     "                 (default 997)\n"},
    {FOR_RUN,
     "  --run          build (if a source) and run FILE, without profiling; this is also\n"
     "                 what `osprey FILE` without options does\n"
     "  --profile      run FILE with the profiler on (implies --run), then write the\n"
     "                 outputs and print the top-10 report (on stdout when it is a\n"
     "                 terminal, else on stderr, so the program's stdout stays its own);\n"
     "                 an executable is profiled through LD_PRELOAD without rebuilding it\n"
     "  --duration SECONDS\n"
     "                 --profile: profile for this long, print the report, and let the\n"
     "                 program run on unprofiled to its end (its exit status is osprey's)\n"
     "  -F, --frequency N\n"
     "                 --profile: N samples per second per thread, 10 to 10000 (default\n"
     "                 997); sets OSPREY_PROFILE_HZ for the program\n"
     "  --merge-processes\n"
     "                 --profile: the processes of one command (a build's compilers) as\n"
     "                 one in the report and the outputs: one row per function and command\n"},
    {FOR_RUN | FOR_REPORT | FOR_DIFF | FOR_ATTACH,
     "  -o, --output STEM\n"
     "                 output stem (default: ./NAME for FILE, RAW without .raw.json for\n"
     "                 report, NEW's stem + .diff for diff); missing directories are created;\n"
     "                 a place that cannot be written is refused before anything runs\n"},
    {FOR_RUN | FOR_REPORT | FOR_ATTACH, "  --format LIST  the outputs to write, a comma list of\n"
                                        "                 @FORMATS@\n"},
    {FOR_RUN, "  -- ARGS...     arguments for the program\n"},
    {FOR_GENERAL, "\nosprey report and osprey diff:\n"},
    {FOR_REPORT | FOR_DIFF,
     "  --binary PATH  symbolize the main image from PATH (the program moved, or was a\n"
     "                 scratch build); used only when its build id is the profile's\n"
     "  --symfs DIR[:DIR...]\n"
     "                 find objects that moved in DIR, by build id (DIR/<id>/NAME,\n"
     "                 DIR/.build-id/xx/rest) or by name (DIR/PATH, DIR/NAME), before the\n"
     "                 build-id cache\n"
     "  --ignore-build-id\n"
     "                 use a binary of another build than the one that ran anyway (by\n"
     "                 default its frames stay OBJECT+0xOFFSET); its names are marked\n"
     "                 [other build]\n"},
    {FOR_REPORT | FOR_DIFF, "  --top N        N rows in the table (default 10)\n"},
    {FOR_GENERAL, "\nosprey report's views:\n"},
    {FOR_REPORT,
     "  --pid PID[,PID...]\n"
     "                 only these processes of the run\n"
     "  --comm COMMAND[,COMMAND...]\n"
     "                 only the processes of these commands (the executable's name)\n"
     "  --per-process  after the run's report, one section per process\n"
     "  --merge-processes\n"
     "                 the processes of one command as one (one row per function and\n"
     "                 command, as perf report sorted by comm,sym), in the outputs too\n"
     "  --fiber F      only the thread (or fiber) with this id or label\n"
     "  --focus REGEX  only samples with a function matching REGEX on the stack\n"
     "  --ignore REGEX drop samples with a function matching REGEX on the stack\n"
     "                 (--pid, --comm, --fiber, --focus and --ignore apply to the\n"
     "                 outputs too, when -o or --format asks for them: a view alone\n"
     "                 writes nothing)\n"
     "  --inverted     under each function, the caller chains its self time came\n"
     "                 from, as a tree (a single chain on one line)\n"
     "  --list REGEX   the source lines of the matching functions with their self (flat)\n"
     "                 and total (cum) time, as pprof -list prints them\n"},
    {FOR_GENERAL, "\nosprey cache:\n"},
    {FOR_CACHE, "  prune          remove the least recently used objects down to the bound\n"
                "  --max-size SIZE\n"
                "                 prune: the bound (e.g. 500M, 2G)\n"},
    {FOR_GENERAL, "\n"},
    {FOR_ALL, "  -h, --help     this text (osprey report --help, osprey diff --help, osprey\n"
              "                 cache --help: that command's)\n"},
    {FOR_GENERAL, "  -V, --version  the version\n"},
    {FOR_RUN | FOR_REPORT, "\n"
                           "Outputs:\n"
                           "@OUTPUTS@\n"
                           "  STEM.raw.json         the raw profile, for `osprey report` "
                           "(--profile only)\n"},
    {FOR_RUN, "\n"
              "Environment: OSPREY_PROFILE_HZ=N samples per second when -F is not given\n"
              "(10..10000, default 997; a value outside the range is clamped to it);\n"
              "NO_COLOR disables colour in the report.\n"},
    {FOR_REPORT | NOT_GENERAL, "\n"
                               "NO_COLOR disables colour in the report.\n"},
    {FOR_GENERAL, "\n"
                  "Exit status: the program's; 2 for a usage error (also an output place that\n"
                  "cannot be written, -F out of range, a file of another kind than the command\n"
                  "takes); 1 when building fails or `osprey report` cannot read its raw file.\n"},
    {FOR_RUN | NOT_GENERAL,
     "\n"
     "Exit status: the program's; 2 for a usage error (also an output place that cannot\n"
     "be written, or -F out of range); 1 when building fails.\n"},
    {FOR_REPORT | FOR_DIFF | FOR_CACHE | NOT_GENERAL,
     "\n"
     "Exit status: 0; 2 for a usage error (also a file of another kind than a raw\n"
     "profile); 1 when a raw profile cannot be read or its outputs written.\n"},
};

/* One row of the help, with the registry's lists in place of @FORMATS@ and @OUTPUTS@. */
static void print_help_row(FILE *out, const char *at)
{
    for (;;) {
        const char *formats = strstr(at, "@FORMATS@"), *outputs = strstr(at, "@OUTPUTS@\n");
        const char *next =
            formats != NULL && (outputs == NULL || formats < outputs) ? formats : outputs;
        if (next == NULL)
            break;
        fwrite(at, 1, (size_t)(next - at), out);
        if (next == formats) {
            char list[256];
            ospx_formats_list(list, sizeof list);
            fprintf(out, "%s (default: all)", list);
            at = next + strlen("@FORMATS@");
        } else {
            ospx_outputs_help(out);
            at = next + strlen("@OUTPUTS@\n");
        }
    }
    fputs(at, out);
}

/* A usage line: the first one printed keeps the word "usage:", the others are indented under
 * it. */
static void print_usage_lines(FILE *out, const char *usage, int *usage_printed)
{
    if (strncmp(usage, "usage: ", 7) == 0 && (*usage_printed)++ > 0) {
        fputs("      ", out);
        usage += 6;
    }
    fputs(usage, out);
}

void osprey_print_help(FILE *out, enum osprey_command command)
{
    int general = command == OSPREY_COMMAND_RUN;
    unsigned wanted = general ? FOR_ALL | FOR_GENERAL : 1u << command;
    int usage_printed = 0;
    for (size_t i = 0; i < osprey_command_count; i++)
        if (general || osprey_commands[i].id == command)
            print_usage_lines(out, osprey_commands[i].usage, &usage_printed);
    if (general)
        fputs("\n"
              "Sampling CPU profiler for native programs.\n",
              out);
    for (size_t i = 0; i < osprey_command_count; i++)
        if (general || osprey_commands[i].id == command)
            fputs(osprey_commands[i].about, out);
    for (size_t i = 0; i < sizeof help_rows / sizeof help_rows[0]; i++) {
        unsigned commands = help_rows[i].commands;
        if ((commands & wanted) == 0 || (general && (commands & NOT_GENERAL) != 0))
            continue;
        print_help_row(out, help_rows[i].text);
    }
}
