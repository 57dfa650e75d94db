/* cmd-diff.c — `osprey diff BASE NEW`: both raw profiles checked, the outputs' stem (NEW's
 * stem + ".diff" by default) made, and ospx_diff's table on stdout.
 */
#include <stdio.h>
#include <string.h>

#include "osprey_cli.h"
#include "osprey_commands.h"
#include "ospx.h"

/* osprey diff BASE NEW: outputs at STEM (default: NEW's stem + ".diff"), the table on stdout. */
int osprey_cmd_diff(const struct osprey_options *options)
{
    if (osprey_check_raw_argument(options->file) != 0 ||
        osprey_check_raw_argument(options->file2) != 0)
        return OSPREY_EXIT_USAGE;
    char stem[PATH_MAX];
    if (options->stem != NULL) {
        snprintf(stem, sizeof stem, "%s", options->stem);
    } else {
        char new_stem[PATH_MAX - 8];
        osprey_default_report_stem(options->file2, new_stem, sizeof new_stem);
        snprintf(stem, sizeof stem, "%s.diff", new_stem);
    }
    char message[2048];
    if (osprey_check_output_place(stem, message, sizeof message) != 0) {
        fprintf(stderr, "osprey: %s\n", message);
        return OSPREY_EXIT_USAGE;
    }
    int result = osprey_make_parent_dirs(stem);
    if (result != 0) {
        fprintf(stderr, "osprey: %s: cannot create its directory: %s\n", stem, strerror(-result));
        return OSPREY_EXIT_FAILURE;
    }
    struct ospx_diff_options diff = {.base_path = options->file,
                                     .new_path = options->file2,
                                     .stem = stem,
                                     .binary = options->binary,
                                     .report = stdout,
                                     .top = options->top,
                                     .symfs = options->symfs,
                                     .use_other_build = options->ignore_build_id};
    struct ospx_error error;
    memset(&error, 0, sizeof error);
    if (ospx_diff(&diff, &error) != 0) {
        ospx_error_format(&error, message, sizeof message);
        fprintf(stderr, "%s%s\n", strchr(message, ':') != NULL ? "" : "osprey: ", message);
        return OSPREY_EXIT_FAILURE;
    }
    return 0;
}
