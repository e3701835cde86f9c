"""Writes tiny-random-piper: a Piper voice in Piper's own format (an ONNX VITS graph and its .onnx.json) with random
weights (150 thousand parameters, three speakers). Piper's training code builds the model (piper.train.vits,
with every size shrunk and a fixed seed) and it is exported as Piper's exporter (piper.train.export_onnx) exports a
trained checkpoint: the same inference graph, inputs, outputs, opset and dynamic axes. That exporter reads a
Lightning checkpoint, which would need Piper's whole training stack; the model needs only PyTorch. PyTorch's
TorchScript-based exporter is asked for by name, as its newer default cannot trace VITS's data-dependent lengths.

    python tiny_random_piper.py VOICE.onnx VOICE.onnx.json
"""
import json
import sys

import torch
from piper.config import PhonemeType, PiperConfig
from piper.phoneme_ids import DEFAULT_PHONEME_ID_MAP
from piper.train.vits.models import SynthesizerTrn

SPEAKERS = ["p225", "p226", "p227"]
NUM_SYMBOLS = 256
SAMPLE_RATE = 16000


def build():
    torch.manual_seed(1234)
    model = SynthesizerTrn(
        n_vocab=NUM_SYMBOLS, spec_channels=513, segment_size=32, inter_channels=16, hidden_channels=16,
        filter_channels=32, n_heads=2, n_layers=1, kernel_size=3, p_dropout=0.0, resblock="2",
        resblock_kernel_sizes=(3,), resblock_dilation_sizes=((1, 2),), upsample_rates=(8, 8, 4),
        upsample_initial_channel=16, upsample_kernel_sizes=(16, 16, 8), n_speakers=len(SPEAKERS), gin_channels=8,
    ).eval()
    with torch.no_grad():
        model.dec.remove_weight_norm()
    return model


def export(model, path):
    def infer_forward(text, text_lengths, scales, sid=None):
        return model.infer(text, text_lengths, noise_scale=scales[0], length_scale=scales[1], noise_scale_w=scales[2], sid=sid)[0].unsqueeze(1)

    model.forward = infer_forward
    sequences = torch.randint(low=0, high=NUM_SYMBOLS, size=(1, 50), dtype=torch.long)
    dummy_input = (sequences, torch.LongTensor([sequences.size(1)]), torch.FloatTensor([0.667, 1.0, 0.8]), torch.LongTensor([0]))
    torch.onnx.export(
        model=model, args=dummy_input, f=path, verbose=False, opset_version=15, dynamo=False,
        input_names=["input", "input_lengths", "scales", "sid"], output_names=["output"],
        dynamic_axes={"input": {0: "batch_size", 1: "phonemes"}, "input_lengths": {0: "batch_size"}, "output": {0: "batch_size", 2: "time"}},
    )


def main():
    onnx_path, config_path = sys.argv[1:3]
    export(build(), onnx_path)
    config = PiperConfig(
        num_symbols=NUM_SYMBOLS, num_speakers=len(SPEAKERS), sample_rate=SAMPLE_RATE, espeak_voice="en-us",
        phoneme_id_map=DEFAULT_PHONEME_ID_MAP, phoneme_type=PhonemeType.ESPEAK, piper_version="1.8.0",
        speaker_id_map={name: index for index, name in enumerate(SPEAKERS)},
        # No sampling noise: the same text and speaker always give the same audio, so tests can tell speakers apart.
        noise_scale=0.0, noise_w_scale=0.0,
    )
    with open(config_path, "w", encoding="utf-8") as file:
        json.dump(config.to_dict(), file, ensure_ascii=False, indent=2)


if __name__ == "__main__":
    main()
