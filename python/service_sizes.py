"""The sizes an image or video model makes, for the engine programs that know a model's own rule beyond the service's
(every side a multiple of 8, up to 4096: src/kernel/media-kit.ts): a size it cannot make is a `BadRequest` naming the
field the size came from and the nearest sizes it can make. Standard library only, like service_http, and on the
PYTHONPATH of every engine program."""
from service_http import BadRequest


def size_refusal(width, height, multiple, field="size"):
    """The refusal of `width`x`height` by a model whose sides are multiples of `multiple` pixels; `field` is where the
    size came from (`size`, or `kwargs` when its width and height did)."""
    below = [max(multiple, side // multiple * multiple) for side in (width, height)]
    above = [-(-side // multiple) * multiple for side in (width, height)]
    sizes = " or ".join(dict.fromkeys(f"{w}x{h}" for w, h in (below, above)))
    where = "`size`" if field == "size" else f"the width and height in `{field}`"
    return BadRequest(f"this model makes sizes whose sides are multiples of {multiple} pixels (asked {width}x{height}); "
                      f"try {sizes} as {where}.", field)


def check_size(width, height, multiple, field="size"):
    if width % multiple or height % multiple:
        raise size_refusal(width, height, multiple, field)


def size_field(payload):
    """The request field a program's size came from: `kwargs` when they give a width or height (they are applied
    last), else `size` (asked for, or the picture's own when an edit asks for none)."""
    kwargs = payload.get("kwargs") or {}
    return "kwargs" if "width" in kwargs or "height" in kwargs else "size"
