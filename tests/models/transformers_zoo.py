"""Small PyTorch transformers for onnxc's model tests and examples.

Each module is written the way the popular implementations write it (HF BERT, GPT-2, the
original Transformer, timm's ViT, HF LLaMA, Bahdanau and Luong seq2seq), so that torch.onnx.export produces the
graph shapes a compiler meets in the wild: hand-written attention with Reshape/Transpose
plumbing, masks built from integer inputs, sliced constant buffers, Range-based positions.

Weights are random (fixed seeds, see build_models.py); nothing is downloaded.
"""

import math
from dataclasses import dataclass

import torch
from torch import nn
import torch.nn.functional as F


# Rows of every learned or stored position table (and GPT's causal buffer): the model tests'
# differential check runs sequences up to 600 tokens, so no table may stop short of that.
MAX_POSITIONS = 1024


def randomize_norms(module: nn.Module, generator: torch.Generator) -> None:
    """Moves LayerNorm (and RMSNorm) scales away from 1 and shifts away from 0.

    With PyTorch's default init (gamma=1, beta=0) a compiler that drops or swaps them would
    still match the reference; random values make such bugs visible.
    """
    with torch.no_grad():
        for sub in module.modules():
            if isinstance(sub, nn.LayerNorm):
                sub.weight.copy_(1.0 + 0.2 * torch.randn(sub.weight.shape, generator=generator))
                sub.bias.copy_(0.1 * torch.randn(sub.bias.shape, generator=generator))
            elif isinstance(sub, LlamaRMSNorm) or (type(sub).__name__.endswith(("RMSNorm", "LayerNorm"))
                                                   and isinstance(getattr(sub, "weight", None), nn.Parameter)):
                # Ours, and the libraries' own (HF LlamaRMSNorm, T5LayerNorm, ...).
                sub.weight.copy_(1.0 + 0.2 * torch.randn(sub.weight.shape, generator=generator))


# ---------------------------------------------------------------------------------------------
# BERT: post-LN encoder, learned positions, GELU (erf), HF-style padding mask.
# ---------------------------------------------------------------------------------------------

@dataclass
class BertConfig:
    vocab_size: int = 512
    hidden: int = 64
    heads: int = 4
    ffn: int = 256
    layers: int = 6
    max_positions: int = MAX_POSITIONS
    layer_norm_eps: float = 1e-12


class BertSelfAttention(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.all_head_size = self.heads * self.head_dim
        self.query = nn.Linear(cfg.hidden, self.all_head_size)
        self.key = nn.Linear(cfg.hidden, self.all_head_size)
        self.value = nn.Linear(cfg.hidden, self.all_head_size)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        new_shape = x.size()[:-1] + (self.heads, self.head_dim)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, hidden: torch.Tensor, extended_mask: torch.Tensor) -> torch.Tensor:
        q = self.split_heads(self.query(hidden))
        k = self.split_heads(self.key(hidden))
        v = self.split_heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + extended_mask
        probs = F.softmax(scores, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        new_shape = context.size()[:-2] + (self.all_head_size,)
        return context.view(new_shape)


class BertLayer(nn.Module):
    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.attention = BertSelfAttention(cfg)
        self.attention_output = nn.Linear(cfg.hidden, cfg.hidden)
        self.attention_norm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.intermediate = nn.Linear(cfg.hidden, cfg.ffn)
        self.output = nn.Linear(cfg.ffn, cfg.hidden)
        self.output_norm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)

    def forward(self, hidden: torch.Tensor, extended_mask: torch.Tensor) -> torch.Tensor:
        attended = self.attention_output(self.attention(hidden, extended_mask))
        hidden = self.attention_norm(attended + hidden)
        inner = F.gelu(self.intermediate(hidden))
        return self.output_norm(self.output(inner) + hidden)


class BertEncoder(nn.Module):
    """input_ids, attention_mask (int64 [batch, seq]) -> last hidden state [batch, seq, hidden]."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.position_embeddings = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.embedding_norm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.layers = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.layers))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        seq_len = input_ids.size(1)
        position_ids = torch.arange(seq_len, dtype=torch.long, device=input_ids.device).unsqueeze(0)
        hidden = self.word_embeddings(input_ids) + self.position_embeddings(position_ids)
        hidden = self.embedding_norm(hidden)
        # HF's get_extended_attention_mask: 0 for tokens to attend, -10000 for padding.
        extended_mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            hidden = layer(hidden, extended_mask)
        return hidden


# ---------------------------------------------------------------------------------------------
# GPT: pre-LN decoder, fused qkv + Split, causal mask from a sliced tril buffer, tanh GELU.
# ---------------------------------------------------------------------------------------------

@dataclass
class GptConfig:
    vocab_size: int = 128
    hidden: int = 64
    heads: int = 4
    ffn: int = 256
    layers: int = 4
    max_positions: int = MAX_POSITIONS
    layer_norm_eps: float = 1e-5


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    # Written out as GPT-2's code does, so the exporter emits Pow/Mul/Add/Tanh, not one op.
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GptAttention(nn.Module):
    def __init__(self, cfg: GptConfig):
        super().__init__()
        self.heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.hidden = cfg.hidden
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)
        causal = torch.tril(torch.ones(cfg.max_positions, cfg.max_positions, dtype=torch.uint8))
        self.register_buffer("bias", causal.view(1, 1, cfg.max_positions, cfg.max_positions))

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        new_shape = x.size()[:-1] + (self.heads, self.head_dim)
        return x.view(new_shape).permute(0, 2, 1, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x).split(self.hidden, dim=2)
        q, k, v = self.split_heads(q), self.split_heads(k), self.split_heads(v)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        seq_len = x.size(1)
        causal = self.bias[:, :, :seq_len, :seq_len]
        scores = scores.masked_fill(causal == 0, float("-inf"))
        probs = F.softmax(scores, dim=-1)
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        context = context.view(context.size()[:-2] + (self.hidden,))
        return self.proj(context)


class GptBlock(nn.Module):
    def __init__(self, cfg: GptConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.attn = GptAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.fc = nn.Linear(cfg.hidden, cfg.ffn)
        self.fc_proj = nn.Linear(cfg.ffn, cfg.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.fc_proj(gelu_tanh(self.fc(self.ln_2(x))))


class GptDecoder(nn.Module):
    """input_ids (int64 [batch, seq]) -> logits [batch, seq, vocab]. LM head tied to wte."""

    def __init__(self, cfg: GptConfig):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.wpe = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.blocks = nn.ModuleList(GptBlock(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.size(1), dtype=torch.long, device=input_ids.device)
        x = self.wte(input_ids) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# ---------------------------------------------------------------------------------------------
# The original Transformer: encoder-decoder, sinusoidal table, post-LN, ReLU FFN.
# ---------------------------------------------------------------------------------------------

@dataclass
class EncDecConfig:
    src_vocab_size: int = 100
    tgt_vocab_size: int = 120
    hidden: int = 64
    heads: int = 4
    ffn: int = 256
    encoder_layers: int = 2
    decoder_layers: int = 2
    max_positions: int = MAX_POSITIONS
    pad_id: int = 0
    layer_norm_eps: float = 1e-5


def sinusoidal_table(max_positions: int, hidden: int) -> torch.Tensor:
    position = torch.arange(max_positions, dtype=torch.float32).unsqueeze(1)
    frequency = torch.exp(torch.arange(0, hidden, 2, dtype=torch.float32) * (-math.log(10000.0) / hidden))
    table = torch.zeros(max_positions, hidden)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


class MultiHeadAttention(nn.Module):
    """Attention(query, key_value, additive mask broadcastable to [batch, heads, q, k])."""

    def __init__(self, hidden: int, heads: int):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.hidden = hidden
        self.w_q = nn.Linear(hidden, hidden)
        self.w_k = nn.Linear(hidden, hidden)
        self.w_v = nn.Linear(hidden, hidden)
        self.w_o = nn.Linear(hidden, hidden)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch = x.size(0)
        return x.view(batch, -1, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, query: torch.Tensor, key_value: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        q = self.split_heads(self.w_q(query))
        k = self.split_heads(self.w_k(key_value))
        v = self.split_heads(self.w_v(key_value))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim) + mask
        context = torch.matmul(torch.softmax(scores, dim=-1), v)
        context = context.transpose(1, 2).reshape(query.size(0), -1, self.hidden)
        return self.w_o(context)


class EncoderLayer(nn.Module):
    def __init__(self, cfg: EncDecConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.hidden, cfg.heads)
        self.norm1 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.ff1 = nn.Linear(cfg.hidden, cfg.ffn)
        self.ff2 = nn.Linear(cfg.ffn, cfg.hidden)
        self.norm2 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)

    def forward(self, x: torch.Tensor, src_mask: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.self_attn(x, x, src_mask))
        return self.norm2(x + self.ff2(torch.relu(self.ff1(x))))


class DecoderLayer(nn.Module):
    def __init__(self, cfg: EncDecConfig):
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.hidden, cfg.heads)
        self.norm1 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.cross_attn = MultiHeadAttention(cfg.hidden, cfg.heads)
        self.norm2 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.ff1 = nn.Linear(cfg.hidden, cfg.ffn)
        self.ff2 = nn.Linear(cfg.ffn, cfg.hidden)
        self.norm3 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)

    def forward(self, y: torch.Tensor, memory: torch.Tensor, causal_mask: torch.Tensor,
                memory_mask: torch.Tensor) -> torch.Tensor:
        y = self.norm1(y + self.self_attn(y, y, causal_mask))
        y = self.norm2(y + self.cross_attn(y, memory, memory_mask))
        return self.norm3(y + self.ff2(torch.relu(self.ff1(y))))


class EncoderDecoder(nn.Module):
    """src_ids [batch, src_seq], tgt_ids [batch, tgt_seq] -> logits [batch, tgt_seq, tgt_vocab].

    Source padding (token pad_id) is masked with -inf in encoder self-attention and in
    cross-attention; decoder self-attention is causal (Trilu on a -inf matrix).
    """

    def __init__(self, cfg: EncDecConfig):
        super().__init__()
        self.cfg = cfg
        self.scale = math.sqrt(cfg.hidden)
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.hidden)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.hidden)
        self.register_buffer("positions", sinusoidal_table(cfg.max_positions, cfg.hidden))
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.encoder_layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.decoder_layers))
        self.generator = nn.Linear(cfg.hidden, cfg.tgt_vocab_size)

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor) -> torch.Tensor:
        src_len, tgt_len = src_ids.size(1), tgt_ids.size(1)
        pad = (src_ids == self.cfg.pad_id)[:, None, None, :]
        src_mask = torch.zeros(pad.shape, dtype=torch.float32).masked_fill(pad, float("-inf"))
        causal_mask = torch.triu(torch.full((tgt_len, tgt_len), float("-inf")), diagonal=1)

        x = self.src_embed(src_ids) * self.scale + self.positions[:src_len]
        for layer in self.encoder:
            x = layer(x, src_mask)
        y = self.tgt_embed(tgt_ids) * self.scale + self.positions[:tgt_len]
        for layer in self.decoder:
            y = layer(y, x, causal_mask, src_mask)
        return self.generator(y)


# ---------------------------------------------------------------------------------------------
# ViT: Conv patch embedding, class token, learned positions, pre-LN, GELU (erf).
# ---------------------------------------------------------------------------------------------

@dataclass
class VitConfig:
    image_size: int = 32
    patch_size: int = 8
    channels: int = 3
    hidden: int = 64
    heads: int = 4
    ffn: int = 256
    layers: int = 4
    classes: int = 10
    layer_norm_eps: float = 1e-6


class VitAttention(nn.Module):
    """timm-style: one qkv Linear, reshape to [3, batch, heads, tokens, head_dim], scale by Mul."""

    def __init__(self, cfg: VitConfig):
        super().__init__()
        self.heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, tokens, channels = x.shape
        qkv = self.qkv(x).reshape(batch, tokens, 3, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        x = (attn @ v).transpose(1, 2).reshape(batch, tokens, channels)
        return self.proj(x)


class VitBlock(nn.Module):
    def __init__(self, cfg: VitConfig):
        super().__init__()
        self.norm1 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.attn = VitAttention(cfg)
        self.norm2 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.mlp = nn.Sequential(nn.Linear(cfg.hidden, cfg.ffn), nn.GELU(), nn.Linear(cfg.ffn, cfg.hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class VisionTransformer(nn.Module):
    """pixel_values f32 [batch, 3, 32, 32] -> logits [batch, classes]."""

    def __init__(self, cfg: VitConfig):
        super().__init__()
        patches = (cfg.image_size // cfg.patch_size) ** 2
        self.patch_embed = nn.Conv2d(cfg.channels, cfg.hidden, kernel_size=cfg.patch_size, stride=cfg.patch_size)
        self.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, cfg.hidden))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, patches + 1, cfg.hidden))
        self.blocks = nn.ModuleList(VitBlock(cfg) for _ in range(cfg.layers))
        self.norm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.head = nn.Linear(cfg.hidden, cfg.classes)

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(pixel_values).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat((cls, x), dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return self.head(x[:, 0])


# ---------------------------------------------------------------------------------------------
# LLaMA-style decoder: RMSNorm, rotary positions, grouped-query attention, SwiGLU.
# ---------------------------------------------------------------------------------------------

@dataclass
class LlamaConfig:
    vocab_size: int = 128
    hidden: int = 64
    heads: int = 4
    kv_heads: int = 2
    ffn: int = 96
    layers: int = 2
    max_positions: int = MAX_POSITIONS
    rms_eps: float = 1e-6
    rope_theta: float = 10000.0


class LlamaRMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """[b, kv_heads, s, d] -> [b, kv_heads * n_rep, s, d], each KV head repeated for its group.

    Spelled `unsqueeze(2).repeat(...)` (a Tile in ONNX), as some ports write it; the hf_llama
    models cover HF's own spelling, `x[:, :, None].expand(...)`. Both must fuse alike.
    """
    batch, kv_heads, seq, dim = x.shape
    if n_rep == 1:
        return x
    x = x.unsqueeze(2).repeat(1, 1, n_rep, 1, 1)
    return x.reshape(batch, kv_heads * n_rep, seq, dim)


class LlamaAttention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.heads, self.kv_heads = cfg.heads, cfg.kv_heads
        self.head_dim = cfg.hidden // cfg.heads
        self.q_proj = nn.Linear(cfg.hidden, cfg.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(cfg.hidden, cfg.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(cfg.hidden, cfg.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(cfg.heads * self.head_dim, cfg.hidden, bias=False)
        inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, self.head_dim, 2).float() / self.head_dim))
        freqs = torch.outer(torch.arange(cfg.max_positions).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        q = self.q_proj(x).view(batch, seq, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, seq, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos_cached[:seq], self.sin_cached[:seq]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        n_rep = self.heads // self.kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        # HF's causal mask: the dtype's lowest value above the diagonal, added.
        mask = torch.triu(torch.full((seq, seq), torch.finfo(x.dtype).min), diagonal=1)
        probs = F.softmax(scores + mask, dim=-1)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, -1)
        return self.o_proj(context)


class LlamaMLP(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.gate_proj = nn.Linear(cfg.hidden, cfg.ffn, bias=False)
        self.up_proj = nn.Linear(cfg.hidden, cfg.ffn, bias=False)
        self.down_proj = nn.Linear(cfg.ffn, cfg.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaBlock(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(cfg.hidden, cfg.rms_eps)
        self.self_attn = LlamaAttention(cfg)
        self.post_attention_layernorm = LlamaRMSNorm(cfg.hidden, cfg.rms_eps)
        self.mlp = LlamaMLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaDecoder(nn.Module):
    """input_ids (int64 [batch, seq]) -> logits [batch, seq, vocab]."""

    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.layers = nn.ModuleList(LlamaBlock(cfg) for _ in range(cfg.layers))
        self.norm = LlamaRMSNorm(cfg.hidden, cfg.rms_eps)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


# ---------------------------------------------------------------------------------------------
# Recurrent seq2seq with additive (Bahdanau) attention: BiLSTM encoder, LSTM + GRU decoder.
# ---------------------------------------------------------------------------------------------

@dataclass
class LstmAttnConfig:
    src_vocab_size: int = 90
    tgt_vocab_size: int = 110
    embed: int = 32
    encoder_hidden: int = 32     # per direction
    decoder_hidden: int = 64
    attention: int = 48


class LstmAttentionSeq2Seq(nn.Module):
    """src_ids [batch, src_seq], tgt_ids [batch, tgt_seq] -> logits [batch, tgt_seq, tgt_vocab].

    Teacher-forced: the decoder reads all target tokens at once, and the additive attention
    score v^T tanh(W d_t + U h_s) is computed for every (t, s) pair by broadcasting.
    """

    def __init__(self, cfg: LstmAttnConfig):
        super().__init__()
        enc_out = 2 * cfg.encoder_hidden
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.embed)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.embed)
        self.encoder = nn.LSTM(cfg.embed, cfg.encoder_hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(enc_out, cfg.decoder_hidden)
        self.decoder = nn.LSTM(cfg.embed, cfg.decoder_hidden, batch_first=True)
        self.decoder_gru = nn.GRU(cfg.decoder_hidden, cfg.decoder_hidden, batch_first=True)
        self.w_dec = nn.Linear(cfg.decoder_hidden, cfg.attention, bias=False)
        self.u_enc = nn.Linear(enc_out, cfg.attention)
        self.v = nn.Linear(cfg.attention, 1, bias=False)
        self.combine = nn.Linear(cfg.decoder_hidden + enc_out, cfg.decoder_hidden)
        self.out = nn.Linear(cfg.decoder_hidden, cfg.tgt_vocab_size)

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor) -> torch.Tensor:
        enc, (h_n, _) = self.encoder(self.src_embed(src_ids))            # enc: [b, S, 2He]
        h0 = torch.tanh(self.bridge(torch.cat((h_n[0], h_n[1]), dim=-1))).unsqueeze(0)
        c0 = torch.zeros_like(h0)
        dec, _ = self.decoder(self.tgt_embed(tgt_ids), (h0, c0))         # dec: [b, T, Hd]
        dec, _ = self.decoder_gru(dec, h0)
        energy = torch.tanh(self.w_dec(dec).unsqueeze(2) + self.u_enc(enc).unsqueeze(1))  # [b, T, S, A]
        scores = self.v(energy).squeeze(-1)                               # [b, T, S]
        weights = torch.softmax(scores, dim=-1)
        context = torch.bmm(weights, enc)                                 # [b, T, 2He]
        combined = torch.tanh(self.combine(torch.cat((dec, context), dim=-1)))
        return self.out(combined)


# ---------------------------------------------------------------------------------------------
# GRU seq2seq with Bahdanau attention as the tutorials write it: a bias inside the tanh, the
# score Linear(A, 1) with its bias, and a source padding mask filled with -inf.
# ---------------------------------------------------------------------------------------------

@dataclass
class GruBahdanauConfig:
    src_vocab_size: int = 70
    tgt_vocab_size: int = 80
    embed: int = 24
    encoder_hidden: int = 18     # per direction: values of 36, not a multiple of 8
    decoder_hidden: int = 40
    attention: int = 44          # not a multiple of 8 either
    pad_id: int = 0


class GruBahdanauSeq2Seq(nn.Module):
    """src_ids [batch, src_seq], tgt_ids [batch, tgt_seq] -> logits [batch, tgt_seq, tgt_vocab].

    Teacher-forced; score(t, s) = v^T tanh(W d_t + U h_s + b) + c, padded sources hidden.
    """

    def __init__(self, cfg: GruBahdanauConfig):
        super().__init__()
        enc_out = 2 * cfg.encoder_hidden
        self.pad_id = cfg.pad_id
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.embed)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.embed)
        self.encoder = nn.GRU(cfg.embed, cfg.encoder_hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(enc_out, cfg.decoder_hidden)
        self.decoder = nn.GRU(cfg.embed, cfg.decoder_hidden, batch_first=True)
        self.query = nn.Linear(cfg.decoder_hidden, cfg.attention, bias=False)
        self.key = nn.Linear(enc_out, cfg.attention, bias=False)
        self.energy_bias = nn.Parameter(0.1 * torch.randn(cfg.attention))
        self.v = nn.Linear(cfg.attention, 1)
        self.out = nn.Linear(cfg.decoder_hidden + enc_out, cfg.tgt_vocab_size)

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor) -> torch.Tensor:
        enc, h_n = self.encoder(self.src_embed(src_ids))                  # enc: [b, S, 2He]
        h0 = torch.tanh(self.bridge(torch.cat((h_n[0], h_n[1]), dim=-1))).unsqueeze(0)
        dec, _ = self.decoder(self.tgt_embed(tgt_ids), h0)                # dec: [b, T, Hd]
        energy = torch.tanh(self.query(dec).unsqueeze(2) + self.key(enc).unsqueeze(1)
                            + self.energy_bias)                           # [b, T, S, A]
        scores = self.v(energy).squeeze(-1)                               # [b, T, S]
        scores = scores.masked_fill((src_ids == self.pad_id).unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        context = torch.bmm(weights, enc)                                 # [b, T, 2He]
        return self.out(torch.cat((dec, context), dim=-1))


# ---------------------------------------------------------------------------------------------
# GRU seq2seq with Luong attention, dot (d^T h) and general (d^T W h) side by side, single head.
# ---------------------------------------------------------------------------------------------

@dataclass
class LuongConfig:
    src_vocab_size: int = 60
    tgt_vocab_size: int = 75
    embed: int = 24
    hidden: int = 32
    pad_id: int = 0


class LuongAttentionSeq2Seq(nn.Module):
    """src_ids [batch, src_seq], tgt_ids [batch, tgt_seq] -> logits [batch, tgt_seq, tgt_vocab].

    Both scores are 3-D [b, T, S] bmm products (no head split); the dot one hides padding.
    """

    def __init__(self, cfg: LuongConfig):
        super().__init__()
        self.pad_id = cfg.pad_id
        self.src_embed = nn.Embedding(cfg.src_vocab_size, cfg.embed)
        self.tgt_embed = nn.Embedding(cfg.tgt_vocab_size, cfg.embed)
        self.encoder = nn.GRU(cfg.embed, cfg.hidden, batch_first=True)
        self.decoder = nn.GRU(cfg.embed, cfg.hidden, batch_first=True)
        self.general = nn.Linear(cfg.hidden, cfg.hidden, bias=False)
        self.combine = nn.Linear(3 * cfg.hidden, cfg.hidden)
        self.out = nn.Linear(cfg.hidden, cfg.tgt_vocab_size)

    def forward(self, src_ids: torch.Tensor, tgt_ids: torch.Tensor) -> torch.Tensor:
        enc, h_n = self.encoder(self.src_embed(src_ids))                  # enc: [b, S, H]
        dec, _ = self.decoder(self.tgt_embed(tgt_ids), h_n)               # dec: [b, T, H]
        dot = torch.bmm(dec, enc.transpose(1, 2))                         # [b, T, S]
        dot = dot.masked_fill((src_ids == self.pad_id).unsqueeze(1), float("-inf"))
        context_dot = torch.bmm(torch.softmax(dot, dim=-1), enc)
        general = torch.bmm(self.general(dec), enc.transpose(1, 2))
        context_general = torch.bmm(torch.softmax(general, dim=-1), enc)
        combined = torch.tanh(self.combine(torch.cat((dec, context_dot, context_general), dim=-1)))
        return self.out(combined)


# ---------------------------------------------------------------------------------------------
# Export helper shared by tests/models/build_models.py and examples/models/.
# ---------------------------------------------------------------------------------------------

# ---------------------------------------------------------------------------------------------
# ALiBi decoder: no position embeddings; each head subtracts slope * distance from its scores
# (written `scores - bias`, as several ALiBi implementations do), causal by a tril buffer.
# ---------------------------------------------------------------------------------------------

class AlibiAttention(nn.Module):
    def __init__(self, cfg: GptConfig):
        super().__init__()
        self.heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.hidden = cfg.hidden
        self.qkv = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.proj = nn.Linear(cfg.hidden, cfg.hidden)
        # The geometric slopes of the ALiBi paper: 2^(-8 i / heads).
        slopes = torch.tensor([2.0 ** (-8.0 * (i + 1) / cfg.heads) for i in range(cfg.heads)])
        self.register_buffer("slopes", slopes.view(cfg.heads, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        q, k, v = self.qkv(x).split(self.hidden, dim=2)
        q, k, v = (t.view(batch, seq, self.heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        positions = torch.arange(seq, device=x.device)
        distance = (positions.view(1, -1) - positions.view(-1, 1)).abs().to(scores.dtype)
        scores = scores - self.slopes * distance
        causal = torch.ones(seq, seq, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        probs = F.softmax(scores, dim=-1)
        context = torch.matmul(probs, v).transpose(1, 2).reshape(batch, seq, self.hidden)
        return self.proj(context)


class AlibiBlock(GptBlock):
    def __init__(self, cfg: GptConfig):
        super().__init__(cfg)
        self.attn = AlibiAttention(cfg)


class AlibiDecoder(nn.Module):
    """input_ids (int64 [batch, seq]) -> logits [batch, seq, vocab]; ALiBi instead of positions."""

    def __init__(self, cfg: GptConfig):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.blocks = nn.ModuleList(AlibiBlock(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab_size, bias=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        x = self.wte(input_ids)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def export_onnx(model: nn.Module, example_inputs: tuple, path: str, input_names: list,
                output_names: list, dynamic_axes: dict, opset: int) -> None:
    """TorchScript export as the project's model tests expect it: eval mode, constant folding."""
    import warnings

    model.eval()
    with torch.no_grad(), warnings.catch_warnings():
        # The exporter warns about every traced size() and RNN batch_first; none of it matters here.
        warnings.simplefilter("ignore")
        torch.onnx.export(model, example_inputs, path, input_names=input_names,
                          output_names=output_names, dynamic_axes=dynamic_axes,
                          opset_version=opset, do_constant_folding=True)
