/* report-waits.c — the terminal report's lines on how the waits were timed, said only when the
 * kernel's context-switch records were refused (raw `waits.timed_by` "shim" with what refused
 * them): the program's own calls timed them then, and the line names the setting or filter
 * that refused the records and how to allow them. A profile whose waits the kernel timed, and
 * an older raw file that does not say, get no line, unless some of the kernel's records were
 * lost (`waits.lost_records`): then the waits undercount, and a line says how many. */
#include <stdio.h>
#include <string.h>

#include "ospx_internal.h"

void ospx__report_wait_source(FILE *out, size_t width, const struct ospx_model *model,
                              const char *warn, long process)
{
    const struct ospx_raw *raw = model->raw;
    const struct ospx_process *refused = NULL;
    size_t count = 0;
    for (size_t i = 0; i < raw->process_count; i++) {
        if (process >= 0 && i != (size_t)process)
            continue;
        if (raw->processes[i].waits_refused_by[0] != '\0' && count++ == 0)
            refused = &raw->processes[i];
    }
    if (refused == NULL)
        return;
    char first[256], how[64] = "";
    const char *by = refused->waits_refused_by, *second;
    if (count > 1)
        snprintf(how, sizeof how, " (%zu processes)", count);
    if (strcmp(by, "perf_event_paranoid") == 0) {
        char setting[48] = "";
        if (refused->waits_paranoid != INT64_MIN)
            snprintf(setting, sizeof setting, "=%lld", (long long)refused->waits_paranoid);
        snprintf(first, sizeof first,
                 "waits timed by the program's calls%s: perf events refused by "
                 "kernel.perf_event_paranoid%s",
                 how, setting);
        second = "for the kernel's timing: sudo sysctl kernel.perf_event_paranoid=2 (or give "
                 "osprey CAP_PERFMON)";
    } else if (strcmp(by, "seccomp") == 0) {
        snprintf(first, sizeof first,
                 "waits timed by the program's calls%s: perf events refused by a seccomp "
                 "filter%s%s%s",
                 how, refused->waits_refused[0] != '\0' ? " (" : "", refused->waits_refused,
                 refused->waits_refused[0] != '\0' ? ")" : "");
        second = "for the kernel's timing, allow perf_event_open (docker run --cap-add PERFMON)";
    } else {
        snprintf(first, sizeof first,
                 "waits timed by the program's calls%s: perf events refused%s%s%s", how,
                 refused->waits_refused[0] != '\0' ? " (" : "", refused->waits_refused,
                 refused->waits_refused[0] != '\0' ? ")" : "");
        second = "this kernel gives the process no context-switch records";
    }
    ospx__emit_pair(out, width, warn, first, second);
}

void ospx__report_waits_lost(FILE *out, size_t width, const struct ospx_model *model,
                             const char *warn, long process)
{
    const struct ospx_raw *raw = model->raw;
    uint64_t lost = 0;
    size_t processes = 0;
    for (size_t i = 0; i < raw->process_count; i++) {
        if ((process >= 0 && i != (size_t)process) || raw->processes[i].waits_lost == 0)
            continue;
        lost += raw->processes[i].waits_lost;
        processes++;
    }
    if (lost == 0)
        return;
    char first[160], how[48] = "";
    if (processes > 1)
        snprintf(how, sizeof how, " (%zu processes)", processes);
    snprintf(first, sizeof first,
             "waits: %llu of the kernel's context-switch records lost%s (their ring was full: "
             "the collector fell behind)",
             (unsigned long long)lost, how);
    ospx__emit_pair(out, width, warn, first, "some waits are shorter or missing");
}
