"""One image or video model served over HTTP on 127.0.0.1 for the diffusers engine (plugins/engine-diffusers): the
kernel starts it in the model's virtual environment, waits for GET /health, and sends each operation as a POST of its
payload. Answers stream as JSON lines: {"type": "progress", "step", "steps"} after each denoising step, then the
results; a refusal before anything was made is a 400 {"error": {"message", "param"}}. A client that goes away stops the
generation at its next step (the progress line written then fails, or the closed connection is seen), before anything
is decoded."""
import base64
import gc
import io
import json
import os
import select
import socket
import sys
import tempfile
import threading
import time

import torch
from PIL import Image
from service_http import BadRequest, JsonHandler, load_request, serve
from service_images import read_mask, read_picture
from service_sizes import size_field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_checks import check_kwargs, check_num_frames, check_strength_steps, steps_run  # noqa: E402
from pipeline_sizes import pipeline_size_refusal  # noqa: E402
from tiny_pipelines import RECIPES  # noqa: E402


def check_gpu_memory(family):
    """A model whose card says it needs more GPU memory than the GPUs it was given have is refused before anything
    loads (the supervisor has refused it already where no worker has such a GPU)."""
    needed = family.get("min_gpu_memory_gb")
    if not needed:
        return
    name = family["model_name"]
    if not torch.cuda.is_available():
        sys.exit(f"{name} needs a GPU with {needed} GB of memory (min_gpu_memory_gb); this machine has no CUDA GPU. Launch it on a worker with one.")
    # Model cards give decimal gigabytes: an "80 GB" H100 has 81,559 MiB, under 80 GiB.
    total = max(torch.cuda.get_device_properties(i).total_memory for i in range(torch.cuda.device_count())) / 1e9
    if total < needed:
        sys.exit(f"{name} needs a GPU with {needed} GB of memory (min_gpu_memory_gb); the largest here, {torch.cuda.get_device_name(0)}, has {total:.0f} GB.")


def variant_of(path, config):
    """The weights' packaging to load, as the weight store chose it to download (src/weights/pipeline.ts): the
    registration's `variant`, or fp16 files where it loads as float16 and the folder has them."""
    if config.get("variant"):
        return config["variant"]
    if config.get("torch_dtype") == "float16" and any(".fp16." in name for _, _, names in os.walk(path) for name in names):
        return "fp16"
    return None


class Model:
    def __init__(self, request):
        self.family = request["family"]
        self.model_type = request["modelType"]
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        config = dict(self.family.get("default_model_config") or {})
        self.default_size = (config.pop("width", None), config.pop("height", None))
        self.defaults = dict(self.family.get("default_generate_config") or {})
        self.lock = threading.Lock()
        threads = request["parameters"].get("cpu_threads")
        if threads:
            torch.set_num_threads(int(threads))
        path = request["modelPath"]
        if path.endswith(".json"):
            with open(path) as file:
                recipe = json.load(file)
            self.components = RECIPES[recipe["recipe"]](recipe)
            self.source = None
        else:
            dtype = getattr(torch, config.get("torch_dtype", "float16")) if self.device == "cuda" else torch.float32
            self.components = None
            self.source = (path, dtype, variant_of(path, config))
        self.pipelines = {}

    def pipeline(self, task):
        """The task's pipeline, made once; they share one set of weights."""
        if task in self.pipelines:
            return self.pipelines[task]
        import diffusers

        if self.components is not None:
            classes = {"text2image": "StableDiffusionPipeline", "image2image": "StableDiffusionImg2ImgPipeline",
                       "inpainting": "StableDiffusionInpaintPipeline", "text2video": "WanPipeline"}
            if task not in classes:
                raise BadRequest(f"this tiny random model cannot do {task}", "model")
            cls = getattr(diffusers, classes[task])
            accepted = cls.__init__.__code__.co_varnames
            pipe = cls(**{k: v for k, v in self.components.items() if k in accepted})
        elif self.model_type == "video":
            first = next(iter(self.pipelines.values()), None)
            pipe = first or diffusers.DiffusionPipeline.from_pretrained(self.source[0], torch_dtype=self.source[1], variant=self.source[2])
        else:
            auto = {"text2image": diffusers.AutoPipelineForText2Image, "image2image": diffusers.AutoPipelineForImage2Image,
                    "inpainting": diffusers.AutoPipelineForInpainting}[task]
            first = next(iter(self.pipelines.values()), None)
            pipe = auto.from_pipe(first) if first else auto.from_pretrained(self.source[0], torch_dtype=self.source[1], variant=self.source[2])
        pipe.to(self.device)
        pipe.set_progress_bar_config(disable=True)
        self.pipelines[task] = pipe
        return pipe


def arguments(model, payload):
    """The pipeline's keyword arguments: the family's defaults, then what the request says, then its kwargs."""
    check_kwargs(payload.get("kwargs"))
    args = dict(model.defaults)
    width, height = payload.get("width") or model.default_size[0], payload.get("height") or model.default_size[1]
    if width and height:
        args.update(width=width, height=height)
    for ours, theirs in (("steps", "num_inference_steps"), ("guidance_scale", "guidance_scale"), ("negative_prompt", "negative_prompt"),
                         ("num_frames", "num_frames")):
        if payload.get(ours) is not None:
            args[theirs] = payload[ours]
    args["prompt"] = payload.get("prompt") or ""
    if payload.get("seed") is not None:
        args["generator"] = torch.Generator(device="cpu").manual_seed(payload["seed"])
    args.update(payload.get("kwargs") or {})
    return args


def check_steps(scheduler, steps):
    """Refuses more steps than the scheduler has noise levels for. A DDPM-family scheduler (DDIM, PNDM, DDPM…) looks
    each timestep up in its num_train_timesteps levels, and with "leading" spacing it adds steps_offset to every
    timestep (diffusers' pipelines set it to 1): DDIM at 1000 steps of 1000 levels would ask for level 1000, an
    IndexError in the middle of the generation. The timesteps are the scheduler's own, set as the pipeline sets them."""
    levels = getattr(scheduler, "alphas_cumprod", None)
    if levels is None or steps is None:
        return
    scheduler.set_timesteps(steps)
    if int(scheduler.timesteps.max()) < len(levels):
        return
    config = scheduler.config
    limit = config.num_train_timesteps - (config.get("steps_offset", 0) if config.get("timestep_spacing", "leading") == "leading" else 0)
    raise BadRequest(f"steps must be at most {limit} for this model: its scheduler ({type(scheduler).__name__}) has "
                     f"{config.num_train_timesteps} noise levels and offsets its steps by {config.get('steps_offset', 0)}; give fewer steps.", "steps")


class ClientGone(Exception):
    """Raised from the step-end callback when the client has gone: it leaves the pipeline at once. Setting the
    pipeline's `_interrupt` would skip the remaining steps but still decode the latents and post-process every frame
    (tens of seconds for a long video) for an answer nobody reads, the model held all the while."""

    def __init__(self, step):
        super().__init__(f"the client went away at step {step}")
        self.step = step


def free_memory(pipe):
    """Gives back what a stopped generation held: a pipeline moves offloaded models off the GPU, and resets its
    denoiser's cached state, at the end of a call it did not reach; torch keeps freed GPU memory cached for itself."""
    gc.collect()
    pipe.maybe_free_model_hooks()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def at_size(picture, args, resample):
    """The picture at the size the request asked for (the width and height of its arguments): an image-to-image
    pipeline makes the picture's own size whatever width and height it is given, and the size asked is the output's."""
    size = (args.get("width"), args.get("height"))
    if not all(size) or picture.size == size:
        return picture
    return picture.resize((int(size[0]), int(size[1])), resample)


class Handler(JsonHandler):
    model = None

    def post_routes(self):
        return {"/generate_image": self.generate_image, "/generate_video": self.generate_video}

    def do_POST(self):
        with self.model.lock:
            super().do_POST()

    def refusal(self, error):
        # diffusers checks frame counts and kwargs with these (and sizes, which `run` names the field of); the request
        # asked for something the model cannot do.
        return BadRequest(f"the model cannot do what was asked: {error}") if isinstance(error, (TypeError, ValueError)) else None

    def client_gone(self):
        """Whether the service closed the connection: between a request and its answer nothing else may arrive on
        it, so a readable socket with nothing to read is a closed one. Costs the peer no wake-up, as a line would."""
        if not select.select([self.connection], [], [], 0)[0]:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def run(self, pipe, args, field, progress=True):
        """The pipeline's result; `field` is the request's field its size came from, named when the pipeline refuses the size."""
        asked = args.get("num_inference_steps", 50)
        check_steps(pipe.scheduler, asked)
        # An edit runs only its strength's share of the steps asked: progress counts those that run.
        steps = steps_run(pipe, args, asked)
        decodes = []
        # The VAE decoder's runs during this generation, logged when it stops: the evidence that nothing was decoded.
        decoder = getattr(getattr(pipe, "vae", None), "decoder", None)
        hook = decoder.register_forward_pre_hook(lambda module, inputs: decodes.append(1)) if decoder is not None else None

        def on_step(pipe, step, timestep, tensors):
            try:
                if progress:
                    self.line({"type": "progress", "step": step + 1, "steps": steps})
                elif self.client_gone():
                    raise BrokenPipeError
            except (BrokenPipeError, ConnectionResetError):
                raise ClientGone(step + 1) from None
            return tensors

        try:
            result = pipe(**args, callback_on_step_end=on_step)
        except ClientGone as gone:
            stopped = gone.step
        except ValueError as error:
            refusal = pipeline_size_refusal(error, field)
            if refusal is None:
                raise
            raise refusal from error
        else:
            return result
        finally:
            if hook is not None:
                hook.remove()
        # The exception that left the pipeline is gone, and with it the frames that held the latents and embeddings.
        free_memory(pipe)
        print(f"generation stopped at step {stopped} of {steps}: the client went away; the VAE decoder ran {len(decodes)} times", flush=True)
        raise BrokenPipeError
    def generate_image(self, payload):
        task = payload["task"]
        args = arguments(self.model, payload)
        args["num_images_per_prompt"] = payload.get("n", 1)
        if task in ("image2image", "inpainting"):
            args["image"] = at_size(read_picture(payload["images"][0]["data"], payload["images"][0]["field"]), args, Image.Resampling.LANCZOS)
        if task == "inpainting":
            # Nearest keeps the mask's edge where it was drawn rather than blurring it into a band half repainted.
            args["mask_image"] = at_size(read_mask(payload["mask"]["data"], payload["mask"]["field"]), args, Image.Resampling.NEAREST)
        pipe = self.model.pipeline(task)
        check_strength_steps(pipe, args, payload)
        start = time.perf_counter()
        result = self.run(pipe, args, size_field(payload), payload.get("progress", True))
        generated = time.perf_counter()
        for index, image in enumerate(result.images):
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            encoded = time.perf_counter()
            png = base64.b64encode(buffer.getvalue()).decode()
            # What each part of an image costs, in the model's log (bench/image-diffusers.ts reads it).
            print(f"image {index + 1} of {len(result.images)}: generated in {generated - start:.4f} s, PNG {encoded - generated:.6f} s,"
                  f" base64 {time.perf_counter() - encoded:.6f} s", flush=True)
            self.line({"type": "image", "index": index, "png": png})
            generated = time.perf_counter()

    def generate_video(self, payload):
        from diffusers.utils import export_to_video

        task = payload["task"]
        args = arguments(self.model, payload)
        fps = payload.get("fps") or args.pop("fps", None) or 16
        args.pop("fps", None)
        if task in ("image2video", "firstlastframe2video"):
            args["image"] = read_picture(payload["image"]["data"], payload["image"]["field"])
        if task == "firstlastframe2video":
            args["last_image"] = read_picture(payload["last_frame"]["data"], payload["last_frame"]["field"])
        pipe = self.model.pipeline(task)
        check_num_frames(pipe, args, payload)
        field = size_field(payload)
        for index in range(payload.get("n", 1)):
            frames = self.run(pipe, dict(args), field).frames[0]
            with tempfile.TemporaryDirectory() as folder:
                path = export_to_video(frames, os.path.join(folder, "video.mp4"), fps=fps)
                with open(path, "rb") as file:
                    self.line({"type": "video", "index": index, "data": base64.b64encode(file.read()).decode(), "mediaType": "video/mp4"})


def main():
    port, request = load_request()
    check_gpu_memory(request["family"])
    Handler.model = Model(request)
    print(f"serving {request['modelName']} ({request['modelPath']}) on port {port}, on {Handler.model.device}", flush=True)
    serve(Handler, port)


if __name__ == "__main__":
    main()
