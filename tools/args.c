/* args.c — the `osprey` command line: which command, which file, which options, and the
 * program's own arguments after `--`. Options may come before or after the file; anything
 * after `--` belongs to the program and is never interpreted. Every mistake is reported as
 * one line the caller prefixes with "osprey: ".
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "osprey_cli.h"

static int usage_error(char *error, size_t size, const char *fmt, const char *what)
{
    snprintf(error, size, fmt, what);
    return -EINVAL;
}

/* Where an option belongs: everywhere, the commands that read raw files (report, diff), the
 * report alone, or the report and a profiled run. */
enum belongs { ANYWHERE, READING_RAW, REPORT, REPORT_OR_RUN };

static bool belongs_to(enum belongs where, enum osprey_command command, bool reads_raw)
{
    switch (where) {
    case READING_RAW:
        return reads_raw;
    case REPORT:
        return command == OSPREY_COMMAND_REPORT;
    case REPORT_OR_RUN:
        return command == OSPREY_COMMAND_REPORT || command == OSPREY_COMMAND_RUN;
    default:
        return true;
    }
}

/* Match "--name VALUE" or "--name=VALUE" (and "-o VALUE" / "-oVALUE" for the short form).
 * Returns 1 and sets *value when argv[*index] is this option, advancing *index past a
 * separate value; 0 when it is another option; -EINVAL when the value is missing. */
static int option_with_value(int argc, char **argv, int *index, const char *long_name,
                             const char *short_name, const char **value)
{
    const char *arg = argv[*index];
    size_t long_length = strlen(long_name);
    if (strncmp(arg, long_name, long_length) == 0 && arg[long_length] == '=') {
        *value = arg + long_length + 1;
        return **value != '\0' ? 1 : -EINVAL;
    }
    if (short_name != NULL && strncmp(arg, short_name, 2) == 0 && arg[2] != '\0') {
        *value = arg + 2;
        return 1;
    }
    if (strcmp(arg, long_name) != 0 && (short_name == NULL || strcmp(arg, short_name) != 0))
        return 0;
    if (*index + 1 >= argc)
        return -EINVAL;
    *index += 1;
    *value = argv[*index];
    return 1;
}

/* osprey cache [prune] [--max-size SIZE]: words of its own. */
static int parse_cache(int argc, char **argv, struct osprey_options *out, char *error,
                       size_t error_size)
{
    for (int i = 2; i < argc; i++) {
        const char *value = NULL;
        int matched = option_with_value(argc, argv, &i, "--max-size", NULL, &value);
        if (matched < 0)
            return usage_error(error, error_size, "option '%s' needs a SIZE (e.g. 500M)",
                               "--max-size");
        if (matched > 0) {
            out->max_size = value;
            continue;
        }
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            out->command = OSPREY_COMMAND_HELP;
            out->help_for = OSPREY_COMMAND_CACHE;
            return 0;
        }
        if (strcmp(argv[i], "prune") == 0 && out->cache_action == NULL) {
            out->cache_action = argv[i];
            continue;
        }
        return usage_error(error, error_size,
                           "unexpected argument '%s': 'osprey cache [prune] [--max-size SIZE]'",
                           argv[i]);
    }
    return 0;
}

/* A process id: digits only, not 0. */
static int is_pid(const char *text)
{
    if (text == NULL || text[0] < '1' || text[0] > '9')
        return 0;
    return strspn(text, "0123456789") == strlen(text) && strlen(text) <= 10;
}

/* perf's and py-spy's way to a running process, -p PID (also -pPID, --pid PID, --pid=PID):
 * 1 and *pid (NULL when none follows) when argv[*index] is one, advancing past the PID. */
static int pid_option(int argc, char **argv, int *index, const char **pid)
{
    const char *arg = argv[*index];
    *pid = NULL;
    if (strncmp(arg, "--pid=", 6) == 0 || (strncmp(arg, "-p", 2) == 0 && arg[2] != '\0')) {
        *pid = arg + (arg[1] == '-' ? 6 : 2);
        return is_pid(*pid);
    }
    if (strcmp(arg, "-p") != 0 && strcmp(arg, "--pid") != 0)
        return 0;
    if (*index + 1 < argc && is_pid(argv[*index + 1]))
        *pid = argv[++*index];
    return 1;
}

/* `osprey record ...` (perf's word): the way forward is `osprey PROGRAM --profile` (or
 * `osprey attach PID` for perf record -p PID), with perf's -F kept. The program is the first
 * word that is no option nor an option's value (perf's -F, -o, -e, -c, --call-graph take
 * one). */
static int record_hint(int argc, char **argv, int at, char *error, size_t error_size)
{
    const char *program = NULL, *rate = NULL, *pid = NULL;
    int rest = 0;
    for (int i = at + 1; i < argc && program == NULL; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--") == 0)
            continue;
        if (pid_option(argc, argv, &i, &pid) && pid != NULL)
            break;
        if ((strcmp(arg, "-F") == 0 || strcmp(arg, "--freq") == 0) && i + 1 < argc) {
            rate = argv[++i];
            continue;
        }
        if ((strcmp(arg, "-o") == 0 || strcmp(arg, "-e") == 0 || strcmp(arg, "-c") == 0 ||
             strcmp(arg, "--call-graph") == 0) &&
            i + 1 < argc) {
            i++;
            continue;
        }
        if (arg[0] == '-')
            continue;
        program = arg;
        rest = argc - i - 1;
    }
    if (pid != NULL)
        snprintf(error, error_size,
                 "unknown command '%s': to profile the running process %s, 'osprey attach %s'",
                 argv[at], pid, pid);
    else
        snprintf(error, error_size,
                 "unknown command '%s': to run and profile a program, 'osprey %s --profile%s%s%s'",
                 argv[at], program != NULL ? program : "PROGRAM", rate != NULL ? " -F " : "",
                 rate != NULL ? rate : "", rest > 0 ? " -- ARGS" : "");
    return -EINVAL;
}

int osprey_parse_args(int argc, char **argv, struct osprey_options *out, char *error,
                      size_t error_size)
{
    memset(out, 0, sizeof *out);
    /* The first word names a command of the table, or it is `osprey FILE`. */
    const struct osprey_command_row *command = argc > 1 ? osprey_command_find(argv[1]) : NULL;
    int first = command != NULL ? 2 : 1;
    if (command == NULL)
        command = osprey_command_of(OSPREY_COMMAND_RUN);
    out->command = command->id;
    if ((command->flags & OSPREY_OWN_WORDS) != 0)
        return parse_cache(argc, argv, out, error, error_size);
    /* attaching is profiling: --duration and -F apply (to dump: how long to look) */
    out->profile = (command->flags & OSPREY_PROFILES) != 0;
    /* osprey attach PID, osprey top PID and osprey dump PID: a PID, no program; top and dump
     * write no files. */
    int top = out->command == OSPREY_COMMAND_TOP;
    int dump = out->command == OSPREY_COMMAND_DUMP;
    int attach = (command->flags & OSPREY_TAKES_PID) != 0;
    int report = (command->flags & OSPREY_READS_RAW) != 0;
    int diff = out->command == OSPREY_COMMAND_DIFF;
    /* "osprey attach" (the PID's command) or "osprey report" (the raw files'), in messages */
    char pid_command[32], command_name[32];
    snprintf(pid_command, sizeof pid_command, "osprey %s", attach ? command->name : "attach");
    snprintf(command_name, sizeof command_name, "osprey %s", report ? command->name : "report");

    for (int i = first; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = NULL;
        int matched;
        if (strcmp(arg, "--") == 0) {
            if (attach)
                return usage_error(error, error_size, "'%s' takes no program arguments after '--'",
                                   pid_command);
            if (report) {
                snprintf(error, error_size, "'%s' takes no program arguments after '--'",
                         command_name);
                return -EINVAL;
            }
            out->program_args = argv + i + 1;
            out->program_argc = argc - i - 1;
            break;
        }
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            out->help_for = out->command;
            out->command = OSPREY_COMMAND_HELP;
            return 0;
        }
        if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
            out->command = OSPREY_COMMAND_VERSION;
            return 0;
        }
        if (top && (matched = option_with_value(argc, argv, &i, "--interval", NULL, &value)) != 0) {
            char *end;
            double seconds = matched > 0 ? strtod(value, &end) : 0;
            if (matched < 0 || value[0] < '0' || value[0] > '9' || *end != '\0' ||
                !(seconds >= 0.1) || seconds > 3600)
                return usage_error(error, error_size,
                                   "option '--interval' needs a number of seconds from 0.1 to "
                                   "3600%s",
                                   "");
            out->interval = seconds;
            continue;
        }
        if (top && (strncmp(arg, "--output", 8) == 0 || strncmp(arg, "-o", 2) == 0 ||
                    strncmp(arg, "--format", 8) == 0 || strncmp(arg, "--duration", 10) == 0))
            return usage_error(error, error_size,
                               "'osprey top' has no option '%s': it writes nothing (osprey "
                               "attach PID profiles into files)",
                               arg);
        if (dump && (strncmp(arg, "--output", 8) == 0 || strncmp(arg, "-o", 2) == 0 ||
                     strncmp(arg, "--format", 8) == 0))
            return usage_error(error, error_size,
                               "'osprey dump' has no option '%s': it prints the stacks (osprey "
                               "attach PID profiles into files)",
                               arg);
        /* -p PID: perf's and py-spy's habit; osprey takes the PID as a command's word. */
        if (!report && pid_option(argc, argv, &i, &value)) {
            const char *pid = value != NULL ? value : "PID";
            if (attach)
                snprintf(error, error_size, "'%s' takes the PID as it is: '%s %s'", pid_command,
                         pid_command, pid);
            else
                snprintf(error, error_size,
                         "unknown option '%s': to profile the running process %s, 'osprey "
                         "attach %s' (a live view: 'osprey top %s')",
                         arg, pid, pid, pid);
            return -EINVAL;
        }
        if ((matched = option_with_value(argc, argv, &i, "--frequency", "-F", &value)) != 0) {
            char *end;
            unsigned long hz = matched > 0 ? strtoul(value, &end, 10) : 0;
            if (matched < 0 || value[0] < '0' || value[0] > '9' || *end != '\0' ||
                hz < OSPREY_MIN_HZ || hz > OSPREY_MAX_HZ) {
                snprintf(error, error_size,
                         "option '%s' needs a rate from %d to %d samples per second%s%s%s",
                         strncmp(arg, "--", 2) == 0 ? "--frequency" : "-F", OSPREY_MIN_HZ,
                         OSPREY_MAX_HZ, matched > 0 ? " (got '" : "", matched > 0 ? value : "",
                         matched > 0 ? "')" : "");
                return -EINVAL;
            }
            if (report)
                return usage_error(error, error_size,
                                   "'%s' belongs to 'osprey FILE --profile': a raw profile's "
                                   "rate is the one it was recorded at",
                                   strncmp(arg, "--", 2) == 0 ? "--frequency" : "-F");
            out->frequency = (unsigned)hz;
            continue;
        }
        if ((matched = option_with_value(argc, argv, &i, "--duration", NULL, &value)) != 0) {
            char *end;
            double seconds = matched > 0 ? strtod(value, &end) : 0;
            if (matched < 0 || value[0] < '0' || value[0] > '9' || *end != '\0' || !(seconds > 0) ||
                seconds > 1e6) {
                snprintf(error, error_size,
                         "option '--duration' needs a number of seconds, more than 0%s%s%s",
                         matched > 0 ? " (got '" : "", matched > 0 ? value : "",
                         matched > 0 ? "')" : "");
                return -EINVAL;
            }
            if (report)
                return usage_error(error, error_size, "'%s' belongs to 'osprey FILE --profile'",
                                   "--duration");
            out->duration = seconds;
            continue;
        }
        if ((matched = option_with_value(argc, argv, &i, "--top", NULL, &value)) != 0) {
            char *end;
            unsigned long top = matched > 0 ? strtoul(value, &end, 10) : 0;
            if (matched < 0 || *value == '\0' || *end != '\0' || top == 0 || top > 100000)
                return usage_error(error, error_size,
                                   "option '%s' needs a number of rows (1 or more)", "--top");
            if (!report)
                return usage_error(error, error_size,
                                   "'%s' belongs to 'osprey report' and 'osprey diff'", "--top");
            out->top = top;
            continue;
        }
        /* The options that take a word (what it needs) or none, and where each belongs (the
         * report's view: which samples, and how the table is shown). */
        static const struct {
            const char *name, *short_name, *what, *belongs;
            enum belongs where;
        } rows[] = {
            {"--output", "-o", "a STEM", NULL, ANYWHERE},
            {"--binary", NULL, "a PATH", "'osprey report RAW --binary PATH'", READING_RAW},
            {"--symfs", NULL, "a DIR", "'osprey report' and 'osprey diff'", READING_RAW},
            {"--format", NULL, "a LIST (e.g. speedscope,pprof)", NULL, ANYWHERE},
            {"--fiber", NULL, "a fiber id or label", "'osprey report RAW'", REPORT},
            {"--focus", NULL, "a REGEX", "'osprey report RAW'", REPORT},
            {"--ignore", NULL, "a REGEX", "'osprey report RAW'", REPORT},
            {"--list", NULL, "a FUNCTION regex", "'osprey report RAW'", REPORT},
            {"--pid", NULL, "a PID (or a comma list)", "'osprey report RAW'", REPORT},
            {"--comm", NULL, "a COMMAND (or a comma list)", "'osprey report RAW'", REPORT},
            {"--ignore-build-id", NULL, NULL, "'osprey report' and 'osprey diff'", READING_RAW},
            {"--per-process", NULL, NULL, "'osprey report RAW'", REPORT},
            /* A run's processes by command, in the report and every output: a view of a
             * report, and what a profiled run writes. */
            {"--merge-processes", NULL, NULL, "'osprey report RAW' and 'osprey FILE --profile'",
             REPORT_OR_RUN},
            {"--inverted", NULL, NULL, "'osprey report RAW'", REPORT}};
        const char **words[] = {&out->stem,  &out->binary, &out->symfs, &out->formats, &out->fiber,
                                &out->focus, &out->ignore, &out->list,  &out->pid,     &out->comm};
        int *flags[] = {&out->ignore_build_id, &out->per_process, &out->merge_processes,
                        &out->inverted};
        size_t word_count = sizeof words / sizeof words[0];
        int taken = 0;
        for (size_t r = 0; r < sizeof rows / sizeof rows[0] && !taken; r++) {
            if (rows[r].what != NULL)
                matched =
                    option_with_value(argc, argv, &i, rows[r].name, rows[r].short_name, &value);
            else
                matched = strcmp(arg, rows[r].name) == 0;
            if (matched == 0)
                continue;
            if (matched < 0) {
                snprintf(error, error_size, "option '%s' needs %s", arg, rows[r].what);
                return -EINVAL;
            }
            if (!belongs_to(rows[r].where, out->command, report)) {
                snprintf(error, error_size, "'%s' belongs to %s", rows[r].name, rows[r].belongs);
                return -EINVAL;
            }
            if (r < word_count)
                *words[r] = value;
            else
                *flags[r - word_count] = 1;
            taken = 1;
        }
        if (taken)
            continue;
        /* Running is what `osprey FILE` does anyway: --run only says so explicitly. */
        if (strcmp(arg, "--run") == 0 || strcmp(arg, "--profile") == 0) {
            if (attach) {
                snprintf(error, error_size, "'%s' has no option '%s'", pid_command, arg);
                return -EINVAL;
            }
            if (report) {
                snprintf(error, error_size, "'%s' has no option '%s'", command_name, arg);
                return -EINVAL;
            }
            if (strcmp(arg, "--profile") == 0)
                out->profile = 1;
            continue;
        }
        if (arg[0] == '-' && arg[1] != '\0') {
            snprintf(error, error_size, "unknown option '%s' (try '%s --help')", arg,
                     report   ? command_name
                     : attach ? pid_command
                              : "osprey");
            return -EINVAL;
        }
        if (attach) {
            char *end;
            long pid = strtol(arg, &end, 10);
            if (out->file != NULL) {
                snprintf(error, error_size, "unexpected argument '%s': '%s' takes one PID", arg,
                         pid_command);
                return -EINVAL;
            }
            if (arg[0] < '0' || arg[0] > '9' || *end != '\0' || pid <= 0 || pid > 0x3fffffff)
                return usage_error(error, error_size, "'%s' is not a process id", arg);
            out->file = arg;
            continue;
        }
        if (diff && out->file != NULL && out->file2 == NULL) {
            out->file2 = arg;
            continue;
        }
        if (diff && out->file2 != NULL)
            return usage_error(error, error_size,
                               "unexpected argument '%s': 'osprey diff' takes BASE and NEW", arg);
        /* osprey report A.raw.json B.raw.json: the files of one run, merged. */
        if (out->file != NULL && out->command == OSPREY_COMMAND_REPORT) {
            _Static_assert(OSPREY_MAX_RAW_FILES == 64, "the message below says 64");
            if (out->file_count == OSPREY_MAX_RAW_FILES)
                return usage_error(error, error_size,
                                   "unexpected argument '%s': 'osprey report' takes at most 64 "
                                   "RAW files (the raw files beside each come with it)",
                                   arg);
            out->files[out->file_count++] = arg;
            continue;
        }
        if (out->file != NULL)
            return usage_error(error, error_size,
                               "unexpected argument '%s' (program arguments go after '--')", arg);
        /* A FILE that is no file here nor on PATH but nearly a command's name: a typo; perf's
         * `record` is a habit with its own way forward. */
        const char *meant = report ? NULL : osprey_command_like(arg);
        char found[PATH_MAX];
        if (!report && strcmp(arg, "record") == 0 && access(arg, F_OK) != 0 &&
            osprey_find_on_path(arg, found, sizeof found) != 0)
            return record_hint(argc, argv, i, error, error_size);
        if (meant != NULL && access(arg, F_OK) != 0 &&
            osprey_find_on_path(arg, found, sizeof found) != 0) {
            snprintf(error, error_size, "unknown command '%s': did you mean 'osprey %s'?", arg,
                     meant);
            return -EINVAL;
        }
        out->file = arg;
        out->files[0] = arg;
        out->file_count = 1;
    }

    if (dump && out->duration != 0 && (out->duration < 0.1 || out->duration > 60))
        return usage_error(error, error_size,
                           "'osprey dump' looks %s 0.1 to 60 seconds (--duration)", "from");
    if (out->duration > 0 && !out->profile)
        return usage_error(error, error_size,
                           "'%s' sets how long --profile profiles: add --profile", "--duration");
    if (out->frequency != 0 && !out->profile)
        return usage_error(error, error_size,
                           "'%s' sets the sampling rate of --profile: add --profile", "-F");
    if (out->file == NULL || (diff && out->file2 == NULL)) {
        snprintf(error, error_size, "missing %s (try '%s --help')",
                 diff     ? "BASE and NEW raw files"
                 : report ? "RAW file"
                 : attach ? "PID"
                          : "FILE",
                 report   ? command_name
                 : attach ? pid_command
                          : "osprey");
        return -EINVAL;
    }
    if (out->program_args == NULL) {
        out->program_args = argv + argc; /* argv[argc] is NULL */
        out->program_argc = 0;
    }
    return 0;
}
