"""Transformers as the popular libraries write them, for onnxc's model tests.

transformers_zoo.py holds models written to look like the popular implementations; this file
takes the implementations themselves: HF `transformers` (4.40, the last line that runs on
Debian's torch 1.13) built from small random-weight configs, and torch's own nn.Transformer*
and nn.MultiheadAttention. Nothing is downloaded: every config is written here.

Each builder returns (module, example inputs, input descriptions, {output: {axis: dim}}, test
shapes), as build_models.TORCH_FAMILIES expects. The modules return one tensor: the wrappers
below unpack the libraries' output tuples.
"""

import math

import torch
from torch import nn

from transformers_zoo import MAX_POSITIONS

VOCAB = 384
SEQ_SHAPES = [{"batch": 1, "seq": 7}, {"batch": 2, "seq": 16}]
ENCDEC_SHAPES = [{"batch": 1, "src_seq": 7, "tgt_seq": 5}, {"batch": 2, "src_seq": 16, "tgt_seq": 11}]


def ids_input(name, seq_dim="seq", vocab=VOCAB, low=0):
    return {"name": name, "dtype": "int64", "shape": ["batch", seq_dim],
            "generator": {"kind": "token_ids", "low": low, "high": vocab}}


def mask_input(name, seq_dim="seq"):
    return {"name": name, "dtype": "int64", "shape": ["batch", seq_dim], "generator": {"kind": "attention_mask"}}


def float_input(name, shape):
    return {"name": name, "dtype": "float32", "shape": shape, "generator": {"kind": "normal"}}


def example_ids(batch=2, seq=5, vocab=VOCAB):
    return torch.randint(3, vocab, (batch, seq))


def example_mask(batch=2, seq=5):
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[1, -2:] = 0
    return mask


class FirstOutput(nn.Module):
    """Calls a HF model with positional tensors bound to keyword names and returns output [0]."""

    def __init__(self, model: nn.Module, names: list):
        super().__init__()
        self.model = model
        self.names = names

    def forward(self, *tensors):
        return self.model(**dict(zip(self.names, tensors)), return_dict=False)[0]


def hf(model_class, config, names):
    import transformers
    model = getattr(transformers, model_class)(config)
    return FirstOutput(model, names)


def hf_config(config_class, **fields):
    import transformers
    return getattr(transformers, config_class)(**fields)


# ---- HF transformers ---------------------------------------------------------------------------

def hf_gpt2():
    cfg = hf_config("GPT2Config", vocab_size=VOCAB, n_positions=MAX_POSITIONS, n_embd=64, n_layer=2, n_head=4,
                    use_cache=False)
    model = hf("GPT2LMHeadModel", cfg, ["input_ids"])
    return model, (example_ids(),), [ids_input("input_ids")], {"logits": {0: "batch", 1: "seq"}}, SEQ_SHAPES


GPT2_LAYERS = 2
GPT2_HEADS = 4
GPT2_HEAD_DIM = 16
# The KV-cache model's shapes: an empty cache (past 0, the prompt), one decode step after five
# tokens, and a cache far longer than anything a pass probes. One compiled .so serves them all.
PAST_SHAPES = [{"batch": 1, "seq": 7, "past": 0}, {"batch": 2, "seq": 1, "past": 5},
               {"batch": 1, "seq": 3, "past": 300}]


class Gpt2WithPast(nn.Module):
    """GPT2LMHeadModel with its cache as flat tensors, as a generation loop feeds it:
    (input_ids, attention_mask, past_key_0, past_value_0, ...) -> (logits, present_key_0,
    present_value_0, ...). The mask covers the cache and the new tokens (past + seq)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, *past):
        cache = tuple((past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2))
        logits, presents = self.model(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache,
                                      use_cache=True, return_dict=False)[:2]
        return (logits,) + tuple(t for pair in presents for t in pair)


def hf_gpt2_past():
    import transformers
    cfg = hf_config("GPT2Config", vocab_size=VOCAB, n_positions=MAX_POSITIONS, n_embd=GPT2_HEADS * GPT2_HEAD_DIM,
                    n_layer=GPT2_LAYERS, n_head=GPT2_HEADS, use_cache=True)
    model = Gpt2WithPast(transformers.GPT2LMHeadModel(cfg))
    batch, seq, past = 2, 5, 3
    example = [example_ids(batch, seq), example_mask(batch, past + seq)]
    inputs = [ids_input("input_ids"), mask_input("attention_mask", "past+seq")]
    outputs = {"logits": {0: "batch", 1: "seq"}}
    for layer in range(GPT2_LAYERS):
        for kind in ("key", "value"):
            example.append(torch.randn(batch, GPT2_HEADS, past, GPT2_HEAD_DIM))
            inputs.append(float_input(f"past_{kind}_{layer}", ["batch", GPT2_HEADS, "past", GPT2_HEAD_DIM]))
            outputs[f"present_{kind}_{layer}"] = {0: "batch", 2: "past+seq"}
    return model, tuple(example), inputs, outputs, PAST_SHAPES


class LlamaWithPast(nn.Module):
    """LlamaForCausalLM with its cache as flat tensors, as a generation loop feeds it:
    (input_ids, attention_mask, position_ids, past_key_0, past_value_0, ...) -> (logits,
    present_key_0, present_value_0, ...). The mask covers the cache and the new tokens
    (past + seq); the cache has the key/value heads (grouped-query attention)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask, position_ids, *past):
        cache = tuple((past[2 * i], past[2 * i + 1]) for i in range(len(past) // 2))
        logits, presents = self.model(input_ids=input_ids, attention_mask=attention_mask, position_ids=position_ids,
                                      past_key_values=cache, use_cache=True, return_dict=False)[:2]
        if hasattr(presents, "to_legacy_cache"):
            presents = presents.to_legacy_cache()
        return (logits,) + tuple(t for pair in presents for t in pair)


LLAMA_KV_HEADS = 2


def hf_llama_past():
    import transformers
    cfg = hf_config("LlamaConfig", vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=LLAMA_KV_HEADS, max_position_embeddings=MAX_POSITIONS,
                    use_cache=True, tie_word_embeddings=False)
    model = LlamaWithPast(transformers.LlamaForCausalLM(cfg))
    batch, seq, past = 2, 5, 3
    example = [example_ids(batch, seq), torch.ones(batch, past + seq, dtype=torch.int64),
               torch.arange(past, past + seq).expand(batch, seq)]
    inputs = [ids_input("input_ids"), mask_input("attention_mask", "past+seq"),
              {"name": "position_ids", "dtype": "int64", "shape": ["batch", "seq"],
               "generator": {"kind": "positions", "offset": "past"}}]
    outputs = {"logits": {0: "batch", 1: "seq"}}
    for layer in range(2):
        for kind in ("key", "value"):
            example.append(torch.randn(batch, LLAMA_KV_HEADS, past, 16))
            inputs.append(float_input(f"past_{kind}_{layer}", ["batch", LLAMA_KV_HEADS, "past", 16]))
            outputs[f"present_{kind}_{layer}"] = {0: "batch", 2: "past+seq"}
    return model, tuple(example), inputs, outputs, PAST_SHAPES


def encoder_with_mask(model_class, config):
    model = hf(model_class, config, ["input_ids", "attention_mask"])
    inputs = [ids_input("input_ids"), mask_input("attention_mask")]
    return (model, (example_ids(), example_mask()), inputs, {"last_hidden_state": {0: "batch", 1: "seq"}},
            SEQ_SHAPES)


def hf_bert():
    return encoder_with_mask("BertModel", hf_config(
        "BertConfig", vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=MAX_POSITIONS))


def hf_roberta():
    # RoBERTa's positions start after padding_idx + 1.
    return encoder_with_mask("RobertaModel", hf_config(
        "RobertaConfig", vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=MAX_POSITIONS + 2))


def hf_distilbert():
    return encoder_with_mask("DistilBertModel", hf_config(
        "DistilBertConfig", vocab_size=VOCAB, dim=64, n_layers=2, n_heads=4, hidden_dim=128,
        max_position_embeddings=MAX_POSITIONS))


def hf_deberta_v2():
    return encoder_with_mask("DebertaV2Model", hf_config(
        "DebertaV2Config", vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=128, max_position_embeddings=MAX_POSITIONS, relative_attention=True,
        position_buckets=32, max_relative_positions=MAX_POSITIONS, pos_att_type=["p2c", "c2p"],
        norm_rel_ebd="layer_norm", share_att_key=True))


def hf_clip_text():
    return encoder_with_mask("CLIPTextModel", hf_config(
        "CLIPTextConfig", vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=MAX_POSITIONS))


def hf_llama(with_mask: bool):
    cfg = hf_config("LlamaConfig", vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=MAX_POSITIONS,
                    use_cache=False)
    if not with_mask:
        model = hf("LlamaModel", cfg, ["input_ids"])
        return model, (example_ids(),), [ids_input("input_ids")], {"last_hidden_state": {0: "batch", 1: "seq"}}, \
            SEQ_SHAPES
    return encoder_with_mask("LlamaModel", cfg)


def encoder_decoder(model_class, config):
    names = ["input_ids", "attention_mask", "decoder_input_ids"]
    model = hf(model_class, config, names)
    inputs = [ids_input("input_ids", "src_seq"), mask_input("attention_mask", "src_seq"),
              ids_input("decoder_input_ids", "tgt_seq")]
    example = (example_ids(2, 6), example_mask(2, 6), example_ids(2, 5))
    return model, example, inputs, {"last_hidden_state": {0: "batch", 1: "tgt_seq"}}, ENCDEC_SHAPES


def hf_bart():
    return encoder_decoder("BartModel", hf_config(
        "BartConfig", vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, max_position_embeddings=MAX_POSITIONS,
        use_cache=False))


# ---- BART for generation: the encoder once, the decoder one step at a time ----------------------
# Three views of one random-weight BartForConditionalGeneration (every builder makes it from the
# same seed, and the families share their seed, so the three files carry the same weights): the
# encoder, which also projects its output to each decoder layer's cross-attention key and value;
# the decoder step, which takes its self-attention cache and those cross K/V as inputs; and the
# decoder without a cache, which re-reads the encoder's hidden states. Names follow optimum's
# export (past_key_values.N.decoder.key, past_key_values.N.encoder.key, present.N.decoder.key).
BART_LAYERS = 2
BART_HEADS = 4
BART_HEAD_DIM = 16
BART_SEED = 2014
SEQ2SEQ_PAST_SHAPES = [{"batch": 1, "seq": 4, "past": 0, "src_seq": 7},
                       {"batch": 2, "seq": 1, "past": 5, "src_seq": 16},
                       {"batch": 1, "seq": 2, "past": 200, "src_seq": 9}]
SEQ2SEQ_SHAPES = [{"batch": 1, "seq": 4, "src_seq": 7}, {"batch": 2, "seq": 11, "src_seq": 16}]


def bart_lm():
    import transformers
    torch.manual_seed(BART_SEED)
    cfg = hf_config("BartConfig", vocab_size=VOCAB, d_model=BART_HEADS * BART_HEAD_DIM, encoder_layers=BART_LAYERS,
                    decoder_layers=BART_LAYERS, encoder_attention_heads=BART_HEADS,
                    decoder_attention_heads=BART_HEADS, encoder_ffn_dim=128, decoder_ffn_dim=128,
                    max_position_embeddings=MAX_POSITIONS, use_cache=True,
                    # Tied to the embeddings, a random LM head makes greedy decoding repeat the start
                    # token for ever, which hides a decoder that ignores its source or its cache.
                    tie_word_embeddings=False)
    return transformers.BartForConditionalGeneration(cfg)


class BartEncoderWithCrossCache(nn.Module):
    """(input_ids, attention_mask) -> (last_hidden_state, past_key_values.N.encoder.key/value...):
    the encoder and every decoder layer's cross-attention K/V, computed once per source."""

    def __init__(self):
        super().__init__()
        self.model = bart_lm()

    def forward(self, input_ids, attention_mask):
        hidden = self.model.model.encoder(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]
        batch = input_ids.shape[0]
        cross = []
        for layer in self.model.model.decoder.layers:
            attention = layer.encoder_attn
            cross.append(attention._shape(attention.k_proj(hidden), -1, batch))
            cross.append(attention._shape(attention.v_proj(hidden), -1, batch))
        return (hidden, *cross)


class BartDecoderStep(nn.Module):
    """(input_ids, encoder_attention_mask, then per layer self key, self value, cross key, cross
    value) -> (logits, present.N.decoder.key/value...). The cross K/V come from the encoder
    model; HF reuses a cached cross K/V whose length is the source's, so the hidden states passed
    alongside only give that length and are traced away."""

    def __init__(self):
        super().__init__()
        self.model = bart_lm()

    def forward(self, input_ids, encoder_attention_mask, *cache):
        past = tuple(tuple(cache[4 * i:4 * i + 4]) for i in range(len(cache) // 4))
        hidden = torch.zeros(input_ids.shape[0], cache[2].shape[2], BART_HEADS * BART_HEAD_DIM)
        logits, presents = self.model(decoder_input_ids=input_ids, encoder_outputs=(hidden,),
                                      attention_mask=encoder_attention_mask, past_key_values=past, use_cache=True,
                                      return_dict=False)[:2]
        return (logits,) + tuple(t for layer in presents for t in layer[:2])


class BartDecoderFull(nn.Module):
    """(input_ids, encoder_hidden_states, encoder_attention_mask) -> logits: no cache."""

    def __init__(self):
        super().__init__()
        self.model = bart_lm()

    def forward(self, input_ids, encoder_hidden_states, encoder_attention_mask):
        return self.model(decoder_input_ids=input_ids, encoder_outputs=(encoder_hidden_states,),
                          attention_mask=encoder_attention_mask, use_cache=False, return_dict=False)[0]


def cross_cache_dims(batch, src):
    return [batch, BART_HEADS, src, BART_HEAD_DIM]


def seq2seq_encoder_spec(make_module, layers):
    """An encoder that also returns each layer's cross-attention K/V for the decoder steps."""
    inputs = [ids_input("input_ids", "src_seq"), mask_input("attention_mask", "src_seq")]
    outputs = {"last_hidden_state": {0: "batch", 1: "src_seq"}}
    for layer in range(layers):
        for kind in ("key", "value"):
            outputs[f"past_key_values.{layer}.encoder.{kind}"] = {0: "batch", 2: "src_seq"}
    shapes = [{"batch": 1, "src_seq": 7}, {"batch": 2, "src_seq": 16}]
    return make_module(), (example_ids(2, 6), example_mask(2, 6)), inputs, outputs, shapes


def seq2seq_decoder_past_spec(make_module, layers, heads, head_dim):
    """A decoder step taking its self-attention past and the encoder's cross K/V per layer."""
    batch, seq, past, src = 2, 3, 4, 6
    example = [example_ids(batch, seq), example_mask(batch, src)]
    inputs = [ids_input("input_ids"), mask_input("encoder_attention_mask", "src_seq")]
    outputs = {"logits": {0: "batch", 1: "seq"}}
    for layer in range(layers):
        for side, length in (("decoder", "past"), ("encoder", "src_seq")):
            for kind in ("key", "value"):
                example.append(torch.randn(batch, heads, past if side == "decoder" else src, head_dim))
                inputs.append(float_input(f"past_key_values.{layer}.{side}.{kind}",
                                          ["batch", heads, length, head_dim]))
        for kind in ("key", "value"):
            outputs[f"present.{layer}.decoder.{kind}"] = {0: "batch", 2: "past+seq"}
    return make_module(), tuple(example), inputs, outputs, SEQ2SEQ_PAST_SHAPES


def seq2seq_decoder_full_spec(make_module, heads, head_dim):
    """A decoder over the whole target prefix, given the encoder's hidden states."""
    example = (example_ids(2, 5), torch.randn(2, 6, heads * head_dim), example_mask(2, 6))
    inputs = [ids_input("input_ids"), float_input("encoder_hidden_states", ["batch", "src_seq", 64]),
              mask_input("encoder_attention_mask", "src_seq")]
    return make_module(), example, inputs, {"logits": {0: "batch", 1: "seq"}}, SEQ2SEQ_SHAPES


def hf_bart_seq2seq_encoder():
    return seq2seq_encoder_spec(BartEncoderWithCrossCache, BART_LAYERS)


def hf_bart_seq2seq_decoder_past():
    return seq2seq_decoder_past_spec(BartDecoderStep, BART_LAYERS, BART_HEADS, BART_HEAD_DIM)


def hf_bart_seq2seq_decoder():
    return seq2seq_decoder_full_spec(BartDecoderFull, BART_HEADS, BART_HEAD_DIM)


def hf_t5():
    return encoder_decoder("T5Model", hf_config(
        "T5Config", vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
        num_heads=4, relative_attention_num_buckets=32, relative_attention_max_distance=128, use_cache=False))


# ---- T5 for generation: the encoder once, the decoder one step at a time ------------------------
# As BART's: three views of one random-weight T5ForConditionalGeneration (same seed, same weights).
# T5 adds what BART lacks: the decoder's self-attention takes a relative position bias, which with
# a cache must be the bias of the new queries (rows past .. past + seq - 1) against every key.
T5_LAYERS = 2
T5_HEADS = 4
T5_HEAD_DIM = 16
T5_SEED = 2016


def t5_lm():
    import transformers
    torch.manual_seed(T5_SEED)
    cfg = hf_config("T5Config", vocab_size=VOCAB, d_model=64, d_kv=T5_HEAD_DIM, d_ff=128, num_layers=T5_LAYERS,
                    num_decoder_layers=T5_LAYERS, num_heads=T5_HEADS, relative_attention_num_buckets=32,
                    relative_attention_max_distance=128, use_cache=True, decoder_start_token_id=0,
                    # A tied head with random weights repeats the start token (see bart_lm).
                    tie_word_embeddings=False)
    return transformers.T5ForConditionalGeneration(cfg)


class T5EncoderWithCrossCache(nn.Module):
    """(input_ids, attention_mask) -> (last_hidden_state, past_key_values.N.encoder.key/value...)."""

    def __init__(self):
        super().__init__()
        self.model = t5_lm()

    def forward(self, input_ids, attention_mask):
        hidden = self.model.encoder(input_ids=input_ids, attention_mask=attention_mask, return_dict=False)[0]
        batch = input_ids.shape[0]
        cross = []
        for block in self.model.decoder.block:
            attention = block.layer[1].EncDecAttention
            for projection in (attention.k, attention.v):
                cross.append(projection(hidden).view(batch, -1, T5_HEADS, T5_HEAD_DIM).transpose(1, 2))
        return (hidden, *cross)


class T5DecoderStep(nn.Module):
    """(input_ids, encoder_attention_mask, then per layer self key, self value, cross key, cross
    value) -> (logits, present.N.decoder.key/value...). As BartDecoderStep: HF reuses a cached
    cross K/V of the source's length, so the hidden states only give that length."""

    def __init__(self):
        super().__init__()
        self.model = t5_lm()

    def forward(self, input_ids, encoder_attention_mask, *cache):
        past = tuple(tuple(cache[4 * i:4 * i + 4]) for i in range(len(cache) // 4))
        hidden = torch.zeros(input_ids.shape[0], cache[2].shape[2], T5_HEADS * T5_HEAD_DIM)
        logits, presents = self.model(decoder_input_ids=input_ids, encoder_outputs=(hidden,),
                                      attention_mask=encoder_attention_mask, past_key_values=past, use_cache=True,
                                      return_dict=False)[:2]
        return (logits,) + tuple(t for layer in presents for t in layer[:2])


class T5DecoderFull(nn.Module):
    """(input_ids, encoder_hidden_states, encoder_attention_mask) -> logits: no cache."""

    def __init__(self):
        super().__init__()
        self.model = t5_lm()

    def forward(self, input_ids, encoder_hidden_states, encoder_attention_mask):
        return self.model(decoder_input_ids=input_ids, encoder_outputs=(encoder_hidden_states,),
                          attention_mask=encoder_attention_mask, use_cache=False, return_dict=False)[0]


def hf_t5_seq2seq_encoder():
    return seq2seq_encoder_spec(T5EncoderWithCrossCache, T5_LAYERS)


def hf_t5_seq2seq_decoder_past():
    return seq2seq_decoder_past_spec(T5DecoderStep, T5_LAYERS, T5_HEADS, T5_HEAD_DIM)


def hf_t5_seq2seq_decoder():
    return seq2seq_decoder_full_spec(T5DecoderFull, T5_HEADS, T5_HEAD_DIM)


def hf_vit():
    cfg = hf_config("ViTConfig", image_size=32, patch_size=8, num_channels=3, hidden_size=64, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=128)
    model = hf("ViTModel", cfg, ["pixel_values"])
    inputs = [float_input("pixel_values", ["batch", 3, 32, 32])]
    return model, (torch.randn(2, 3, 32, 32),), inputs, {"last_hidden_state": {0: "batch"}}, \
        [{"batch": 1}, {"batch": 3}]


WHISPER_FRAMES = 64


def hf_whisper_encoder():
    import transformers
    cfg = hf_config("WhisperConfig", vocab_size=VOCAB, d_model=64, encoder_layers=2, encoder_attention_heads=4,
                    encoder_ffn_dim=128, num_mel_bins=16, max_source_positions=WHISPER_FRAMES // 2,
                    decoder_layers=1, decoder_attention_heads=4, decoder_ffn_dim=128,
                    pad_token_id=1, bos_token_id=2, eos_token_id=2, decoder_start_token_id=2)
    model = FirstOutput(transformers.WhisperModel(cfg).get_encoder(), ["input_features"])
    inputs = [float_input("input_features", ["batch", 16, WHISPER_FRAMES])]
    return model, (torch.randn(2, 16, WHISPER_FRAMES),), inputs, {"last_hidden_state": {0: "batch"}}, \
        [{"batch": 1}, {"batch": 3}]


# ---- torch.nn --------------------------------------------------------------------------------

D_MODEL = 64


def padding_input(name, seq_dim="seq"):
    return {"name": name, "dtype": "bool", "shape": ["batch", seq_dim], "generator": {"kind": "padding_flags"}}


def example_padding(batch=2, seq=5):
    return example_mask(batch, seq) == 0


class TorchEncoder(nn.Module):
    """nn.TransformerEncoder over float embeddings with a key-padding mask input, a causal mask,
    or both. torch 1.13 cannot export its own eval-mode fast path (batch_first with only a
    padding mask), so a batch_first model with padding also takes the causal mask."""

    def __init__(self, batch_first, norm_first, activation, masking):
        super().__init__()
        layer = nn.TransformerEncoderLayer(D_MODEL, 4, 128, dropout=0.0, activation=activation,
                                           batch_first=batch_first, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.batch_first = batch_first
        self.masking = masking

    def forward(self, x, padding=None):
        causal = None
        if self.masking in ("causal", "both"):
            length = x.shape[1] if self.batch_first else x.shape[0]
            causal = nn.Transformer.generate_square_subsequent_mask(length)
        return self.encoder(x, mask=causal, src_key_padding_mask=padding)


def torch_encoder(batch_first, norm_first, activation, masking):
    def build():
        model = TorchEncoder(batch_first, norm_first, activation, masking)
        shape = ["batch", "seq", D_MODEL] if batch_first else ["seq", "batch", D_MODEL]
        example_x = torch.randn(2, 5, D_MODEL) if batch_first else torch.randn(5, 2, D_MODEL)
        inputs = [float_input("x", shape)]
        example = (example_x,)
        if masking in ("padding", "both"):
            inputs.append(padding_input("padding"))
            example = (example_x, example_padding())
        axes = {0: "batch", 1: "seq"} if batch_first else {0: "seq", 1: "batch"}
        return model, example, inputs, {"y": axes}, SEQ_SHAPES
    return build


class TorchTransformer(nn.Module):
    """nn.Transformer (sequence-first, its default) with a causal tgt_mask and source padding."""

    def __init__(self):
        super().__init__()
        self.transformer = nn.Transformer(D_MODEL, 4, 2, 2, 128, dropout=0.0)
        # The nested-tensor conversion of padded batches (logical_not) has no ONNX export in 1.13.
        self.transformer.encoder.enable_nested_tensor = False

    def forward(self, src, tgt, src_padding):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[0])
        return self.transformer(src, tgt, tgt_mask=tgt_mask, src_key_padding_mask=src_padding,
                                memory_key_padding_mask=src_padding)


def torch_transformer():
    inputs = [float_input("src", ["src_seq", "batch", D_MODEL]), float_input("tgt", ["tgt_seq", "batch", D_MODEL]),
              padding_input("src_padding", "src_seq")]
    example = (torch.randn(6, 2, D_MODEL), torch.randn(5, 2, D_MODEL), example_padding(2, 6))
    return TorchTransformer(), example, inputs, {"y": {0: "tgt_seq", 1: "batch"}}, ENCDEC_SHAPES


class TorchDecoder(nn.Module):
    """nn.TransformerDecoder, sequence-first, causal tgt_mask, memory from another input."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerDecoderLayer(D_MODEL, 4, 128, dropout=0.0, activation="gelu", norm_first=True)
        self.decoder = nn.TransformerDecoder(layer, 2)

    def forward(self, tgt, memory):
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[0])
        return self.decoder(tgt, memory, tgt_mask=tgt_mask)


def torch_decoder():
    inputs = [float_input("tgt", ["tgt_seq", "batch", D_MODEL]), float_input("memory", ["src_seq", "batch", D_MODEL])]
    example = (torch.randn(5, 2, D_MODEL), torch.randn(6, 2, D_MODEL))
    return TorchDecoder(), example, inputs, {"y": {0: "tgt_seq", 1: "batch"}}, ENCDEC_SHAPES


# ---- nn.Transformer for generation (the 2017 Transformer) ---------------------------------------
# One random-weight model, two views: the encoder (source ids -> memory) and the decoder without a
# cache (target ids, memory -> logits), which the generator re-runs on the whole target prefix at
# every step. Embeddings scaled by sqrt(d_model), sinusoidal positions, an untied LM head,
# post-LN as the paper. The inputs and outputs are batch-first, nn.Transformer sequence-first
# inside: torch 1.13 cannot export the eval-mode fast path a batch_first encoder without masks takes.
TRANSFORMER_SEED = 2108


def sinusoidal_table(length: int, width: int) -> torch.Tensor:
    position = torch.arange(length, dtype=torch.float64)[:, None]
    rate = torch.exp(torch.arange(0, width, 2, dtype=torch.float64) * (-math.log(10000.0) / width))
    table = torch.zeros(length, width, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * rate)
    table[:, 1::2] = torch.cos(position * rate)
    return table.float()


class Transformer2017(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(TRANSFORMER_SEED)
        self.source_embedding = nn.Embedding(VOCAB, D_MODEL)
        self.target_embedding = nn.Embedding(VOCAB, D_MODEL)
        self.transformer = nn.Transformer(D_MODEL, 4, 2, 2, 128, dropout=0.0)
        self.transformer.encoder.enable_nested_tensor = False
        self.lm_head = nn.Linear(D_MODEL, VOCAB)
        self.register_buffer("positions", sinusoidal_table(MAX_POSITIONS, D_MODEL))

    def embed(self, table: nn.Embedding, ids):
        """[batch, seq] ids -> [seq, batch, 64] embeddings."""
        return (table(ids) * math.sqrt(D_MODEL) + self.positions[:ids.shape[1]]).transpose(0, 1)


class Transformer2017Encoder(nn.Module):
    """input_ids [batch, src_seq] -> memory [batch, src_seq, 64]."""

    def __init__(self):
        super().__init__()
        self.model = Transformer2017()

    def forward(self, input_ids):
        return self.model.transformer.encoder(self.model.embed(self.model.source_embedding, input_ids)).transpose(0, 1)


class Transformer2017Decoder(nn.Module):
    """(input_ids [batch, seq], memory [batch, src_seq, 64]) -> logits: causal self-attention over
    the target prefix, cross-attention to the memory; no cache."""

    def __init__(self):
        super().__init__()
        self.model = Transformer2017()

    def forward(self, input_ids, memory):
        causal = nn.Transformer.generate_square_subsequent_mask(input_ids.shape[1])
        hidden = self.model.transformer.decoder(self.model.embed(self.model.target_embedding, input_ids),
                                                memory.transpose(0, 1), tgt_mask=causal)
        return self.model.lm_head(hidden.transpose(0, 1))


def nn_transformer_seq2seq_encoder():
    inputs = [ids_input("input_ids", "src_seq")]
    shapes = [{"batch": 1, "src_seq": 7}, {"batch": 2, "src_seq": 16}]
    return Transformer2017Encoder(), (example_ids(2, 6),), inputs, {"memory": {0: "batch", 1: "src_seq"}}, shapes


def nn_transformer_seq2seq_decoder():
    inputs = [ids_input("input_ids"), float_input("memory", ["batch", "src_seq", D_MODEL])]
    example = (example_ids(2, 5), torch.randn(2, 6, D_MODEL))
    return Transformer2017Decoder(), example, inputs, {"logits": {0: "batch", 1: "seq"}}, SEQ2SEQ_SHAPES


# ---- a torch decoder that takes its cache as explicit tensors ----------------------------------
# What a hand-written GPT looks like when its author adds a cache: per layer past_k_N/past_v_N
# [batch, heads, past, 16] in, present_k_N/present_v_N [batch, heads, past + seq, 16] out (the
# cache torch.cat-ed before the new keys), learned positions counted on from the cache's length and
# a causal mask offset by it (key j hidden from query i when j > past + i).
CACHED_GPT_LAYERS = 2
CACHED_GPT_HEADS = 4
CACHED_GPT_HEAD_DIM = 16


class CachedGptBlock(nn.Module):
    def __init__(self):
        super().__init__()
        width = CACHED_GPT_HEADS * CACHED_GPT_HEAD_DIM
        self.attn_norm = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.mlp_norm = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def heads(self, t):
        return t.view(t.shape[0], t.shape[1], CACHED_GPT_HEADS, CACHED_GPT_HEAD_DIM).transpose(1, 2)

    def forward(self, x, past_k, past_v):
        q, k, v = self.qkv(self.attn_norm(x)).chunk(3, dim=-1)
        q = self.heads(q)
        k = torch.cat([past_k, self.heads(k)], dim=2)
        v = torch.cat([past_v, self.heads(v)], dim=2)
        past = past_k.shape[2]
        rows = torch.arange(x.shape[1])[:, None] + past
        future = torch.arange(k.shape[2])[None, :] > rows
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(CACHED_GPT_HEAD_DIM)
        probs = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
        context = (probs @ v).transpose(1, 2).reshape(x.shape)
        x = x + self.proj(context)
        return x + self.mlp(self.mlp_norm(x)), k, v


class CachedGpt(nn.Module):
    """(input_ids, past_k_0, past_v_0, ...) -> (logits, present_k_0, present_v_0, ...)."""

    def __init__(self):
        super().__init__()
        width = CACHED_GPT_HEADS * CACHED_GPT_HEAD_DIM
        self.token_embedding = nn.Embedding(VOCAB, width)
        self.position_embedding = nn.Embedding(MAX_POSITIONS, width)
        self.blocks = nn.ModuleList(CachedGptBlock() for _ in range(CACHED_GPT_LAYERS))
        self.norm = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, VOCAB, bias=False)

    def forward(self, input_ids, *past):
        start = past[0].shape[2]
        positions = torch.arange(input_ids.shape[1]) + start
        x = self.token_embedding(input_ids) + self.position_embedding(positions)
        presents = []
        for index, block in enumerate(self.blocks):
            x, k, v = block(x, past[2 * index], past[2 * index + 1])
            presents += [k, v]
        return (self.lm_head(self.norm(x)), *presents)


def torch_gpt_cache():
    batch, seq, past = 2, 5, 3
    example = [example_ids(batch, seq)]
    inputs = [ids_input("input_ids")]
    outputs = {"logits": {0: "batch", 1: "seq"}}
    for layer in range(CACHED_GPT_LAYERS):
        for kind in ("k", "v"):
            example.append(torch.randn(batch, CACHED_GPT_HEADS, past, CACHED_GPT_HEAD_DIM))
            inputs.append(float_input(f"past_{kind}_{layer}", ["batch", CACHED_GPT_HEADS, "past", CACHED_GPT_HEAD_DIM]))
            outputs[f"present_{kind}_{layer}"] = {0: "batch", 2: "past+seq"}
    return CachedGpt(), tuple(example), inputs, outputs, PAST_SHAPES


class TorchMultiheadAttention(nn.Module):
    """A bare nn.MultiheadAttention with kdim/vdim != embed_dim (separate projection weights)."""

    def __init__(self):
        super().__init__()
        self.attention = nn.MultiheadAttention(D_MODEL, 4, kdim=48, vdim=40, batch_first=True)

    def forward(self, query, key, value, padding):
        return self.attention(query, key, value, key_padding_mask=padding, need_weights=False)[0]


def torch_mha():
    inputs = [float_input("query", ["batch", "tgt_seq", D_MODEL]), float_input("key", ["batch", "src_seq", 48]),
              float_input("value", ["batch", "src_seq", 40]), padding_input("padding", "src_seq")]
    example = (torch.randn(2, 5, D_MODEL), torch.randn(2, 6, 48), torch.randn(2, 6, 40), example_padding(2, 6))
    return TorchMultiheadAttention(), example, inputs, {"y": {0: "batch", 1: "tgt_seq"}}, ENCDEC_SHAPES


# name: (builder, seed, description)
FAMILIES = {
    "hf_gpt2": (hf_gpt2, 2001, "HF GPT2LMHeadModel, 2 layers, hidden 64, 4 heads"),
    "hf_gpt2_past": (hf_gpt2_past, 2013, "HF GPT2LMHeadModel with past_key_values in and presents out, "
                                         "mask of length past+seq"),
    "hf_llama_past": (hf_llama_past, 2015, "HF LlamaForCausalLM with past_key_values in and presents out, GQA 4/2, "
                                           "mask of length past+seq, position ids"),
    "hf_bert": (hf_bert, 2002, "HF BertModel, 2 layers, padding mask"),
    "hf_roberta": (hf_roberta, 2003, "HF RobertaModel, 2 layers, padding mask"),
    "hf_distilbert": (hf_distilbert, 2004, "HF DistilBertModel, 2 layers, finite-fill Where mask"),
    "hf_clip_text": (hf_clip_text, 2006, "HF CLIPTextModel, 2 layers, causal + padding mask, heads in batch"),
    "hf_llama": (lambda: hf_llama(False), 2007, "HF LlamaModel, 2 layers, GQA 4/2, no attention mask"),
    "hf_deberta_v2": (hf_deberta_v2, 2005, "HF DebertaV2Model, 2 layers, disentangled relative attention"),
    "hf_llama_mask": (lambda: hf_llama(True), 2008, "HF LlamaModel, 2 layers, GQA 4/2, attention mask"),
    "hf_bart": (hf_bart, 2009, "HF BartModel, 2+2 layers, heads in batch, cross attention"),
    "hf_bart_seq2seq_encoder": (hf_bart_seq2seq_encoder, BART_SEED,
                                "BART encoder for generation: hidden states and every layer's cross K/V"),
    "hf_bart_seq2seq_decoder_past": (hf_bart_seq2seq_decoder_past, BART_SEED,
                                     "BART decoder step: self-attention cache and cached cross K/V in"),
    "hf_bart_seq2seq_decoder": (hf_bart_seq2seq_decoder, BART_SEED,
                                "BART decoder without a cache, reading the encoder's hidden states"),
    "hf_t5_seq2seq_encoder": (hf_t5_seq2seq_encoder, T5_SEED,
                              "T5 encoder for generation: hidden states and every layer's cross K/V"),
    "hf_t5_seq2seq_decoder_past": (hf_t5_seq2seq_decoder_past, T5_SEED,
                                   "T5 decoder step: self-attention cache (relative position bias offset by the "
                                   "past) and cached cross K/V in"),
    "hf_t5_seq2seq_decoder": (hf_t5_seq2seq_decoder, T5_SEED,
                              "T5 decoder without a cache, reading the encoder's hidden states"),
    "hf_t5": (hf_t5, 2010, "HF T5Model, 2+2 layers, relative position buckets, RMS-style norm"),
    "hf_vit": (hf_vit, 2011, "HF ViTModel, 8x8 patches on 32x32, 2 layers"),
    "hf_whisper_encoder": (hf_whisper_encoder, 2012, "HF Whisper encoder, two Conv1d, 2 layers, heads in batch"),
    "nn_encoder_post_relu_padding": (torch_encoder(False, False, "relu", "padding"), 2101,
                                     "nn.TransformerEncoder, seq-first, post-LN, ReLU, key-padding mask"),
    "nn_encoder_bf_pre_gelu_causal": (torch_encoder(True, True, "gelu", "causal"), 2102,
                                      "nn.TransformerEncoder, batch_first, pre-LN, GELU, causal mask"),
    "nn_encoder_bf_post_gelu_both": (torch_encoder(True, False, "gelu", "both"), 2103,
                                        "nn.TransformerEncoder, batch_first, post-LN, GELU, causal + key-padding"),
    "nn_encoder_pre_relu_causal": (torch_encoder(False, True, "relu", "causal"), 2104,
                                   "nn.TransformerEncoder, seq-first, pre-LN, ReLU, causal mask"),
    "nn_transformer": (torch_transformer, 2105,
                       "nn.Transformer 2+2, sequence-first, causal tgt_mask, source key-padding mask"),
    "nn_decoder": (torch_decoder, 2106, "nn.TransformerDecoder 2 layers, seq-first, pre-LN, GELU, causal"),
    "nn_transformer_seq2seq_encoder": (nn_transformer_seq2seq_encoder, TRANSFORMER_SEED,
                                       "nn.Transformer's encoder for generation: embeddings, sinusoidal positions"),
    "nn_transformer_seq2seq_decoder": (nn_transformer_seq2seq_decoder, TRANSFORMER_SEED,
                                       "nn.Transformer's decoder for generation, no cache, LM head"),
    "torch_gpt_cache": (torch_gpt_cache, 2109, "torch GPT decoder with its cache as explicit past_k_N/past_v_N "
                                               "tensors, causal mask offset by the past"),
    "nn_mha": (torch_mha, 2107, "nn.MultiheadAttention, kdim 48 / vdim 40, key-padding mask"),
}


# Families exported at one opset only (the rest get every opset of build_models.TORCH_OPSETS): the
# seq2seq generation views repeat hf_bart's, hf_t5's and nn_transformer's layers, the cached
# LLaMA hf_llama's and the cached torch GPT hf_gpt2_past's form, so one opset covers what they add.
ONLY_OPSETS = {name: (17,) for name in ("hf_bart_seq2seq_encoder", "hf_bart_seq2seq_decoder_past",
                                         "hf_bart_seq2seq_decoder", "hf_llama_past", "hf_t5_seq2seq_encoder",
                                         "hf_t5_seq2seq_decoder_past", "hf_t5_seq2seq_decoder",
                                         "nn_transformer_seq2seq_encoder", "nn_transformer_seq2seq_decoder",
                                         "torch_gpt_cache")}


# What the differential check varies where the symbolic dims do not say it (build_models.DIFFERENTIAL).
DIFFERENTIAL = {
    "hf_vit": {"batches": [1, 2, 7, 33], "reason": "ViT's position table has one row per 8x8 patch of the 32x32 "
                                                   "image plus the class token"},
    "hf_whisper_encoder": {"batches": [1, 2, 7, 33], "reason": "Whisper's encoder takes exactly "
                                                               f"{WHISPER_FRAMES} frames"},
}
