"""Requests a pipeline would fail on in the middle of a generation, or quietly change, refused before it starts as a
`BadRequest` naming the request's field: each rule is the pipeline's own, read from the pipeline itself."""
import inspect
import math

from service_http import BadRequest

# Pipeline arguments the program sets itself: the result's form it reads (output_type, return_dict), the seed's
# generator, the step-end callback that reports progress and stops an abandoned generation, and the pictures it reads
# from the request's files. A client's value would break the program's reading of the result or its own work; a
# tensor argument (latents, *_embeds) cannot come as JSON at all.
MANAGED = {
    "output_type": "the service answers images and videos itself",
    "return_dict": "the service reads the pipeline's result itself",
    "generator": "give `seed` instead",
    "callback": "the service reports each step itself",
    "callback_steps": "the service reports each step itself",
    "callback_on_step_end": "the service reports each step itself",
    "callback_on_step_end_tensor_inputs": "the service reports each step itself",
    "image": "send the picture as the request's file",
    "mask_image": "send the mask as the request's file",
    "last_image": "send the last frame as the request's file",
    "latents": "tensors cannot come as JSON",
}


def check_kwargs(kwargs):
    for name in kwargs or {}:
        reason = MANAGED.get(name) or ("tensors cannot come as JSON" if name.endswith("_embeds") else None)
        if reason:
            raise BadRequest(f"`kwargs` cannot set `{name}`, a pipeline argument the service sets itself: {reason}.", "kwargs")


def steps_field(payload):
    return "kwargs" if "num_inference_steps" in (payload.get("kwargs") or {}) else "steps"


def strength_of(pipe, args):
    """The share of the steps an image-to-image pipeline runs (None for a pipeline without one): it starts that far
    into the schedule from the picture, so it runs int(steps × strength) of the steps it is given."""
    parameter = inspect.signature(pipe.__call__).parameters.get("strength")
    if parameter is None:
        return None
    return args.get("strength", parameter.default)


def steps_at(steps, strength):
    """The denoising steps a pipeline runs when given `steps` at `strength` (diffusers' get_timesteps)."""
    return steps if strength is None else min(int(steps * strength), steps)


def steps_run(pipe, args, steps):
    """The denoising steps the pipeline runs when given `steps`."""
    return steps_at(steps, strength_of(pipe, args))


def check_strength_steps(pipe, args, payload):
    """Refuses steps that leave an image-to-image pipeline none to run: it would fail on an empty batch of latents."""
    strength = strength_of(pipe, args)
    steps = args.get("num_inference_steps")
    if strength is None or steps is None or steps_at(steps, strength) >= 1:
        return
    if not strength > 0:
        raise BadRequest(f"strength must be above 0 (asked {strength}): at 0 the pipeline runs no step.", "kwargs")
    least = max(1, math.ceil(1 / strength) - 1)
    while steps_at(least, strength) < 1:
        least += 1
    raise BadRequest(f"steps must be at least {least} for this edit: at strength {strength} the pipeline runs "
                     f"int(steps × strength) steps, none of {steps}.", steps_field(payload))



def check_num_frames(pipe, args, payload):
    """Refuses a frame count the pipeline would change: a video VAE that compresses time by k frames makes k·n+1 of
    them, and Wan's pipelines and those built on them round any other count to one (4 to 5, 2 to 1) with only a
    warning in the log. The nearest counts it makes are said, as the sizes a model makes are."""
    k = getattr(pipe, "vae_scale_factor_temporal", None)
    frames = args.get("num_frames")
    if not isinstance(k, int) or k < 2 or frames is None or frames % k == 1:
        return
    below = (frames - 1) // k * k + 1
    field = "kwargs" if "num_frames" in (payload.get("kwargs") or {}) else "num_frames"
    where = "`num_frames`" if field == "num_frames" else "`num_frames` in `kwargs`"
    raise BadRequest(f"this model makes videos of {k}·n+1 frames (asked {frames}); try {below} or {below + k} as {where}.", field)
