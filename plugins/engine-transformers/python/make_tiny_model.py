"""Makes the random-weight models of the engine's generated catalogue specs (tiny-random-llm, tiny-random-embedding,
tiny-random-rerank, tiny-random-ocr and tiny-random-vlm as safetensors), with
transformers itself building them from a config: no download, a fixed seed, so the same recipe always gives the same
files. The tokenizers are byte-level BPE with no merges (one token per byte, built here, nothing trained), so any
text round-trips: the chat model's with a ChatML chat template (Qwen's tool section when given tools), the BERT models' with [CLS] and [SEP] around each
text or pair. Replies are gibberish, vectors and scores mean nothing. The OCR model is GOT-OCR 2.0 in transformers'
own layout (GotOcr2ForConditionalGeneration and its processor, as stepfun-ai/GOT-OCR-2.0-hf publishes it), shrunk. The
vision-language model is LLaVA (a CLIP vision tower, a projector and a llama) with its processor and a ChatML template
that places each picture's image tokens where the message shows it; tiny-random-llava-for-vllm is the same, shaped
for vLLM's CPU build (its tests make it with vLLM's own environment).

Usage: make_tiny_model.py RECIPE NAME=PATH...   (each file of the spec, by name, and where to write it)
"""
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    BertModel,
    CLIPImageProcessorPil,
    CLIPVisionConfig,
    GotOcr2Config,
    GotOcr2ForConditionalGeneration,
    GotOcr2ImageProcessorPil,
    GotOcr2Processor,
    LlamaConfig,
    LlamaForCausalLM,
    LlavaConfig,
    LlavaForConditionalGeneration,
    LlavaProcessor,
    PreTrainedTokenizerFast,
)

SEED = 42
# With tools, a system turn lists them and shows the call Qwen's templates teach, <tool_call>{json}</tool_call>, so
# that tools reach the prompt and the service reads the model's calls in that format (plain ChatML without tools).
CHATML = (
    "{% if tools %}{{ '<|im_start|>system\\n# Tools\\n<tools>' }}{% for tool in tools %}{{ '\\n' + (tool | tojson) }}{% endfor %}"
    "{{ '\\n</tools>\\nCall one as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call><|im_end|>\\n' }}{% endif %}"
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# ChatML for messages whose content is text or a list of text and image parts, as processors' templates take them.
VISION_CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{{ '<image>' }}{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "{{ '<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def byte_level():
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tokenizer = Tokenizer(models.BPE(vocab={symbol: index for index, symbol in enumerate(alphabet)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def byte_level_tokenizer():
    fast = PreTrainedTokenizerFast(tokenizer_object=byte_level(), eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=["<|im_start|>"])
    fast.chat_template = CHATML
    return fast


def bert_tokenizer():
    tokenizer = byte_level()
    tokenizer.add_special_tokens(["[PAD]", "[CLS]", "[SEP]"])
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", model_max_length=128)


def tiny_random_bert(kind):
    def make(folder):
        tokenizer = bert_tokenizer()
        config = BertConfig(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=128,
            pad_token_id=tokenizer.pad_token_id,
            num_labels=1,
        )
        torch.manual_seed(SEED)
        kind(config).save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)

    return make


def tiny_random_llama(folder):
    tokenizer = byte_level_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    # Older transformers keep the template only inside tokenizer_config.json; newer ones also read this file.
    (folder / "chat_template.jinja").write_text(CHATML)


def printable_tokenizer():
    """Byte-level BPE over printable ASCII, newline and space only, with GOT-OCR's special tokens: what the OCR prompt
    needs, and what the random model writes back stays readable (no stray bytes of no character)."""
    symbols = [chr(code) for code in range(33, 127)] + ["\u0120", "\u010a"]  # byte-level's space and newline
    tokenizer = Tokenizer(models.BPE(vocab={symbol: index for index, symbol in enumerate(symbols)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=["<|im_start|>", "<img>", "</img>", "<imgpad>"]
    )


def tiny_random_got_ocr2(folder):
    tokenizer = printable_tokenizer()
    # The processor puts 256 image tokens per picture in the prompt (GOT-OCR's own count): a 256-pixel picture in
    # 4-pixel patches makes a 64x64 grid, which the projector's two strided convolutions bring down to 16x16.
    vision = {"hidden_size": 16, "output_channels": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "image_size": 256, "patch_size": 4, "window_size": 8, "global_attn_indexes": [1], "mlp_dim": 32}
    text = {
        "model_type": "qwen2",
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4096,
        "bos_token_id": None,
        "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id,
    }
    config = GotOcr2Config(vision_config=vision, text_config=text, image_token_index=tokenizer.convert_tokens_to_ids("<imgpad>"), image_seq_length=256)
    torch.manual_seed(SEED)
    model = GotOcr2ForConditionalGeneration(config)
    # transformers starts the vision tower near zero (GOT's initializer_range is 1e-10), so every picture would read
    # the same; wider random weights make what the model writes depend on the picture and the prompt.
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0, 0.5)
    model.save_pretrained(folder, safe_serialization=True)
    GotOcr2Processor(image_processor=GotOcr2ImageProcessorPil(size={"height": 256, "width": 256}), tokenizer=tokenizer).save_pretrained(folder)


def tiny_random_llava(folder, head_dim=None):
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=byte_level(), eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=["<|im_start|>", "<image>"])
    tokenizer.chat_template = VISION_CHATML
    # 32-pixel pictures in 8-pixel patches: 16 image tokens per picture (CLIP's class token is dropped, "default").
    vision = CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8, projection_dim=16)
    text = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=head_dim,
        max_position_embeddings=2048,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    config = LlavaConfig(
        vision_config=vision, text_config=text, image_token_index=tokenizer.convert_tokens_to_ids("<image>"), vision_feature_select_strategy="default", image_seq_length=16
    )
    torch.manual_seed(SEED)
    LlavaForConditionalGeneration(config).save_pretrained(folder, safe_serialization=True)
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = LlavaProcessor(image_processor=image_processor, tokenizer=tokenizer, patch_size=8, vision_feature_select_strategy="default", chat_template=VISION_CHATML, num_additional_image_tokens=1)
    processor.save_pretrained(folder)


def tiny_random_llava_for_vllm(folder):
    """The LLaVA above with its text heads 32 wide, the smallest vLLM's CPU attention takes, and its weights named as
    the hub's LLaVA checkpoints (llava-hf) name them, the vision tower's under `vision_model.`, which is what vLLM loads."""
    tiny_random_llava(folder, head_dim=32)
    weights = folder / "model.safetensors"
    tensors = load_file(weights)
    tower = "vision_tower."
    save_file({(tower + "vision_model." + name[len(tower):] if name.startswith(tower) else name): tensor for name, tensor in tensors.items()}, weights, metadata={"format": "pt"})


RECIPES = {
    "tiny-random-bert-embedding": tiny_random_bert(BertModel),
    "tiny-random-bert-reranker": tiny_random_bert(BertForSequenceClassification),
    "tiny-random-got-ocr2": tiny_random_got_ocr2,
    "tiny-random-llama": tiny_random_llama,
    "tiny-random-llava": tiny_random_llava,
    "tiny-random-llava-for-vllm": tiny_random_llava_for_vllm,
}


def main():
    recipe, targets = sys.argv[1], dict(argument.split("=", 1) for argument in sys.argv[2:])
    if recipe not in RECIPES:
        sys.exit(f"unknown recipe {recipe}; known: {', '.join(RECIPES)}")
    with tempfile.TemporaryDirectory() as made:
        RECIPES[recipe](Path(made))
        for name, target in targets.items():
            source = Path(made) / name
            if not source.is_file():
                sys.exit(f"the recipe {recipe} made no {name}; it made {', '.join(sorted(p.name for p in Path(made).iterdir()))}")
            shutil.copyfile(source, target)
    print(f"made {recipe}: {', '.join(targets)}", flush=True)


main()
