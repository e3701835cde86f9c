"""Writes a tiny random pipeline of the diffusers engine (plugins/engine-diffusers/python/tiny_pipelines.py) as the
folder `save_pretrained` makes, the layout of a diffusers repository on the hub (model_index.json, one folder per
component, safetensors weights), for the tests that serve it from the local hub. Usage: save_tiny_pipeline.py RECIPE
FOLDER [RECIPE FOLDER ...] (one process for several, as importing torch and diffusers takes longest)."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "plugins", "engine-diffusers", "python"))
from tiny_pipelines import RECIPES  # noqa: E402

PIPELINES = {"tiny-random-image": "StableDiffusionPipeline", "tiny-random-video": "WanPipeline"}


def main():
    import diffusers

    for recipe, folder in zip(sys.argv[1::2], sys.argv[2::2]):
        components = RECIPES[recipe]({"recipe": recipe, "seed": 0})
        cls = getattr(diffusers, PIPELINES[recipe])
        accepted = cls.__init__.__code__.co_varnames
        cls(**{k: v for k, v in components.items() if k in accepted}).save_pretrained(folder, safe_serialization=True)


if __name__ == "__main__":
    main()
