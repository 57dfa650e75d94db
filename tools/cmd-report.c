/* cmd-report.c — `osprey report RAW...`: the raw profiles checked, the view asked for (which
 * writes nothing unless -o or --format asks), and the outputs and the report made again
 * through the shared pipeline (pipeline.c). A run's own outputs are not rewritten by a report
 * that could only do worse.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "osprey_cli.h"
#include "osprey_commands.h"

int osprey_cmd_report(const struct osprey_options *options)
{
    for (size_t i = 0; i < options->file_count; i++)
        if (osprey_check_raw_argument(options->files[i]) != 0)
            return OSPREY_EXIT_USAGE;
    char message[2048];
    if (options->binary != NULL && access(options->binary, R_OK) != 0) {
        fprintf(stderr, "osprey: %s: %s\n", options->binary, strerror(errno));
        return OSPREY_EXIT_USAGE;
    }
    char stem[PATH_MAX];
    osprey_output_stem(options, stem, sizeof stem);
    /* A view (a selection of samples, another table) changes what is shown, never the run's
     * files, as perf report's and pprof's filters do: it writes only when -o or --format
     * asks. */
    int view = options->fiber != NULL || options->focus != NULL || options->ignore != NULL ||
               options->inverted || options->top > 0 || options->list != NULL ||
               options->pid != NULL || options->comm != NULL || options->per_process ||
               options->merge_processes;
    int no_outputs = view && options->stem == NULL && options->formats == NULL;
    if (!no_outputs && osprey_check_output_place(stem, message, sizeof message) != 0) {
        fprintf(stderr, "osprey: %s\n", message);
        return OSPREY_EXIT_USAGE;
    }

    /* The run's own outputs (no -o, no --format) are not rewritten by a report that could
     * only do worse: one whose objects are gone. */
    int keep_better = options->stem == NULL && options->formats == NULL;
    if (osprey_post_process(options->file, stem, options, NULL, 0, NULL, no_outputs, keep_better,
                            stdout, NULL, message, sizeof message) != 0) {
        /* A positioned error starts with the file it is about, as a compiler's does. */
        fprintf(stderr, "%s%s\n", strchr(message, ':') != NULL ? "" : "osprey: ", message);
        return OSPREY_EXIT_FAILURE;
    }
    return 0;
}
