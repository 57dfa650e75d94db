/* replay.c — runs a fuzz target without libFuzzer: every file in each directory named on the
 * command line goes through LLVMFuzzerTestOneInput once, in name order. Part of the unit suite,
 * so every input the fuzzers once found (fuzz/corpus/<target>/) keeps passing; a broken
 * promise aborts inside the target and fails the test. A missing or empty directory fails too:
 * a replay that replays nothing proves nothing.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Read the whole file at path into a fresh buffer (*size bytes). NULL on failure. */
static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL)
        return NULL;
    uint8_t *buffer = NULL;
    size_t used = 0, capacity = 0;
    for (;;) {
        if (used == capacity) {
            capacity = capacity ? capacity * 2 : 4096;
            uint8_t *grown = realloc(buffer, capacity);
            if (grown == NULL)
                break;
            buffer = grown;
        }
        size_t n = fread(buffer + used, 1, capacity - used, file);
        used += n;
        if (n == 0)
            break;
    }
    int failed = ferror(file) || used == capacity;
    fclose(file);
    if (failed) {
        free(buffer);
        return NULL;
    }
    *size = used;
    return buffer;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int only_entries(const struct dirent *entry)
{
    return entry->d_name[0] != '.';
}

/* Replay every regular file in dir. Returns how many, or -1 on an error (already printed). */
static int replay_directory(const char *dir)
{
    struct dirent **entries;
    int count = scandir(dir, &entries, only_entries, by_name);
    if (count < 0) {
        fprintf(stderr, "replay: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    int replayed = 0, failed = 0;
    for (int i = 0; i < count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, entries[i]->d_name);
        free(entries[i]);
        struct stat info;
        if (failed || stat(path, &info) != 0 || !S_ISREG(info.st_mode))
            continue;
        size_t size = 0;
        uint8_t *data = read_file(path, &size);
        if (data == NULL) {
            fprintf(stderr, "replay: %s: cannot read it\n", path);
            failed = 1;
            continue;
        }
        fprintf(stderr, "replay: %s (%zu bytes)\n", path, size);
        LLVMFuzzerTestOneInput(data, size);
        free(data);
        replayed++;
    }
    free(entries);
    return failed ? -1 : replayed;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        int replayed = replay_directory(argv[i]);
        if (replayed < 0)
            return 1;
        if (replayed == 0) {
            fprintf(stderr, "replay: %s: no input files\n", argv[i]);
            return 1;
        }
        printf("replay: %s: %d inputs passed\n", argv[i], replayed);
    }
    return 0;
}
