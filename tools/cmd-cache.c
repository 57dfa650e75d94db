/* cmd-cache.c — `osprey cache [prune] [--max-size SIZE]`: where the build-id cache is and
 * what it holds (common/'s cache, ospc_cache_*), and its pruning.
 */
#include <stdint.h>
#include <stdio.h>

#include "ospc.h"
#include "osprey_cli.h"
#include "osprey_commands.h"

/* osprey cache [prune] [--max-size SIZE]: where the build-id cache is and what it holds;
 * prune removes the least recently used entries down to SIZE (default: the cache's bound). */
int osprey_cmd_cache(const struct osprey_options *options)
{
    char directory[PATH_MAX];
    if (ospc_cache_dir(directory, sizeof directory) != 0) {
        fprintf(stderr, "osprey: no build-id cache: neither XDG_CACHE_HOME nor HOME is set\n");
        return OSPREY_EXIT_FAILURE;
    }
    uint64_t bound = ospc_cache_max_bytes();
    if (options->max_size != NULL && ospc_parse_size(options->max_size, &bound) != 0) {
        fprintf(stderr, "osprey: --max-size %s: not a size (e.g. 500M, 2G)\n", options->max_size);
        return OSPREY_EXIT_USAGE;
    }
    int prune = options->cache_action != NULL;
    size_t kept = 0, removed = 0;
    uint64_t kept_bytes = 0, removed_bytes = 0;
    int result =
        ospc_cache_prune(prune ? bound : UINT64_MAX, &kept, &kept_bytes, &removed, &removed_bytes);
    if (result != 0) {
        fprintf(stderr, "osprey: %s: %s\n", directory, ospc_cache_strerror(result));
        return OSPREY_EXIT_FAILURE;
    }
    printf("build-id cache: %s\n", directory);
    printf("  %zu object%s, %.1f MiB (bound %.1f MiB)\n", kept, kept == 1 ? "" : "s",
           (double)kept_bytes / 1048576.0, (double)bound / 1048576.0);
    if (prune)
        printf("  pruned %zu object%s, %.1f MiB\n", removed, removed == 1 ? "" : "s",
               (double)removed_bytes / 1048576.0);
    return 0;
}
