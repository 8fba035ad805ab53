"""A GPT-2 decoder (Radford et al. 2019): pre-LayerNorm blocks, learned positions, tied head.

Two attention code paths, chosen by ``GPT2Config.use_sdpa``:

* explicit: ``q @ k^T``, a causal mask sliced from a ``torch.tril`` buffer applied with
  ``masked_fill``, ``softmax``, ``@ v`` (what older eager GPT-2 code does);
* ``F.scaled_dot_product_attention(..., is_causal=True)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class GPT2Config:
    vocab_size: int = 50257
    max_positions: int = 1024
    layers: int = 12
    heads: int = 12
    hidden: int = 768
    seq_len: int = 128  # example input length
    layer_norm_eps: float = 1e-5
    dropout: float = 0.1
    use_sdpa: bool = False


FULL = GPT2Config()
SMALL = GPT2Config(vocab_size=512, max_positions=64, layers=2, heads=2, hidden=64, seq_len=16)
FULL_SDPA = replace(FULL, use_sdpa=True)
SMALL_SDPA = replace(SMALL, use_sdpa=True)


class CausalSelfAttention(nn.Module):
    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        if cfg.hidden % cfg.heads != 0:
            raise ValueError(f"hidden {cfg.hidden} is not a multiple of heads {cfg.heads}")
        self.heads = cfg.heads
        self.hidden = cfg.hidden
        self.use_sdpa = cfg.use_sdpa
        self.c_attn = nn.Linear(cfg.hidden, 3 * cfg.hidden)
        self.c_proj = nn.Linear(cfg.hidden, cfg.hidden)
        self.attn_dropout = nn.Dropout(cfg.dropout)
        self.resid_dropout = nn.Dropout(cfg.dropout)
        n = cfg.max_positions
        causal = torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n)
        self.register_buffer("bias", causal, persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        head_dim = hidden // self.heads
        q, k, v = self.c_attn(x).split(self.hidden, dim=2)
        q = q.view(batch, seq, self.heads, head_dim).transpose(1, 2)
        k = k.view(batch, seq, self.heads, head_dim).transpose(1, 2)
        v = v.view(batch, seq, self.heads, head_dim).transpose(1, 2)
        if self.use_sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head_dim))
            mask = self.bias[:, :, :seq, :seq]
            att = att.masked_fill(mask == 0, float("-inf"))
            att = self.attn_dropout(F.softmax(att, dim=-1))
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(batch, seq, hidden)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.hidden, 4 * cfg.hidden)
        self.act = nn.GELU(approximate="tanh")
        self.c_proj = nn.Linear(4 * cfg.hidden, cfg.hidden)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(nn.Module):
    """Returns logits [B, S, vocab]."""

    def __init__(self, cfg: GPT2Config) -> None:
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.wpe = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.drop = nn.Dropout(cfg.dropout)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.lm_head = nn.Linear(cfg.hidden, cfg.vocab_size, bias=False)
        self.apply(_init_weights)
        self.lm_head.weight = self.wte.weight  # tied input / output embedding
        with torch.no_grad():  # scaled init of the projections into the residual stream
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    p.normal_(0.0, 0.02 / math.sqrt(2 * cfg.layers))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        seq = input_ids.shape[1]
        positions = torch.arange(seq, dtype=torch.long, device=input_ids.device)
        x = self.drop(self.wte(input_ids) + self.wpe(positions))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@torch.no_grad()
def _init_weights(m: nn.Module) -> None:
    if isinstance(m, nn.Linear):
        m.weight.normal_(0.0, 0.02)
        if m.bias is not None:
            m.bias.zero_()
    elif isinstance(m, nn.Embedding):
        m.weight.normal_(0.0, 0.02)


def make_inputs(cfg: GPT2Config, batch: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    ids = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len), generator=gen, dtype=torch.long)
    return (ids,)


def output_shapes(cfg: GPT2Config, batch: int) -> list[tuple[int, ...]]:
    return [(batch, cfg.seq_len, cfg.vocab_size)]
