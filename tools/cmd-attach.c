/* cmd-attach.c — `osprey attach PID`: ospreyd profiles a running process from outside
 * (daemon/attach.c) into a scratch directory; then the same outputs and report as a profiled
 * run (pipeline.c), at ./COMMAND-PID by default. A process it may not attach to is said first,
 * before where the outputs go.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ospc.h"
#include "osprey_cli.h"
#include "osprey_commands.h"

/* osprey attach PID: ospreyd profiles the process from outside (daemon/attach.c) into the
 * scratch directory until --duration ends or Ctrl-C (which reaches ospreyd too: it stops and
 * writes what it has); then the same outputs and report as a profiled run. Exit status 0, or 1
 * when it could not attach (ospreyd's one line says why). */
int osprey_cmd_attach(const struct osprey_options *options)
{
    char error[PATH_MAX + 256];
    struct osprey_paths paths;
    const char *daemon = osprey_find_daemon(&paths);
    if (daemon == NULL)
        return OSPREY_EXIT_USAGE;
    struct osprey_options attach = *options;
    char stem[PATH_MAX], comm[64] = "process";
    if (attach.stem == NULL) { /* ./NAME-PID, NAME the process's command */
        char path[64];
        snprintf(path, sizeof path, "/proc/%s/comm", options->file);
        FILE *f = fopen(path, "re");
        if (f != NULL && fgets(comm, sizeof comm, f) != NULL)
            comm[strcspn(comm, "\n/")] = '\0';
        if (f != NULL)
            fclose(f);
        snprintf(stem, sizeof stem, "./%s-%s", comm[0] ? comm : "process", options->file);
        attach.stem = stem;
    }
    /* The process first: where the outputs go matters once it may be attached to. */
    int32_t pid = (int32_t)strtol(options->file, NULL, 10);
    int refused = ospc_ptrace_refused(pid);
    if (refused != 0) {
        ospc_attach_refusal(pid, refused, true, error, sizeof error);
        fprintf(stderr, "osprey: cannot attach: %s\n", error);
        return OSPREY_EXIT_FAILURE;
    }
    if (osprey_check_output_place(attach.stem, error, sizeof error) != 0) {
        fprintf(stderr, "osprey: %s\n", error);
        return OSPREY_EXIT_USAGE;
    }
    char scratch[PATH_MAX];
    int result = osprey_make_scratch(scratch, sizeof scratch);
    if (result != 0) {
        fprintf(stderr, "osprey: cannot make a scratch directory: %s\n", strerror(-result));
        return OSPREY_EXIT_FAILURE;
    }
    char scratch_raw[PATH_MAX + 32], rate[16], seconds[32];
    snprintf(scratch_raw, sizeof scratch_raw, "%s/profile.raw.json", scratch);
    snprintf(rate, sizeof rate, "%u", options->frequency != 0 ? options->frequency : 997u);
    snprintf(seconds, sizeof seconds, "%.3f", options->duration);
    char *argv[] = {(char *)daemon,
                    "--attach-pid",
                    (char *)options->file,
                    "--out",
                    scratch_raw,
                    "--rate",
                    rate,
                    options->duration > 0 ? "--duration" : NULL,
                    seconds,
                    NULL};
    extern char **environ;
    int status = 0;
    result = osprey_run_child(daemon, argv, environ, &status);
    int exit_code = 0;
    if (result != 0) {
        fprintf(stderr, "osprey: cannot run %s: %s\n", daemon, strerror(-result));
        exit_code = OSPREY_EXIT_FAILURE;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || access(scratch_raw, F_OK) != 0) {
        exit_code = OSPREY_EXIT_FAILURE; /* its one line said why */
    } else {
        osprey_finish_profile(scratch_raw, attach.stem, &attach);
    }
    result = osprey_remove_tree(scratch);
    if (result != 0)
        fprintf(stderr, "osprey: warning: cannot remove %s: %s\n", scratch, strerror(-result));
    return exit_code;
}
