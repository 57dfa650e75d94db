/* outputs.c — the output registry: one row per file an output format writes, looked up by its
 * name, never by its position. The formats list an error message gives, the CLI's --format
 * and outputs help, and the order the writer threads take the files in all come from this
 * table, so a new output is one row here (and its writer). */
#include <stdio.h>
#include <string.h>

#include "ospx_internal.h"

/* The order rows are listed in (the report's written: list, --help). `rank`: the writer
 * threads take the lowest first, the longest to write first so two threads finish together;
 * html last, as it is made from the files of others. */
static const struct ospx_output outputs[] = {
    {"speedscope", ".speedscope.json",
     "speedscope (https://www.speedscope.app, or npx speedscope FILE)", ospx_write_speedscope, NULL,
     NULL, 2},
    {"cpuprofile", ".cpuprofile", "Chrome DevTools, Performance panel: Load profile",
     ospx_write_cpuprofile, NULL, NULL, 1},
    {"folded", ".folded", "on-CPU folded stacks for flamegraph.pl", ospx_write_folded, NULL, NULL,
     3},
    {"folded", ".offcpu.folded", "off-CPU (waiting) folded stacks", ospx_write_offcpu_folded, NULL,
     NULL, 4},
    {"profile", ".profile.json", "summary for the VS Code extension", ospx_write_profile_json, NULL,
     NULL, 5},
    {"pprof", ".pb.gz", "pprof: go tool pprof -http=: STEM.pb.gz", ospx_write_pprof, NULL, NULL, 6},
    {"trace", ".trace.json", "timeline: Chrome DevTools Performance panel or ui.perfetto.dev",
     ospx_write_trace, NULL, NULL, 0},
    {"html", ".html", "the flame graph as one offline page (any browser)", NULL, "speedscope",
     "profile", 7},
};

const struct ospx_output *ospx_outputs(size_t *count)
{
    *count = sizeof outputs / sizeof outputs[0];
    return outputs;
}

int ospx_output_is(const struct ospx_output *output, const char *format, size_t length)
{
    return strlen(output->format) == length && strncmp(output->format, format, length) == 0;
}

void ospx_formats_list(char *out, size_t size)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
        int seen = 0; /* a format of two files is listed once */
        for (size_t k = 0; k < i; k++)
            seen |= strcmp(outputs[k].format, outputs[i].format) == 0;
        if (!seen && used < size)
            used += (size_t)snprintf(out + used, size - used, "%s, ", outputs[i].format);
    }
    if (used < size)
        snprintf(out + used, size - used, "all");
}

void ospx_outputs_help(FILE *out)
{
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "STEM%s", outputs[i].suffix);
        fprintf(out, "  %-21s %s\n", name, outputs[i].opens);
    }
}
