"""The tiny random pipelines of the `tiny-random-image` and `tiny-random-video` catalogue entries, built from a
config with a fixed seed, as diffusers' own tests build theirs (tests/pipelines/*: get_dummy_components). Nothing is
downloaded: the tokenizer is a word-level one made here, since the tests' tiny tokenizers live on the hub."""
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

WORDS = ["[PAD]", "[UNK]", "[BOS]", "[EOS]"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]


def word_tokenizer(max_length):
    """Splits on whitespace and maps each letter-word to ids; the encoders only need ids of the right shape."""
    vocab = {word: index for index, word in enumerate(WORDS)}
    model = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    model.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=model, pad_token="[PAD]", unk_token="[UNK]", bos_token="[BOS]", eos_token="[EOS]", model_max_length=max_length
    )


def stable_diffusion_components(recipe):
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    seed = recipe.get("seed", 0)
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        block_out_channels=(4, 8), layers_per_block=1, sample_size=32, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, norm_num_groups=2,
    )
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False, set_alpha_to_one=False)
    torch.manual_seed(seed)
    vae = AutoencoderKL(
        block_out_channels=[4, 8], in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"], latent_channels=4, norm_num_groups=2,
    )
    torch.manual_seed(seed)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        bos_token_id=2, eos_token_id=3, hidden_size=32, intermediate_size=64, layer_norm_eps=1e-05, num_attention_heads=8,
        num_hidden_layers=3, pad_token_id=0, vocab_size=len(WORDS),
    ))
    return {"unet": unet, "scheduler": scheduler, "vae": vae, "text_encoder": text_encoder, "tokenizer": word_tokenizer(77),
            "safety_checker": None, "feature_extractor": None, "image_encoder": None, "requires_safety_checker": False}


def wan_components(recipe):
    from diffusers import AutoencoderKLWan, FlowMatchEulerDiscreteScheduler, WanTransformer3DModel
    from transformers import UMT5Config, UMT5EncoderModel

    seed = recipe.get("seed", 0)
    torch.manual_seed(seed)
    vae = AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1, temperal_downsample=[False, True, True])
    torch.manual_seed(seed)
    text_encoder = UMT5EncoderModel(UMT5Config(d_model=32, d_ff=37, d_kv=8, num_heads=4, num_layers=2, vocab_size=len(WORDS), pad_token_id=0, eos_token_id=3))
    torch.manual_seed(seed)
    transformer = WanTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=16, out_channels=16, text_dim=32,
        freq_dim=256, ffn_dim=32, num_layers=2, cross_attn_norm=True, qk_norm="rms_norm_across_heads", rope_max_seq_len=32,
    )
    return {"vae": vae, "scheduler": FlowMatchEulerDiscreteScheduler(shift=7.0), "text_encoder": text_encoder,
            "tokenizer": word_tokenizer(512), "transformer": transformer}


RECIPES = {"tiny-random-image": stable_diffusion_components, "tiny-random-video": wan_components}
