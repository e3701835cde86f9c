"""Writes `tiny-random-flux`: a FLUX.1 model in one GGUF file, the diffusion transformer, the CLIP-L text encoder and the
VAE decoder, with random weights from a fixed seed, under the tensor names stable-diffusion.cpp loads. sd.cpp reads the
transformer's depth and width from its tensors, and the VAE decoder's width from its first convolution, so both are
made tiny (one double and one single block, one 128-wide attention head; a 32-channel decoder); CLIP-L has a fixed
shape in sd.cpp and is kept whole, quantized to Q4_0 (about 70 MB). No T5: sd.cpp gives FLUX zeros in its place.
Draws noise; for trying and testing the engine. Usage: python tiny_flux.py OUTPUT.gguf [--without-vae-encoder |
--diffusion-only | --vae | --clip-l]; the first writes the whole model but the VAE encoder (a file that cannot edit
pictures), each other option one part alone, under the bare names of the files published apart: the transformer as
in city96's FLUX.1 GGUF files (which need a VAE and text encoders beside them), the VAE as in FLUX.1's ae.safetensors,
CLIP-L as in comfyanonymous/flux_text_encoders' clip_l.safetensors."""
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFWriter
from gguf.quants import quantize

HIDDEN = 128  # one head: sd.cpp's FLUX rotary embedding fixes the head size at 128
MLP = HIDDEN * 4
CONTEXT = 4096  # T5-XXL's width, which the transformer's txt_in reads
CLIP = {"hidden": 768, "ffn": 3072, "layers": 12, "vocab": 49408, "positions": 77}
VAE_CH, VAE_MULT, Z = 32, (1, 2, 4, 4), 16
ENCODER_CH = 128


class Weights:
    def __init__(self, path):
        self.rng = np.random.default_rng(0)
        self.writer = GGUFWriter(path, "tiny-random-flux")
        self.writer.add_name("tiny-random-flux")

    def ones(self, name, size):
        self.writer.add_tensor(name, np.ones(size, dtype=np.float32))

    def zeros(self, name, size):
        self.writer.add_tensor(name, np.zeros(size, dtype=np.float32))

    def linear(self, name, out_features, in_features, kind=GGMLQuantizationType.F16, bias=True):
        weight = self.rng.normal(0, 0.02, (out_features, in_features)).astype(np.float32)
        if kind == GGMLQuantizationType.F16:
            self.writer.add_tensor(f"{name}.weight", weight.astype(np.float16))
        else:
            self.writer.add_tensor(f"{name}.weight", quantize(weight, kind), raw_dtype=kind)
        if bias:
            self.zeros(f"{name}.bias", out_features)

    def conv(self, name, out_channels, in_channels, kernel):
        fan_in = in_channels * kernel * kernel
        weight = self.rng.normal(0, 1 / np.sqrt(fan_in), (out_channels, in_channels, kernel, kernel))
        self.writer.add_tensor(f"{name}.weight", weight.astype(np.float16))
        self.zeros(f"{name}.bias", out_channels)

    def norm(self, name, size):
        self.ones(f"{name}.weight", size)
        self.zeros(f"{name}.bias", size)

    def close(self):
        self.writer.write_header_to_file()
        self.writer.write_kv_data_to_file()
        self.writer.write_tensors_to_file()
        self.writer.close()


def transformer(w, prefix="model.diffusion_model."):
    w.linear(prefix + "img_in", HIDDEN, 64)
    w.linear(prefix + "txt_in", HIDDEN, CONTEXT)
    for embedder, width in (("time_in", 256), ("vector_in", CLIP["hidden"])):
        w.linear(f"{prefix}{embedder}.in_layer", HIDDEN, width)
        w.linear(f"{prefix}{embedder}.out_layer", HIDDEN, HIDDEN)
    block = prefix + "double_blocks.0."
    for stream in ("img", "txt"):
        w.linear(f"{block}{stream}_mod.lin", 6 * HIDDEN, HIDDEN)
        w.linear(f"{block}{stream}_attn.qkv", 3 * HIDDEN, HIDDEN)
        w.ones(f"{block}{stream}_attn.norm.query_norm.scale", HIDDEN)
        w.ones(f"{block}{stream}_attn.norm.key_norm.scale", HIDDEN)
        w.linear(f"{block}{stream}_attn.proj", HIDDEN, HIDDEN)
        w.linear(f"{block}{stream}_mlp.0", MLP, HIDDEN)
        w.linear(f"{block}{stream}_mlp.2", HIDDEN, MLP)
    block = prefix + "single_blocks.0."
    w.linear(block + "linear1", 3 * HIDDEN + MLP, HIDDEN)
    w.linear(block + "linear2", HIDDEN, HIDDEN + MLP)
    w.ones(block + "norm.query_norm.scale", HIDDEN)
    w.ones(block + "norm.key_norm.scale", HIDDEN)
    w.linear(block + "modulation.lin", 3 * HIDDEN, HIDDEN)
    w.linear(prefix + "final_layer.linear", 64, HIDDEN)
    w.linear(prefix + "final_layer.adaLN_modulation.1", 2 * HIDDEN, HIDDEN)


def clip_l(w, prefix="text_encoders.clip_l.transformer.text_model."):
    q4 = GGMLQuantizationType.Q4_0
    token = w.rng.normal(0, 0.02, (CLIP["vocab"], CLIP["hidden"])).astype(np.float32)
    w.writer.add_tensor(prefix + "embeddings.token_embedding.weight", quantize(token, q4), raw_dtype=q4)
    w.writer.add_tensor(prefix + "embeddings.position_embedding.weight", w.rng.normal(0, 0.01, (CLIP["positions"], CLIP["hidden"])).astype(np.float32))
    for layer in range(CLIP["layers"]):
        block = f"{prefix}encoder.layers.{layer}."
        for projection in ("q_proj", "k_proj", "v_proj", "out_proj"):
            w.linear(block + "self_attn." + projection, CLIP["hidden"], CLIP["hidden"], q4)
        w.norm(block + "layer_norm1", CLIP["hidden"])
        w.norm(block + "layer_norm2", CLIP["hidden"])
        w.linear(block + "mlp.fc1", CLIP["ffn"], CLIP["hidden"], q4)
        w.linear(block + "mlp.fc2", CLIP["hidden"], CLIP["ffn"], q4)
    w.norm(prefix + "final_layer_norm", CLIP["hidden"])


def resnet(w, name, channels_in, channels_out):
    w.norm(name + ".norm1", channels_in)
    w.conv(name + ".conv1", channels_out, channels_in, 3)
    w.norm(name + ".norm2", channels_out)
    w.conv(name + ".conv2", channels_out, channels_out, 3)
    if channels_in != channels_out:
        w.conv(name + ".nin_shortcut", channels_out, channels_in, 1)


def vae_encoder(w, prefix="first_stage_model.encoder."):
    """sd.cpp builds the encoder at the full width of FLUX's (128 channels), whatever the decoder's: about 34M weights."""
    channels = ENCODER_CH
    w.conv(prefix + "conv_in", channels, 3, 3)
    for level, mult in enumerate(VAE_MULT):
        out = ENCODER_CH * mult
        for index in range(2):
            resnet(w, f"{prefix}down.{level}.block.{index}", channels, out)
            channels = out
        if level != len(VAE_MULT) - 1:
            w.conv(f"{prefix}down.{level}.downsample.conv", channels, channels, 3)
    resnet(w, prefix + "mid.block_1", channels, channels)
    w.norm(prefix + "mid.attn_1.norm", channels)
    for projection in ("q", "k", "v", "proj_out"):
        w.conv(f"{prefix}mid.attn_1.{projection}", channels, channels, 1)
    resnet(w, prefix + "mid.block_2", channels, channels)
    w.norm(prefix + "norm_out", channels)
    w.conv(prefix + "conv_out", 2 * Z, channels, 3)


def vae_decoder(w, prefix="first_stage_model.decoder."):
    channels = VAE_CH * VAE_MULT[-1]
    w.conv(prefix + "conv_in", channels, Z, 3)
    resnet(w, prefix + "mid.block_1", channels, channels)
    w.norm(prefix + "mid.attn_1.norm", channels)
    for projection in ("q", "k", "v", "proj_out"):
        w.conv(f"{prefix}mid.attn_1.{projection}", channels, channels, 1)
    resnet(w, prefix + "mid.block_2", channels, channels)
    for level in reversed(range(len(VAE_MULT))):
        out = VAE_CH * VAE_MULT[level]
        for index in range(3):
            resnet(w, f"{prefix}up.{level}.block.{index}", channels, out)
            channels = out
        if level != 0:
            w.conv(f"{prefix}up.{level}.upsample.conv", channels, channels, 3)
    w.norm(prefix + "norm_out", channels)
    w.conv(prefix + "conv_out", 3, channels, 3)


def main():
    weights = Weights(sys.argv[1])
    if "--diffusion-only" in sys.argv:
        transformer(weights, prefix="")
    elif "--vae" in sys.argv:
        vae_encoder(weights, prefix="encoder.")
        vae_decoder(weights, prefix="decoder.")
    elif "--clip-l" in sys.argv:
        clip_l(weights, prefix="text_model.")
    else:
        transformer(weights)
        clip_l(weights)
        if "--without-vae-encoder" not in sys.argv:
            vae_encoder(weights)
        vae_decoder(weights)
    weights.close()


if __name__ == "__main__":
    main()
