/* osprey_commands.h — the commands' handlers (one file each: cmd-run.c, cmd-report.c,
 * cmd-diff.c, cmd-cache.c, cmd-attach.c, top.c, top-dump.c), named by the command table
 * (commands.c), and what they share (pipeline.c): a raw profile turned into the outputs and
 * the report, a profiled run's raw files kept at its stem, the scratch directory, ospreyd.
 *
 * A handler returns the exit status of `osprey` for its command; it says what went wrong in
 * one "osprey: ..." line on stderr.
 */
#ifndef OSPREY_COMMANDS_H
#define OSPREY_COMMANDS_H

#include <stdio.h>

#include "osprey_cli.h"

int osprey_cmd_run(const struct osprey_options *options);
int osprey_cmd_report(const struct osprey_options *options);
int osprey_cmd_diff(const struct osprey_options *options);
int osprey_cmd_cache(const struct osprey_options *options);
int osprey_cmd_attach(const struct osprey_options *options);
int osprey_cmd_top(const struct osprey_options *options);
int osprey_cmd_dump(const struct osprey_options *options);

/* The run's other raw files, kept beside raw_written: how many, and how the report names
 * them. */
struct osprey_more_raw {
    size_t count;
    char pattern[PATH_MAX + 32];
};

/* Post-process raw into the outputs at stem and the report on `report`. Returns 0, or
 * -errno with the problem formatted into message; *reported (when not NULL) is 1 when the
 * report was printed all the same, naming the outputs that are missing. */
int osprey_post_process(const char *raw, const char *stem, const struct osprey_options *view,
                        const char *raw_written, int raw_replaced,
                        const struct osprey_more_raw *more, int no_outputs, int keep_better,
                        FILE *report, int *reported, char *message, size_t message_size);

/* After a profiled run: keep the raw files as <stem>.raw.json and <stem>.raw.<pid…>.json and
 * post-process them, one report of every process, which keeps the programs that ran in the
 * build-id cache. Nothing here changes the exit code; a failure is one warning line. */
void osprey_finish_profile(const char *scratch_raw, const char *stem,
                           const struct osprey_options *options);

/* Make the scratch directory under $TMPDIR (or /tmp). Returns 0 or -errno. */
int osprey_make_scratch(char *scratch, size_t size);

/* Make the scratch directory where a profile is written first beside the outputs: a hidden
 * `.osprey-XXXXXX` in the stem's directory (which the run checked it can write), so that a
 * program in a sandbox that leaves only its output directory writable (a read-only root, a
 * private /tmp) still writes its raw file there, and keeping it is a rename. Falls back to
 * osprey_make_scratch. Returns 0 or -errno. */
int osprey_make_scratch_beside(const char *stem, char *scratch, size_t size);

/* A raw file named on the command line: 0 for a regular file that is not one of the outputs,
 * else -1 after one line. */
int osprey_check_raw_argument(const char *path);

/* The ospreyd that attaches: OSPREY_DAEMON, else the one beside us. NULL after one line. */
const char *osprey_find_daemon(struct osprey_paths *paths);

#endif /* OSPREY_COMMANDS_H */
