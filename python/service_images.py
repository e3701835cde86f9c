"""Pictures the service hands an image program (base64 in the JSON payload), read with Pillow, which every image
program's environment has: `read_image` as it came, `read_picture` for an image to start from, `read_mask` for the
part to repaint. A picture that cannot be read is a `BadRequest` naming its field. Like service_http, it is on the
PYTHONPATH of every engine program."""
import base64
import io

from PIL import Image
from service_http import BadRequest


def read_image(data, field):
    """The picture as it came, in its own mode (a model's processor may convert it in a way of its own)."""
    try:
        image = Image.open(io.BytesIO(base64.b64decode(data)))
        image.load()
    except (OSError, ValueError, Image.DecompressionBombError) as error:
        raise BadRequest(f"`{field}` cannot be read as an image: {error}", field) from error
    return image


def read_picture(data, field):
    """The picture as RGB."""
    return read_image(data, field).convert("RGB")


def read_mask(data, field):
    """The mask white where the picture is repainted, on black: OpenAI's edit masks mark that part with transparency,
    Xinference's inpainting masks with white."""
    mask = read_image(data, field)
    if mask.mode in ("RGBA", "LA") and mask.getchannel("A").getextrema()[0] < 255:
        return mask.getchannel("A").point(lambda alpha: 255 if alpha == 0 else 0)
    return mask.convert("L")
