/* ospx-fixture.h — small hand-written profiles for the exporter tests: a raw profile and its
 * symbols described in a few lines of text, so a test reads like the case it checks. Included
 * by the tests of the model, the writers and the report.
 *
 *   exe /w/demo                  pid 42          rate 1000        dropped 3
 *   start 1764410000000000000    end 1764410000010000000          (unix ns)
 *   thread 1 main 5000000 77     fiber id, label, optional cpu_ns (-1: none) and tid
 *   frame fib /w/demo.c          name, file ('-' none), optional image; in names \s is a
 *                                space, \n a newline, \\ a backslash
 *   stack 1@12 1@14 0@61         frames LEAF FIRST as frame-index@line (0: unknown line)
 *   sample 1000000 0 0 0         t_rel_ns thread stack state (0 on-CPU, 1 waiting)
 *   sample 1000000 0 0 1 40      ... and an optional weight (sampling periods; default 1)
 *   process_cpu_ns 9000000       the raw file's process_cpu_ns (default: not recorded)
 *   events_cpu_ns 9000000        an attach's collector.events_cpu_ns (default: not recorded)
 *   drop ring_full 2             one reason of the raw file's "drops"
 *   killed 9                     the program was killed by this signal (the raw "exit")
 *   left_session                 the last process left the program's session (its "exit")
 *   sandboxed 40000000           the last process's sampling ended then: it entered a seccomp
 *                                sandbox (its exit.sampling_ended)
 *   comm bc                      the last process's comm (the kernel's name)
 *   start_ns 1000                the last process's start_unix_ns (a later image: a larger one)
 *   execd                        the last process exec'd the next image of its pid
 *   process 42 /w/demo           a process of a run: pid, exe; the threads and stacks after
 *                                it are its own (without one: a profile of one process)
 *   unwind_ready_ns 50000000     the last process's collector.unwind.ready_ns (default: not
 *                                recorded; 0: never ready)
 *   escaped 77 /usr/bin/foo why  a process the current one started that ran unprofiled:
 *                                pid, exe, reason (\s for spaces)
 *   stack_end 5                  why the last stack's walk ended (the raw file's stack_ends:
 *                                1 outermost, 5 guessed, ...; default 0, not said)
 *   # a comment
 */
#ifndef OSPX_FIXTURE_H
#define OSPX_FIXTURE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ospx.h"
#include "scratch.h"

struct fixture {
    struct ospx_raw raw;
    struct ospx_symbols symbols;
};

static inline void *fixture_grow(void *array, size_t count, size_t element)
{
    void *grown = realloc(array, (count + 1) * element);
    ck_assert_ptr_nonnull(grown);
    memset((char *)grown + count * element, 0, element);
    return grown;
}

/* A copy of a fixture word with its escapes resolved; "-" is the empty string. */
static inline char *fixture_word(const char *word)
{
    char *copy = strdup(strcmp(word, "-") == 0 ? "" : word);
    ck_assert_ptr_nonnull(copy);
    char *to = copy;
    for (const char *from = copy; *from != '\0'; from++) {
        if (*from == '\\' && from[1] != '\0') {
            from++;
            *to++ = *from == 's' ? ' ' : *from == 'n' ? '\n' : *from;
        } else {
            *to++ = *from;
        }
    }
    *to = '\0';
    return copy;
}

static inline void fixture_parse(struct fixture *fixture, const char *text)
{
    memset(fixture, 0, sizeof *fixture);
    struct ospx_raw *raw = &fixture->raw;
    struct ospx_symbols *symbols = &fixture->symbols;
    raw->version = 1;
    raw->rate_hz = 1000;
    raw->process_cpu_ns = -1;
    raw->source_path = strdup("fixture.json");
    raw->exe = strdup("/w/demo");
    raw->platform = strdup("linux-x86_64");
    char *copy = strdup(text), *save_line = NULL;
    for (char *line = strtok_r(copy, "\n", &save_line); line != NULL;
         line = strtok_r(NULL, "\n", &save_line)) {
        char *save = NULL, *key = strtok_r(line, " \t", &save);
        if (key == NULL || key[0] == '#')
            continue;
        char *words[256];
        size_t n = 0;
        for (char *w = strtok_r(NULL, " \t", &save); w != NULL && n < 256;
             w = strtok_r(NULL, " \t", &save))
            words[n++] = w;
        if (strcmp(key, "exe") == 0) {
            free(raw->exe);
            raw->exe = fixture_word(words[0]);
        } else if (strcmp(key, "pid") == 0) {
            raw->pid = strtoll(words[0], NULL, 10);
        } else if (strcmp(key, "rate") == 0) {
            raw->rate_hz = (uint32_t)strtoul(words[0], NULL, 10);
        } else if (strcmp(key, "process_cpu_ns") == 0) {
            raw->process_cpu_ns = strtoll(words[0], NULL, 10);
        } else if (strcmp(key, "events_cpu_ns") == 0) {
            raw->events_cpu_ns = strtoull(words[0], NULL, 10);
        } else if (strcmp(key, "drop") == 0) {
            raw->drops = fixture_grow(raw->drops, raw->drop_count, sizeof *raw->drops);
            raw->drops[raw->drop_count].reason = fixture_word(words[0]);
            raw->drops[raw->drop_count++].count = strtoull(words[1], NULL, 10);
        } else if (strcmp(key, "killed") == 0) {
            raw->exit.known = 1;
            raw->exit.signal = (int)strtol(words[0], NULL, 10);
        } else if (strcmp(key, "process") == 0) {
            raw->processes =
                fixture_grow(raw->processes, raw->process_count, sizeof *raw->processes);
            struct ospx_process *process = &raw->processes[raw->process_count++];
            process->pid = strtoll(words[0], NULL, 10);
            process->exe = fixture_word(n > 1 ? words[1] : "-");
            process->source_path = strdup("fixture.json");
            process->parent_pid = -1;
            process->process_cpu_ns = -1;
            process->unwind_ready_ns = -1;
            process->rate_hz = raw->rate_hz;
            if (raw->process_count == 1) {
                raw->pid = process->pid;
                free(raw->exe);
                raw->exe = fixture_word(n > 1 ? words[1] : "-");
            }
        } else if (strcmp(key, "left_session") == 0 && raw->process_count > 0) {
            raw->processes[raw->process_count - 1].exit.left_session = 1;
        } else if (strcmp(key, "sandboxed") == 0 && raw->process_count > 0) {
            struct ospx_exit *exit = &raw->processes[raw->process_count - 1].exit;
            exit->sampling_ended_ns = strtoull(words[0], NULL, 10);
            snprintf(exit->sampling_ended_reason, sizeof exit->sampling_ended_reason, "seccomp");
        } else if (strcmp(key, "comm") == 0 && raw->process_count > 0) {
            snprintf(raw->processes[raw->process_count - 1].comm,
                     sizeof raw->processes[raw->process_count - 1].comm, "%s", words[0]);
        } else if (strcmp(key, "start_ns") == 0 && raw->process_count > 0) {
            raw->processes[raw->process_count - 1].start_unix_ns = strtoull(words[0], NULL, 10);
        } else if (strcmp(key, "execd") == 0 && raw->process_count > 0) {
            raw->processes[raw->process_count - 1].execd = 1;
        } else if (strcmp(key, "unwind_ready_ns") == 0 && raw->process_count > 0) {
            raw->processes[raw->process_count - 1].unwind_ready_ns = strtoll(words[0], NULL, 10);
        } else if (strcmp(key, "escaped") == 0) {
            raw->escaped = fixture_grow(raw->escaped, raw->escaped_count, sizeof *raw->escaped);
            struct ospx_escaped *escaped = &raw->escaped[raw->escaped_count++];
            escaped->pid = strtoll(words[0], NULL, 10);
            escaped->exe = fixture_word(n > 1 ? words[1] : "-");
            escaped->reason = fixture_word(n > 2 ? words[2] : "-");
            escaped->process = raw->process_count > 0 ? (uint32_t)raw->process_count - 1 : 0;
        } else if (strcmp(key, "dropped") == 0) {
            raw->dropped = strtoull(words[0], NULL, 10);
        } else if (strcmp(key, "start") == 0) {
            raw->start_unix_ns = strtoull(words[0], NULL, 10);
        } else if (strcmp(key, "end") == 0) {
            raw->end_unix_ns = strtoull(words[0], NULL, 10);
        } else if (strcmp(key, "thread") == 0) {
            raw->threads = fixture_grow(raw->threads, raw->thread_count, sizeof *raw->threads);
            raw->threads[raw->thread_count].fiber = strtoll(words[0], NULL, 10);
            raw->threads[raw->thread_count].cpu_ns = n > 2 ? strtoll(words[2], NULL, 10) : -1;
            raw->threads[raw->thread_count].tid = n > 3 ? strtoll(words[3], NULL, 10) : 0;
            raw->threads[raw->thread_count].process =
                raw->process_count > 0 ? (uint32_t)raw->process_count - 1 : 0;
            raw->threads[raw->thread_count++].label = fixture_word(n > 1 ? words[1] : "-");
        } else if (strcmp(key, "frame") == 0) {
            symbols->frames =
                fixture_grow(symbols->frames, symbols->frame_count, sizeof *symbols->frames);
            struct ospx_frame *frame = &symbols->frames[symbols->frame_count];
            frame->name = fixture_word(words[0]);
            frame->file = fixture_word(n > 1 ? words[1] : "-");
            frame->image = fixture_word(n > 2 ? words[2] : "-");
            frame->address = 0x1000 + 16 * symbols->frame_count++;
        } else if (strcmp(key, "stack") == 0) {
            size_t s = raw->stack_count;
            raw->stacks = fixture_grow(raw->stacks, s, sizeof *raw->stacks);
            symbols->stack_slots =
                fixture_grow(symbols->stack_slots, s, sizeof(struct ospx_slot *));
            symbols->stack_depths =
                fixture_grow(symbols->stack_depths, s, sizeof *symbols->stack_depths);
            raw->stacks[s].pcs = calloc(n + 1, sizeof(uint64_t));
            raw->stacks[s].depth = n > 0 ? n : 1;
            raw->stacks[s].process = raw->process_count > 0 ? (uint32_t)raw->process_count - 1 : 0;
            symbols->stack_slots[s] = calloc(n + 1, sizeof(struct ospx_slot));
            for (size_t k = 0; k < n; k++) {
                char *at = strchr(words[k], '@');
                struct ospx_slot *slot = &symbols->stack_slots[s][k];
                slot->frame = (uint32_t)strtoul(words[k], NULL, 10);
                slot->line = at != NULL ? atoi(at + 1) : 0;
                slot->position = OSPX_NO_POSITION; /* each slot its own position */
                raw->stacks[s].pcs[k] = 0x1000 + 16 * slot->frame;
            }
            symbols->stack_depths[s] = n;
            raw->stack_count = symbols->stack_count = s + 1;
        } else if (strcmp(key, "stack_end") == 0 && raw->stack_count > 0) {
            raw->stacks[raw->stack_count - 1].end = (unsigned)strtoul(words[0], NULL, 10);
        } else if (strcmp(key, "sample") == 0) {
            raw->samples = fixture_grow(raw->samples, raw->sample_count, sizeof *raw->samples);
            struct ospx_sample *sample = &raw->samples[raw->sample_count++];
            sample->t_rel_ns = strtoull(words[0], NULL, 10);
            sample->thread = (uint32_t)strtoul(words[1], NULL, 10);
            sample->stack = (uint32_t)strtoul(words[2], NULL, 10);
            sample->state = (uint8_t)strtoul(words[3], NULL, 10);
            sample->weight = n > 4 ? strtoull(words[4], NULL, 10) : 1;
        } else {
            ck_abort_msg("fixture: unknown key '%s'", key);
        }
    }
    free(copy);
}

/* Read a fixture from a file (aborts the test when it cannot). */
static inline void fixture_load(struct fixture *fixture, const char *path)
{
    char *text = scratch_read(path, NULL);
    ck_assert_msg(text != NULL, "cannot open %s", path);
    fixture_parse(fixture, text);
    free(text);
}

static inline void fixture_free(struct fixture *fixture)
{
    ospx_raw_free(&fixture->raw);
    ospx_symbols_free(&fixture->symbols);
    memset(fixture, 0, sizeof *fixture);
}

/* Parse `text` and build its model; the model borrows from the fixture. */
static inline void fixture_model(struct fixture *fixture, const char *text,
                                 struct ospx_model *model)
{
    fixture_parse(fixture, text);
    struct ospx_error err = {0};
    int rc = ospx_model_build(&fixture->raw, &fixture->symbols, model, &err);
    ck_assert_msg(rc == 0, "model: %s", err.text);
}

#endif /* OSPX_FIXTURE_H */
