"""One GGUF image model served over HTTP on 127.0.0.1 for the stable-diffusion.cpp engine
(plugins/engine-stable-diffusion-cpp), through stable-diffusion-cpp-python. It speaks the diffusers program's protocol:
POST /generate_image (text2image; image2image and inpainting from the request's image and mask, when the engine found a
VAE encoder for the model and said so in the load request's abilities) answers JSON lines, {"type": "progress",
"step", "steps"} after each denoising step, then {"type": "image", "index", "png"}; a refusal before anything was made
is a 400 {"error": {"message", "param"}}.

sd.cpp has no way to stop a generation it has begun, so the generations run in a worker forked from the loaded model
(its weights shared, copy on write), and a client that goes away has the worker killed at the next step and a fresh one
forked, the model loaded as it was. The parent never computes: OpenMP's threads, which a fork does not copy, only ever
start in the worker."""
import base64
import contextlib
import io
import json
import os
import random
import signal
import sys
import threading

import numpy
from gguf import GGUFReader
from service_http import BadRequest, JsonHandler, load_request, serve
from service_images import read_mask, read_picture
from service_sizes import check_size, size_field
from stable_diffusion_cpp import StableDiffusion

# The companion files sd.cpp reads beside a diffusion-only GGUF (city96's FLUX.1 and SD 3.5 files hold only the
# transformer), as its docs name them, each with the tensor prefix it has when a file holds it already.
ENCODERS = {"flux": ("clip_l", "t5xxl"), "sd3": ("clip_l", "clip_g", "t5xxl")}
VAE_PREFIXES = ("first_stage_model.", "vae.")
# How much of an edited image is noised and drawn again, unless the request's kwargs say (sd.cpp's default).
EDIT_STRENGTH = 0.75


def architecture(names):
    if any("double_blocks." in name for name in names):
        return "flux"
    if any("joint_blocks." in name for name in names):
        return "sd3"
    return "unet"


def missing_companions(kind, names, parameters):
    """What sd.cpp cannot run this file without: a VAE, and at least one text encoder for FLUX and SD 3."""
    if kind not in ENCODERS:
        return []
    missing = []
    if not parameters.get("vae") and not any(name.startswith(VAE_PREFIXES) for name in names):
        missing.append("vae")
    encoders = ENCODERS[kind]
    if not any(parameters.get(encoder) or any(f"text_encoders.{encoder}." in name for name in names) for encoder in encoders):
        missing.extend(encoders)
    return missing


class Model:
    def __init__(self, request):
        self.family = request["family"]
        parameters = request["parameters"]
        path = request["modelPath"]
        names = [tensor.name for tensor in GGUFReader(path).tensors]
        self.kind = architecture(names)
        missing = missing_companions(self.kind, names, parameters)
        if missing:
            encoders = [name for name in missing if name != "vae"]
            needs = (["a VAE (vae)"] if "vae" in missing else []) + ([f"a text encoder ({' or '.join(encoders)})"] if encoders else [])
            sys.exit(
                f"{request['modelName']}'s GGUF file holds only the diffusion model; stable-diffusion.cpp also needs {' and '.join(needs)}: "
                f"give each as a launch parameter naming a file on this machine, e.g. {' '.join(f'--{name} /models/{name}.safetensors' for name in missing)}."
            )
        config = dict(self.family.get("default_model_config") or {})
        self.default_size = (config.get("width") or 512, config.get("height") or 512)
        self.defaults = dict(self.family.get("default_generate_config") or {})
        # A file with the whole model (the tiny one) names its diffusion model's tensors in full; city96's do not.
        whole = any(name.startswith("model.diffusion_model.") for name in names)
        files = {name: parameters[name] for name in ("vae", "clip_l", "clip_g", "t5xxl") if parameters.get(name)}
        # Editing starts from the image's latent: sd.cpp then loads the VAE's encoder too.
        editable = "image2image" in request["abilities"]
        self.sd = StableDiffusion(
            **({"model_path": path} if whole else {"diffusion_model_path": path}),
            **{f"{name}_path": file for name, file in files.items()},
            n_threads=int(parameters.get("cpu_threads") or os.cpu_count() or 1),
            vae_decode_only=not editable,
        )
        self.lock = threading.Lock()


def arguments(model, payload):
    """generate_image's keyword arguments: the family's defaults, then what the request says, then its kwargs."""
    width = payload.get("width") or model.default_size[0]
    height = payload.get("height") or model.default_size[1]
    guidance = payload.get("guidance_scale", model.defaults.get("guidance_scale"))
    args = {
        "batch_count": payload.get("n", 1),
        "height": height,
        "negative_prompt": payload.get("negative_prompt") or "",
        "prompt": payload.get("prompt") or "",
        "sample_steps": payload.get("steps") or model.defaults.get("num_inference_steps") or 20,
        "seed": payload["seed"] if payload.get("seed") is not None else random.randrange(2**31),
        "width": width,
    }
    if model.kind == "flux":
        # FLUX is guidance-distilled: its guidance is an input of the model, and classifier-free guidance stays off.
        args["cfg_scale"] = 1.0
        if guidance:
            args["guidance"] = guidance
    elif guidance is not None:
        args["cfg_scale"] = guidance
    # The pictures go to the worker as they came (base64, with the request's field); it decodes them (see `pictures`).
    if payload["task"] in ("image2image", "inpainting"):
        args["init_image"] = payload["images"][0]
        args["strength"] = EDIT_STRENGTH
    if payload["task"] == "inpainting":
        args["mask_image"] = payload["mask"]
    args.update(payload.get("kwargs") or {})
    # FLUX and SD 3 patch the 8x smaller latent in 2x2 blocks.
    check_size(args["width"], args["height"], 16 if model.kind in ENCODERS else 8, size_field(payload))
    return args


def pictures(args):
    """The init image and the mask, which came as the request gave them (base64), as sd.cpp takes them."""
    if "init_image" in args:
        args["init_image"] = read_picture(args["init_image"]["data"], args["init_image"]["field"])
    if "mask_image" in args:
        args["mask_image"] = read_mask(args["mask_image"]["data"], args["mask_image"]["field"])


def sampled_steps(args):
    """The denoising steps sd.cpp runs for each image: an edit starts part-way, as `strength` says, with sd.cpp's own
    arithmetic (generate_image in stable-diffusion.cpp, in single precision)."""
    steps = args["sample_steps"]
    strength = numpy.float32(args.get("strength", 1.0))
    if "init_image" not in args or strength >= 1:
        return steps
    return min(int(numpy.float32(steps) * strength), steps - 1) + 1


def generate(model, args, line):
    """One generation, in the worker: each step and each image as an event, through `line`."""
    done = [0]

    def progress(step, total, _seconds):
        # sd.cpp counts each image's steps from 1 (and a tiled VAE's tiles, which are not steps); the service counts
        # the steps of all the images together.
        if step >= 1 and total == steps:
            done[0] += 1
            line({"type": "progress", "step": done[0], "steps": steps * args["batch_count"]})

    try:
        pictures(args)
        steps = sampled_steps(args)
        images = model.sd.generate_image(**args, progress_callback=progress)
        for index, image in enumerate(images):
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            line({"type": "image", "index": index, "png": base64.b64encode(buffer.getvalue()).decode()})
    except BadRequest as error:
        line({"type": "error", "status": 400, "message": str(error), "param": error.param})
    except (TypeError, ValueError) as error:
        line({"type": "error", "status": 400, "message": f"the model cannot do what was asked: {error}", "param": None})
    except Exception as error:  # noqa: BLE001 - reported to the parent, which answers it
        line({"type": "error", "status": 500, "message": f"{type(error).__name__}: {error}", "param": None})


class Worker:
    """A child forked from the loaded model that runs the generations one after another, each asked as a JSON line on
    its stdin pipe and answered as event lines ending with {"type": "done"}. It stays warm between requests (what sd.cpp
    sets up on a first generation is done once); `restart` kills it mid-generation and forks a fresh one."""

    def __init__(self, model):
        self.model = model
        self.start()

    def start(self):
        requests_read, requests_write = os.pipe()
        events_read, events_write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(requests_write)
            os.close(events_read)
            with os.fdopen(requests_read) as requests, os.fdopen(events_write, "w") as events:
                def line(event):
                    events.write(json.dumps(event) + "\n")
                    events.flush()

                for request in requests:
                    generate(self.model, json.loads(request), line)
                    line({"type": "done"})
            os._exit(0)
        os.close(requests_read)
        os.close(events_write)
        self.requests = os.fdopen(requests_write, "w")
        self.events = os.fdopen(events_read)

    def restart(self):
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.requests.close()
        self.events.close()
        self.start()

    def generate(self, args):
        """The generation's events up to its "done". Left before then (the client went away, its answer failed), the
        worker is replaced: the rest of its events would wait in the pipe, where the next request would read them."""
        self.requests.write(json.dumps(args) + "\n")
        self.requests.flush()
        answered = False
        try:
            while (text := self.events.readline()) and (event := json.loads(text))["type"] != "done":
                yield event
            answered = bool(text)
        finally:
            if not answered:
                self.restart()
        if not answered:
            raise RuntimeError("the generation's process ended without an answer; its log says why")


class Handler(JsonHandler):
    model = None
    worker = None

    def post_routes(self):
        return {"/generate_image": self.generate_image}

    def do_POST(self):
        with self.model.lock:
            super().do_POST()

    def generate_image(self, payload):
        args = arguments(self.model, payload)
        step = 0
        error = None
        try:
            with contextlib.closing(self.worker.generate(args)) as events:
                # Read to the generation's end, its error's too, so that nothing of it is left for the next request.
                for event in events:
                    step = event.get("step", step)
                    if event["type"] == "error":
                        error = event
                    else:
                        self.line(event)
        except (BrokenPipeError, ConnectionResetError):
            print(f"generation stopped at step {step} of {args['sample_steps'] * args['batch_count']}: the client went away", flush=True)
            raise
        if error:
            self.fail(error["status"], error["message"], error["param"])


def main():
    port, request = load_request()
    Handler.model = Model(request)
    Handler.worker = Worker(Handler.model)
    companions = "".join(f" with {name} {request['parameters'][name]}" for name in ("vae", "clip_l", "clip_g", "t5xxl") if request["parameters"].get(name))
    print(f"serving {request['modelName']} ({request['modelPath']}, {Handler.model.kind}){companions} on port {port}", flush=True)
    serve(Handler, port)


if __name__ == "__main__":
    main()
