/* filter.c — which samples a report looks at: `osprey report --pid`, `--comm`, `--fiber`,
 * `--focus` and `--ignore`. The filter runs between symbolizing and building the model and keeps
 * only the rows it selects (in place), so every output and the report agree on the selection, as
 * pprof's -focus/-ignore do: --pid and --comm keep the rows of the processes they list (comma
 * lists of pids and of commands, as perf's), --fiber keeps one fiber's rows (by id or by
 * label; with --pid, of those processes), --focus the
 * rows whose stack has a function matching the regular expression, --ignore drops those
 * whose stack has one. Regular expressions are POSIX extended, matched anywhere in the name. */
#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "ospx_internal.h"

/* Per raw stack: 1 when one of its frames' names matches `pattern`. NULL when out of memory. */
static uint8_t *stacks_matching(const struct ospx_raw *raw, const struct ospx_symbols *symbols,
                                regex_t *pattern)
{
    uint8_t *frame_matches = calloc(symbols->frame_count + 1, 1);
    uint8_t *stack_matches = calloc(raw->stack_count + 1, 1);
    if (frame_matches == NULL || stack_matches == NULL) {
        free(frame_matches);
        free(stack_matches);
        return NULL;
    }
    for (size_t f = 0; f < symbols->frame_count; f++)
        frame_matches[f] = regexec(pattern, ospx__str(symbols->frames[f].name), 0, NULL, 0) == 0;
    for (size_t s = 0; s < raw->stack_count; s++)
        for (size_t k = 0; k < symbols->stack_depths[s] && !stack_matches[s]; k++)
            stack_matches[s] = frame_matches[symbols->stack_slots[s][k].frame];
    free(frame_matches);
    return stack_matches;
}

static int compile(regex_t *pattern, const char *expression, const char *option,
                   struct ospx_error *err)
{
    int rc = regcomp(pattern, expression, REG_EXTENDED | REG_NOSUB);
    if (rc == 0)
        return 0;
    char why[200];
    regerror(rc, pattern, why, sizeof why);
    return ospx_error_set(err, EINVAL, "", 0, 0, "%s '%s': %s", option, expression, why);
}

/* The raw thread indices `fiber` names: a decimal fiber id, else a label. */
static int select_fiber(const struct ospx_raw *raw, const char *fiber, uint8_t *selected,
                        struct ospx_error *err)
{
    char *end;
    long long id = strtoll(fiber, &end, 10);
    int numeric = end != fiber && *end == '\0';
    size_t count = 0;
    for (size_t t = 0; t < raw->thread_count; t++) {
        selected[t] = numeric ? raw->threads[t].fiber == id
                              : strcmp(ospx__str(raw->threads[t].label), fiber) == 0;
        count += selected[t];
    }
    if (count > 0)
        return 0;
    char known[400] = "";
    size_t used = 0;
    for (size_t t = 0; t < raw->thread_count && used + 80 < sizeof known; t++)
        used +=
            (size_t)snprintf(known + used, sizeof known - used, "%s%lld (%s)", t > 0 ? ", " : "",
                             (long long)raw->threads[t].fiber, ospx__str(raw->threads[t].label));
    return ospx_error_set(err, EINVAL, ospx__str(raw->source_path), 0, 0,
                          "--fiber %s: no such fiber (the profile has: %s)", fiber, known);
}

/* 1 when `word` is one of the comma list's entries. */
static int listed(const char *list, const char *word)
{
    size_t length = strlen(word);
    for (const char *at = list; *at != '\0';) {
        size_t n = strcspn(at, ",");
        if (n == length && strncmp(at, word, n) == 0)
            return 1;
        at += n + (at[n] == ',');
    }
    return 0;
}

/* Clear selected[t] for the threads of processes neither list names (a NULL list names all). */
static int select_processes(const struct ospx_raw *raw, const char *pids, const char *comms,
                            uint8_t *selected, struct ospx_error *err)
{
    size_t processes = ospx__process_count(raw), count = 0;
    uint8_t *kept = calloc(processes + 1, 1);
    if (kept == NULL)
        return ospx_error_set(err, ENOMEM, ospx__str(raw->source_path), 0, 0, "out of memory");
    for (uint32_t p = 0; p < processes; p++) {
        char pid[32];
        snprintf(pid, sizeof pid, "%lld", (long long)ospx__process_pid(raw, p));
        kept[p] = (pids == NULL || listed(pids, pid)) &&
                  (comms == NULL || listed(comms, ospx__process_comm(raw, p)));
        count += kept[p];
    }
    for (size_t t = 0; t < raw->thread_count; t++)
        if (raw->threads[t].process >= processes || !kept[raw->threads[t].process])
            selected[t] = 0;
    free(kept);
    if (count > 0)
        return 0;
    char known[400] = "";
    size_t used = 0;
    for (uint32_t p = 0; p < processes && used + 80 < sizeof known; p++)
        used +=
            (size_t)snprintf(known + used, sizeof known - used, "%s%lld (%s)", p > 0 ? ", " : "",
                             (long long)ospx__process_pid(raw, p), ospx__process_comm(raw, p));
    return ospx_error_set(err, EINVAL, ospx__str(raw->source_path), 0, 0,
                          "%s %s: no such process (the profile has: %s)",
                          pids != NULL ? "--pid" : "--comm", pids != NULL ? pids : comms, known);
}

int ospx_filter_samples(struct ospx_raw *raw, const struct ospx_symbols *symbols,
                        const struct ospx_filter *filter, struct ospx_error *err)
{
    if (filter == NULL || (filter->fiber == NULL && filter->focus == NULL &&
                           filter->ignore == NULL && filter->pid == NULL && filter->comm == NULL))
        return 0;
    regex_t focus, ignore;
    int have_focus = 0, have_ignore = 0, rc = 0;
    uint8_t *threads = calloc(raw->thread_count + 1, 1);
    uint8_t *focused = NULL, *ignored = NULL;
    if (threads == NULL)
        rc = -ENOMEM;
    if (rc == 0 && filter->fiber != NULL)
        rc = select_fiber(raw, filter->fiber, threads, err);
    else if (rc == 0)
        memset(threads, 1, raw->thread_count);
    if (rc == 0 && (filter->pid != NULL || filter->comm != NULL))
        rc = select_processes(raw, filter->pid, filter->comm, threads, err);
    if (rc == 0 && filter->focus != NULL &&
        (rc = compile(&focus, filter->focus, "--focus", err)) == 0) {
        have_focus = 1;
        if ((focused = stacks_matching(raw, symbols, &focus)) == NULL)
            rc = -ENOMEM;
    }
    if (rc == 0 && filter->ignore != NULL &&
        (rc = compile(&ignore, filter->ignore, "--ignore", err)) == 0) {
        have_ignore = 1;
        if ((ignored = stacks_matching(raw, symbols, &ignore)) == NULL)
            rc = -ENOMEM;
    }
    /* The first view of the run remembers the whole run's sampling (a view of a view keeps it). */
    if (rc == 0 && !raw->whole.view && (rc = ospx__run_sampling(raw, &raw->whole)) == 0)
        raw->whole.view = 1;
    if (rc == 0) {
        size_t kept = 0;
        for (size_t i = 0; i < raw->sample_count; i++) {
            const struct ospx_sample *sample = &raw->samples[i];
            if (threads[sample->thread] && (focused == NULL || focused[sample->stack]) &&
                (ignored == NULL || !ignored[sample->stack]))
                raw->samples[kept++] = *sample;
        }
        raw->sample_count = kept;
    }
    if (rc == -ENOMEM)
        ospx_error_set(err, ENOMEM, ospx__str(raw->source_path), 0, 0, "out of memory");
    if (have_focus)
        regfree(&focus);
    if (have_ignore)
        regfree(&ignore);
    free(threads);
    free(focused);
    free(ignored);
    return rc;
}
