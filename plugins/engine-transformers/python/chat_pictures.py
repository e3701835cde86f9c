"""The pictures of a chat request to host.py, for a vision-language model's processor: the service sends each picture
a user showed as an OpenAI `image_url` part holding a data URL of its bytes (already bounded and known to be a PNG,
JPEG, WebP or GIF), in its place among the message's text parts. Here each becomes an `{"type": "image"}` part, the
form processors' chat templates take, and the picture itself, read with Pillow, in the order the prompt shows them.
"""
from service_http import BadRequest
from service_images import read_picture


def picture_of(part, field):
    url = (part.get("image_url") or {}).get("url") if isinstance(part.get("image_url"), dict) else None
    if not isinstance(url, str) or not url.startswith("data:") or ";base64," not in url[:128]:
        raise BadRequest(f"`{field}.image_url.url` must be a data URL of the picture's bytes (base64).", field)
    return read_picture(url.split(",", 1)[1], field)


def content_of(content, index, pictures):
    if not isinstance(content, list):
        return content
    parts = []
    for position, part in enumerate(content):
        field = f"messages[{index}].content[{position}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append({"type": "text", "text": part.get("text") or ""})
        elif kind == "image_url":
            pictures.append(picture_of(part, field))
            parts.append({"type": "image"})
        else:
            raise BadRequest(f"`{field}` must be a text or image_url part.", field)
    return parts


def turns_and_pictures(messages):
    """The messages with image parts as the processor's template takes them, and the pictures in prompt order."""
    pictures = []
    turns = []
    for index, message in enumerate(messages):
        turn = {key: value for key, value in message.items() if value is not None}
        if "content" in turn:
            turn["content"] = content_of(turn["content"], index, pictures)
        turns.append(turn)
    return turns, pictures
