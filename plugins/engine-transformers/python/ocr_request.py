"""What an OCR request to host.py asks, checked before the model sees it: the picture (base64, already known to be an
image by the service) and the route's `kwargs`, split into GOT-OCR 2.0's processor arguments and generate()'s.

The processor's own names are taken (`format`, `box`, `color`, `crop_to_patches`, `min_patches`, `max_patches`), and
Xinference's for its GOT-OCR runner (`ocr_type`: "ocr" or "format", `ocr_box`, `ocr_color`), so a client written for
either works; `max_new_tokens` and `min_new_tokens` go to generate(). Anything else is refused, naming the key.
"""
import json

from service_http import BadRequest
from service_images import read_image

COLORS = ("red", "green", "blue")
PROCESSOR_KEYS = ("format", "ocr_type", "box", "ocr_box", "color", "ocr_color", "crop_to_patches", "min_patches", "max_patches")
GENERATE_KEYS = ("max_new_tokens", "min_new_tokens")


def refuse(key, must):
    return BadRequest(f"kwargs.{key} must be {must}.", "kwargs")


def whole(kwargs, key, least):
    value = kwargs[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise refuse(key, f"a whole number of at least {least}")
    return value


def flag(kwargs, key):
    if not isinstance(kwargs[key], bool):
        raise refuse(key, "true or false")
    return kwargs[key]


def box_of(key, value, width, height):
    """A region [x1, y1, x2, y2] in the picture's pixels; Xinference's ocr_box may be its text."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise refuse(key, "[x1, y1, x2, y2] in pixels") from None
    if not isinstance(value, list) or len(value) != 4 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        raise refuse(key, "[x1, y1, x2, y2] in pixels")
    x1, y1, x2, y2 = value
    if not (0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height):
        raise refuse(key, f"a region inside the {width}x{height} picture, x1 < x2 and y1 < y2")
    return list(value)


def picture(image):
    """The request's picture as PIL reads it."""
    return read_image(image.get("data", "") if isinstance(image, dict) else "", "image")


def ocr_arguments(kwargs, width, height):
    """(processor arguments, generate() arguments) from the route's kwargs."""
    if not isinstance(kwargs, dict):
        raise BadRequest("kwargs must be a JSON object.", "kwargs")
    unknown = sorted(set(kwargs) - set(PROCESSOR_KEYS) - set(GENERATE_KEYS))
    if unknown:
        raise BadRequest(f"kwargs.{unknown[0]} is not an OCR setting; this engine takes {', '.join(PROCESSOR_KEYS + GENERATE_KEYS)}.", "kwargs")
    processor, generation = {}, {}
    if "format" in kwargs:
        processor["format"] = flag(kwargs, "format")
    if "ocr_type" in kwargs:
        if kwargs["ocr_type"] not in ("ocr", "format"):
            raise refuse("ocr_type", '"ocr" (plain text) or "format" (formatted: LaTeX, Markdown)')
        processor["format"] = kwargs["ocr_type"] == "format"
    for key in ("box", "ocr_box"):
        if kwargs.get(key) not in (None, ""):
            processor["box"] = box_of(key, kwargs[key], width, height)
    for key in ("color", "ocr_color"):
        if kwargs.get(key) not in (None, ""):
            if kwargs[key] not in COLORS:
                raise refuse(key, f"one of {', '.join(COLORS)}")
            processor["color"] = kwargs[key]
    if "crop_to_patches" in kwargs:
        processor["crop_to_patches"] = flag(kwargs, "crop_to_patches")
    for key in ("min_patches", "max_patches"):
        if key in kwargs:
            processor[key] = whole(kwargs, key, 1)
    # The processor's own defaults: between 1 and 12 tiles.
    if processor.get("min_patches", 1) > processor.get("max_patches", 12):
        raise refuse("min_patches", "at most max_patches (12 unless given)")
    if "max_new_tokens" in kwargs:
        generation["max_new_tokens"] = whole(kwargs, "max_new_tokens", 1)
    if "min_new_tokens" in kwargs:
        generation["min_new_tokens"] = whole(kwargs, "min_new_tokens", 0)
    return processor, generation
