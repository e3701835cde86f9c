"""The generation the benchmark asks of the service, with stable-diffusion-cpp-python called directly in this process:
the same GGUF, size, steps, seed, guidance and threads as the engine gives it. Loads once, then for each seed read on
stdin generates one image (encoded as PNG, as the engine does) and prints the seconds it took, after `== ` (sd.cpp logs
to stdout as well, as in the engine), so the benchmark can alternate it with requests to the service. Usage: python sdcpp-direct.py MODEL.gguf SIZE STEPS THREADS"""
import io
import json
import sys
import time

from stable_diffusion_cpp import StableDiffusion

model, size, steps, threads = sys.argv[1], *(int(value) for value in sys.argv[2:5])
# With the VAE encoder, as the engine loads a model that can edit pictures (tiny-random-flux can).
sd = StableDiffusion(model_path=model, n_threads=threads, vae_decode_only=False)
print("== ready", flush=True)
for line in sys.stdin:
    start = time.perf_counter()
    images = sd.generate_image(prompt="a lighthouse at dawn", width=size, height=size, sample_steps=steps, seed=int(line), cfg_scale=1.0, guidance=3.5,
                               progress_callback=lambda step, total, seconds: None)
    images[0].save(io.BytesIO(), format="PNG")
    print(f"== {json.dumps(time.perf_counter() - start)}", flush=True)
