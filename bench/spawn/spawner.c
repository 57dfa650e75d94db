/* spawner.c — process images, the cost a profiler adds to each: `spawn N` posix_spawns
 * /bin/true N times, one after another; `exec N` replaces itself N times (execv of itself with
 * N - 1); `fork N` forks N children, one after another, each ending at once (_exit);
 * `shell N` forks N children that exec /bin/true, as a shell runs commands. Prints nothing;
 * bench/spawn/run.sh times it. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int n = atoi(argv[2]);
    if (strcmp(argv[1], "spawn") == 0) {
        for (int i = 0; i < n; i++) {
            pid_t pid;
            char *args[] = {"/bin/true", NULL};
            int status;
            if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0 ||
                waitpid(pid, &status, 0) != pid)
                return 1;
        }
        return 0;
    }
    if (strcmp(argv[1], "fork") == 0 || strcmp(argv[1], "shell") == 0) {
        int shell = argv[1][0] == 's';
        for (int i = 0; i < n; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                if (shell)
                    execl("/bin/true", "true", (char *)NULL);
                _exit(0);
            }
            int status;
            if (pid < 0 || waitpid(pid, &status, 0) != pid)
                return 1;
        }
        return 0;
    }
    if (strcmp(argv[1], "exec") == 0 && n > 0) {
        char next[16];
        snprintf(next, sizeof next, "%d", n - 1);
        char *args[] = {argv[0], "exec", next, NULL};
        execv("/proc/self/exe", args);
        return 1;
    }
    return 0;
}
