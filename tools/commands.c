/* commands.c — the table of `osprey`'s commands. Each command is one row: its name, what it
 * takes (a PID, raw profiles), its usage lines and the paragraph its help opens with, and its
 * handler. The parsing recognizes the command word here (args.c), the help prints its usage
 * and paragraph from here (help.c), a near-miss word finds its command here and main()
 * dispatches through the row: a new command is a new row and a file of its own for its
 * handler (as cmd-attach.c is attach's). The man page
 * (docs/osprey.1) and the completion (docs/completion/osprey.bash) list the same commands;
 * tests/install-layout.py checks they cover every command `osprey --help` prints.
 */
#include <string.h>

#include "osprey_cli.h"
#include "osprey_commands.h"

/* A row: its word, id, flags and handler in one line, then its usage and its paragraph. */
#define COMMAND(word, command, takes, handler, usage_lines, paragraph)                             \
    {                                                                                              \
        .name = word, .id = command, .flags = takes, .usage = usage_lines, .about = paragraph,     \
        .run = handler                                                                             \
    }

/* In the order the help lists them; `osprey FILE` first. */
const struct osprey_command_row osprey_commands[] = {
    COMMAND(NULL, OSPREY_COMMAND_RUN, 0, osprey_cmd_run,
            "usage: osprey FILE [--run] [--profile [-F N]] [-o STEM] [--format LIST]\n"
            "                   [-- ARGS...]\n",
            "\n"
            "FILE is a C source (.c; C++: .cc .cpp .cxx) or an executable. A source is "
            "built with\n"
            "clang at -O2 -g with frame pointers in every function into a scratch "
            "directory that\n"
            "is removed afterwards. The program's stdin, stdout, stderr and exit code pass\n"
            "through unchanged (killed by signal N: exit 128+N). Ctrl-C stops the program "
            "and\n"
            "still writes the profile of what ran.\n"),
    COMMAND("report", OSPREY_COMMAND_REPORT, OSPREY_READS_RAW, osprey_cmd_report,
            "usage: osprey report RAW... [--binary PATH] [--symfs DIR] [-o STEM] [--format "
            "LIST]\n"
            "                     [--top N] [--pid PID] [--comm COMMAND] [--per-process]\n"
            "                     [--merge-processes]\n"
            "                     [--fiber F] [--focus REGEX] [--ignore REGEX]\n"
            "                     [--inverted] [--list REGEX]\n",
            "\n"
            "osprey report symbolizes a raw profile (STEM.raw.json, from --profile or from\n"
            "OSPREY_PROFILE=PATH), prints its report and writes its outputs again. A run's\n"
            "other processes wrote raw files beside it (STEM.raw.<pid>.json): they are "
            "read\n"
            "with it, one report of every process; several RAW files are merged too.\n"),
    COMMAND("diff", OSPREY_COMMAND_DIFF, OSPREY_READS_RAW, osprey_cmd_diff,
            "usage: osprey diff BASE.raw.json NEW.raw.json [--binary PATH] [--symfs DIR]\n"
            "                   [-o STEM] [--top N]\n",
            "\n"
            "osprey diff prints the functions whose share of the CPU time moved most and "
            "writes\n"
            "STEM.{base,new}.{speedscope.json,pb.gz} (STEM: NEW's stem + .diff), for\n"
            "go tool pprof -diff_base STEM.base.pb.gz STEM.new.pb.gz.\n"),
    COMMAND("cache", OSPREY_COMMAND_CACHE, OSPREY_OWN_WORDS, osprey_cmd_cache,
            "usage: osprey cache [prune] [--max-size SIZE]\n",
            "\n"
            "osprey cache shows the build-id cache, where the binaries that ran under "
            "--profile\n"
            "are kept ($XDG_CACHE_HOME/osprey/buildid, else ~/.cache/osprey/buildid; "
            "bounded by\n"
            "OSPREY_BUILDID_CACHE_MAX, default 1G); prune removes the least recently used "
            "down\n"
            "to --max-size (default: the bound).\n"),
    COMMAND("attach", OSPREY_COMMAND_ATTACH, OSPREY_TAKES_PID | OSPREY_PROFILES, osprey_cmd_attach,
            "usage: osprey attach PID [--duration SECONDS] [-F N] [-o STEM] [--format "
            "LIST]\n",
            "\n"
            "osprey attach profiles the running process PID, every thread it has and "
            "starts,\n"
            "from outside (the kernel's perf events: nothing is loaded into it, it is "
            "never\n"
            "stopped), until --duration ends or Ctrl-C, then prints the report and writes "
            "the\n"
            "outputs as --profile does. It needs what ptrace needs (the same user, or\n"
            "CAP_SYS_PTRACE). Where perf events are refused (perf_event_paranoid 3, a\n"
            "container's seccomp filter) it samples by ptrace at 100 Hz instead.\n"),
    COMMAND("top", OSPREY_COMMAND_TOP, OSPREY_TAKES_PID | OSPREY_PROFILES, osprey_cmd_top,
            "usage: osprey top PID [-F N] [--interval SECONDS]\n",
            "\n"
            "osprey top shows the hottest functions of the last 5 seconds of the running\n"
            "process PID, refreshed in place (perf top -p, py-spy top): SELF% and TOTAL% "
            "of\n"
            "its on-CPU time, with the report's names and colours. Keys: s or 1 by SELF%,\n"
            "c or 2 by TOTAL%, t the threads, space or p pause, ? the keys, q or Ctrl-C\n"
            "quits; the process runs on as before. It attaches as osprey attach does, "
            "writes\n"
            "no files.\n"),
    COMMAND("dump", OSPREY_COMMAND_DUMP, OSPREY_TAKES_PID | OSPREY_PROFILES, osprey_cmd_dump,
            "usage: osprey dump PID [--duration SECONDS] [-F N]\n",
            "\n"
            "osprey dump prints the current stack of every thread of the running process "
            "PID\n"
            "once (py-spy dump): it samples the process from outside as osprey attach does\n"
            "for --duration (default 1 s) and prints each thread's last stack, on-CPU or "
            "where\n"
            "it blocked; a thread that neither ran nor blocked meanwhile is named with the\n"
            "call it waits in. The process runs on as before; nothing is written.\n"),
};
const size_t osprey_command_count = sizeof osprey_commands / sizeof osprey_commands[0];

const struct osprey_command_row *osprey_command_find(const char *name)
{
    for (size_t i = 0; i < osprey_command_count; i++)
        if (osprey_commands[i].name != NULL && strcmp(osprey_commands[i].name, name) == 0)
            return &osprey_commands[i];
    return NULL;
}

const struct osprey_command_row *osprey_command_of(enum osprey_command id)
{
    for (size_t i = 0; i < osprey_command_count; i++)
        if (osprey_commands[i].id == id)
            return &osprey_commands[i];
    return NULL;
}

/* Edit distance (insertions, deletions, substitutions, and swaps of two neighbours) between
 * two short words; past 15 characters, "far". */
static size_t edit_distance(const char *a, const char *b)
{
    size_t m = strlen(a), n = strlen(b);
    if (m > 15 || n > 15)
        return 16;
    size_t d[16][16];
    for (size_t i = 0; i <= m; i++)
        for (size_t j = 0; j <= n; j++) {
            if (i == 0 || j == 0) {
                d[i][j] = i + j;
                continue;
            }
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[m][n];
}

const char *osprey_command_like(const char *word)
{
    if (strchr(word, '/') != NULL || strchr(word, '.') != NULL || strlen(word) < 3)
        return NULL;
    for (size_t i = 0; i < osprey_command_count; i++) {
        const char *name = osprey_commands[i].name;
        if (name == NULL)
            continue;
        size_t distance = edit_distance(word, name);
        if (distance > 0 && distance <= (strlen(name) > 4 ? 2u : 1u))
            return name;
    }
    return NULL;
}
