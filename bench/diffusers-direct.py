"""The same generation the benchmark asks of the service, with diffusers called directly in this process: the tiny
random pipeline the engine builds, the same size, steps, guidance scale and torch threads, and the PNG and base64 encoding the
engine's program does. It loads the pipeline once, then reads one seed a line on stdin and answers each with one JSON
line: the seconds the generation, the PNG encoding and the base64 encoding took, so that the benchmark can alternate
these generations with its own through the service."""
import base64
import io
import json
import sys
import time

import torch

sys.path.insert(0, sys.argv[1])
from diffusers import StableDiffusionPipeline  # noqa: E402
from tiny_pipelines import RECIPES  # noqa: E402

size, steps, threads = (int(value) for value in sys.argv[2:5])
guidance = float(sys.argv[5])
torch.set_num_threads(threads)
pipe = StableDiffusionPipeline(**{k: v for k, v in RECIPES["tiny-random-image"]({"seed": 0}).items() if k != "image_encoder"})
pipe.set_progress_bar_config(disable=True)
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    start = time.perf_counter()
    image = pipe(prompt="a lighthouse at dawn", width=size, height=size, num_inference_steps=steps, guidance_scale=guidance, generator=torch.Generator().manual_seed(int(line)),
                 callback_on_step_end=lambda pipe, step, timestep, tensors: tensors).images[0]
    generated = time.perf_counter()
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    encoded = time.perf_counter()
    base64.b64encode(buffer.getvalue()).decode()
    print(json.dumps({"generate_s": generated - start, "png_s": encoded - generated, "base64_s": time.perf_counter() - encoded}), flush=True)
