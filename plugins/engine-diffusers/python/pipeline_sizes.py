"""A size the pipeline refuses, as the refusal of the request's field: diffusers' pipelines check the size in
check_inputs, each by a rule of its own (sides in multiples of 8 for SD and SDXL, 16 for SD 3 and Wan, 32 for LTX)
that only the pipeline knows, and all of them say so in the same words, which name the multiple and the size."""
import re

from service_sizes import size_refusal

REFUSAL = re.compile(r"`height` and `width` (?:have to|must) be divisible by (\d+).*?but are (\d+) and (\d+)", re.S)


def pipeline_size_refusal(error, field):
    """The BadRequest naming `field` for a pipeline's ValueError about the size; None for any other error."""
    match = REFUSAL.search(str(error))
    if match is None:
        return None
    multiple, height, width = (int(group) for group in match.groups())
    return size_refusal(width, height, multiple, field)
