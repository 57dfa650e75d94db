/* symbolize-hex.c — the backend when there is no symbolizer to run: it answers nothing, so
 * every frame keeps its object and address (object+0xOFFSET, see symbolize.c). symbolize.c has
 * already said, in one line, that no tool was found. */
#include "symbolize_internal.h"

static int hex_symbolize_image(struct ospx__symbolizer *state, const struct ospx_image *image,
                               struct ospx__image_work *work, const char *object)
{
    (void)image;
    (void)object;
    state->addresses_done += work->count;
    return 0;
}

const struct ospx__backend ospx__backend_hex = {
    .name = "hex",
    .symbolize_image = hex_symbolize_image,
};
