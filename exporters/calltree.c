/* calltree.c — the call tree the `.cpuprofile` and trace writers share: nodes keyed by (parent,
 * kind, value), with common/'s hash index from that key to the child, since a node can
 * have thousands of children (every function main calls) and no list walk should be paid per
 * sample. Node 0 is the root. */
#include <errno.h>
#include <stdlib.h>

#include "ospx_internal.h"

static uint64_t node_hash(uint32_t parent, enum ospx__node_kind kind, uint32_t value)
{
    uint64_t h = ((uint64_t)parent << 32 | value) * UINT64_C(0x9e3779b97f4a7c15);
    h ^= (uint64_t)kind * UINT64_C(0xc2b2ae3d27d4eb4f);
    return h >> 17;
}

static uint64_t hash_of_node(uint32_t entry, void *context)
{
    const struct ospx__node *node = &((const struct ospx__tree *)context)->nodes[entry];
    return node_hash(node->parent, node->kind, node->value);
}

int ospx__tree_init(struct ospx__tree *tree, size_t expected)
{
    size_t capacity = expected > 64 ? expected : 64;
    *tree = (struct ospx__tree){malloc(capacity * sizeof(struct ospx__node)), 1, capacity, {0}};
    if (tree->nodes == NULL || ospc_index_init(&tree->index, capacity) != 0)
        return -ENOMEM;
    tree->nodes[0] = (struct ospx__node){
        OSPX_NODE_ROOT, 0, OSPX_NO_NODE, OSPX_NO_NODE, OSPX_NO_NODE, OSPX_NO_NODE, 0, 0};
    return 0;
}

/* The child of `parent` for (kind, value), created when missing; OSPX_NO_NODE when out of memory.
 */
uint32_t ospx__tree_child(struct ospx__tree *tree, uint32_t parent, enum ospx__node_kind kind,
                          uint32_t value)
{
    size_t slot = ospc_index_start(&tree->index, node_hash(parent, kind, value));
    for (uint32_t n; (n = ospc_index_entry(&tree->index, slot)) != UINT32_MAX;
         slot = ospc_index_next(&tree->index, slot)) {
        const struct ospx__node *node = &tree->nodes[n];
        if (node->parent == parent && node->kind == kind && node->value == value)
            return n;
    }
    if (ospx__grow(&tree->nodes, &tree->capacity, tree->count, sizeof *tree->nodes, 1) != 0)
        return OSPX_NO_NODE;
    uint32_t c = (uint32_t)tree->count++;
    tree->nodes[c] =
        (struct ospx__node){kind, value, parent, OSPX_NO_NODE, OSPX_NO_NODE, OSPX_NO_NODE, 0, 0};
    if (tree->nodes[parent].last_child == OSPX_NO_NODE)
        tree->nodes[parent].first_child = c;
    else
        tree->nodes[tree->nodes[parent].last_child].next_sibling = c;
    tree->nodes[parent].last_child = c;
    if (ospc_index_insert(&tree->index, slot, c, hash_of_node, tree) != 0)
        return OSPX_NO_NODE;
    return c;
}

void ospx__tree_free(struct ospx__tree *tree)
{
    free(tree->nodes);
    ospc_index_free(&tree->index);
    tree->nodes = NULL;
}

size_t ospx__tree_estimate(const struct ospx_model *model)
{
    size_t frames = 0;
    for (size_t s = 0; s < model->symbols->stack_count; s++)
        frames += model->symbols->stack_depths[s];
    return frames + 2 * model->raw->thread_count + 2;
}

int ospx__v8_tree_init(struct ospx__v8_tree *v8, const struct ospx_model *model)
{
    int rc = ospx__tree_init(&v8->tree, ospx__tree_estimate(model));
    v8->function_of = ospx__frame_functions(model);
    v8->scripts = ospx__script_ids(model);
    return rc == 0 && v8->function_of != NULL && v8->scripts != NULL ? 0 : -ENOMEM;
}

void ospx__v8_tree_free(struct ospx__v8_tree *v8)
{
    ospx__tree_free(&v8->tree);
    OSPC_FREE_ALL(v8->function_of, v8->scripts);
}
