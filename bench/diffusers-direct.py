"""The same generation the benchmark asks of the service, with diffusers called directly in this process: the tiny
random pipeline the engine builds, the same size, steps, seed and torch threads. Prints one JSON line: the seconds each
generation took."""
import json
import sys
import time

import torch

sys.path.insert(0, sys.argv[1])
from diffusers import StableDiffusionPipeline  # noqa: E402
from tiny_pipelines import RECIPES  # noqa: E402

size, steps, threads, repeats = (int(value) for value in sys.argv[2:6])
torch.set_num_threads(threads)
pipe = StableDiffusionPipeline(**{k: v for k, v in RECIPES["tiny-random-image"]({"seed": 0}).items() if k != "image_encoder"})
pipe.set_progress_bar_config(disable=True)
times = []
for index in range(repeats + 1):
    start = time.perf_counter()
    pipe(prompt="a lighthouse at dawn", width=size, height=size, num_inference_steps=steps, generator=torch.Generator().manual_seed(index),
         callback_on_step_end=lambda pipe, step, timestep, tensors: tensors)
    if index > 0:
        times.append(time.perf_counter() - start)
print(json.dumps(times))
