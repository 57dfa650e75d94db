/* calltree.c — the call tree the `.cpuprofile` and trace writers share: nodes keyed by (parent,
 * kind, value), with an open-addressing index from that key to the child, since a node can
 * have thousands of children (every function main calls) and no list walk should be paid per
 * sample. Node 0 is the root. */
#include <errno.h>
#include <stdlib.h>

#include "ospx_internal.h"

static size_t slot_of(const struct ospx__tree *tree, uint32_t parent, enum ospx__node_kind kind,
                      uint32_t value)
{
    uint64_t h = ((uint64_t)parent << 32 | value) * UINT64_C(0x9e3779b97f4a7c15);
    h ^= (uint64_t)kind * UINT64_C(0xc2b2ae3d27d4eb4f);
    return (size_t)(h >> 17) & (tree->slot_count - 1);
}

static int tree_rehash(struct ospx__tree *tree, size_t slot_count)
{
    uint32_t *slots = malloc(slot_count * sizeof *slots);
    if (slots == NULL)
        return -ENOMEM;
    for (size_t i = 0; i < slot_count; i++)
        slots[i] = OSPX_NO_NODE;
    free(tree->slots);
    tree->slots = slots;
    tree->slot_count = slot_count;
    for (uint32_t n = 1; n < tree->count; n++) { /* the root is nobody's child */
        const struct ospx__node *node = &tree->nodes[n];
        size_t slot = slot_of(tree, node->parent, node->kind, node->value);
        while (tree->slots[slot] != OSPX_NO_NODE)
            slot = (slot + 1) & (tree->slot_count - 1);
        tree->slots[slot] = n;
    }
    return 0;
}

int ospx__tree_init(struct ospx__tree *tree, size_t expected)
{
    size_t capacity = expected > 64 ? expected : 64, slots = 256;
    while (slots < 2 * capacity + 2)
        slots *= 2;
    *tree = (struct ospx__tree){malloc(capacity * sizeof(struct ospx__node)), 1, capacity, NULL, 0};
    if (tree->nodes == NULL || tree_rehash(tree, slots) != 0)
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
    size_t slot = slot_of(tree, parent, kind, value);
    for (; tree->slots[slot] != OSPX_NO_NODE; slot = (slot + 1) & (tree->slot_count - 1)) {
        const struct ospx__node *node = &tree->nodes[tree->slots[slot]];
        if (node->parent == parent && node->kind == kind && node->value == value)
            return tree->slots[slot];
    }
    if (tree->count == tree->capacity) {
        size_t capacity = tree->capacity * 2;
        struct ospx__node *nodes = realloc(tree->nodes, capacity * sizeof *nodes);
        if (nodes == NULL)
            return OSPX_NO_NODE;
        tree->nodes = nodes;
        tree->capacity = capacity;
    }
    uint32_t c = (uint32_t)tree->count++;
    tree->nodes[c] =
        (struct ospx__node){kind, value, parent, OSPX_NO_NODE, OSPX_NO_NODE, OSPX_NO_NODE, 0, 0};
    if (tree->nodes[parent].last_child == OSPX_NO_NODE)
        tree->nodes[parent].first_child = c;
    else
        tree->nodes[tree->nodes[parent].last_child].next_sibling = c;
    tree->nodes[parent].last_child = c;
    tree->slots[slot] = c;
    if (tree->count * 2 > tree->slot_count && tree_rehash(tree, tree->slot_count * 2) != 0)
        return OSPX_NO_NODE;
    return c;
}

void ospx__tree_free(struct ospx__tree *tree)
{
    free(tree->nodes);
    free(tree->slots);
    tree->nodes = NULL;
    tree->slots = NULL;
}

size_t ospx__tree_estimate(const struct ospx_model *model)
{
    size_t frames = 0;
    for (size_t s = 0; s < model->symbols->stack_count; s++)
        frames += model->symbols->stack_frame_counts[s];
    return frames + 2 * model->raw->thread_count + 2;
}
