"""A BERT encoder (Devlin et al. 2018) in the style of the common eager implementation.

Attention is written out with ``torch.matmul`` and ``softmax`` plus an additive mask built
from the attention mask, exactly the graph a compiler receives from typical BERT code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class BertConfig:
    vocab_size: int = 30522
    hidden: int = 768
    layers: int = 12
    heads: int = 12
    intermediate: int = 3072
    max_positions: int = 512
    type_vocab_size: int = 2
    seq_len: int = 128  # example input length
    layer_norm_eps: float = 1e-12
    dropout: float = 0.1


FULL = BertConfig()
SMALL = BertConfig(
    vocab_size=1000, hidden=64, layers=2, heads=2, intermediate=256, max_positions=64, seq_len=16
)


class BertEmbeddings(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden, padding_idx=0)
        self.position_embeddings = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden)
        self.LayerNorm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)
        positions = torch.arange(cfg.max_positions).expand((1, -1))
        self.register_buffer("position_ids", positions, persistent=False)
        token_types = torch.zeros(1, cfg.max_positions, dtype=torch.long)
        self.register_buffer("token_type_ids", token_types, persistent=False)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        batch, seq = input_ids.shape
        position_ids = self.position_ids[:, :seq]
        token_type_ids = self.token_type_ids[:, :seq].expand(batch, seq)
        x = self.word_embeddings(input_ids)
        x = x + self.token_type_embeddings(token_type_ids)
        x = x + self.position_embeddings(position_ids)
        return self.dropout(self.LayerNorm(x))


class BertSelfAttention(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        if cfg.hidden % cfg.heads != 0:
            raise ValueError(f"hidden {cfg.hidden} is not a multiple of heads {cfg.heads}")
        self.heads = cfg.heads
        self.head_dim = cfg.hidden // cfg.heads
        self.query = nn.Linear(cfg.hidden, cfg.hidden)
        self.key = nn.Linear(cfg.hidden, cfg.hidden)
        self.value = nn.Linear(cfg.hidden, cfg.hidden)
        self.dropout = nn.Dropout(cfg.dropout)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, _ = x.shape
        return x.view(batch, seq, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, hidden: torch.Tensor, additive_mask: torch.Tensor) -> torch.Tensor:
        q = self.split_heads(self.query(hidden))
        k = self.split_heads(self.key(hidden))
        v = self.split_heads(self.value(hidden))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + additive_mask
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        context = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        batch, seq = context.shape[:2]
        return context.view(batch, seq, self.heads * self.head_dim)


class BertResidualOutput(nn.Module):
    """dense -> dropout -> LayerNorm(x + residual), used after attention and after the FFN."""

    def __init__(self, cin: int, cfg: BertConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cin, cfg.hidden)
        self.LayerNorm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertLayer(nn.Module):
    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.attention = BertSelfAttention(cfg)
        self.attention_output = BertResidualOutput(cfg.hidden, cfg)
        self.intermediate = nn.Linear(cfg.hidden, cfg.intermediate)
        self.act = nn.GELU()  # exact (erf) GELU
        self.output = BertResidualOutput(cfg.intermediate, cfg)

    def forward(self, hidden: torch.Tensor, additive_mask: torch.Tensor) -> torch.Tensor:
        attn = self.attention_output(self.attention(hidden, additive_mask), hidden)
        return self.output(self.act(self.intermediate(attn)), attn)


class Bert(nn.Module):
    """Returns (sequence_output [B, S, H], pooled_output [B, H])."""

    def __init__(self, cfg: BertConfig) -> None:
        super().__init__()
        self.embeddings = BertEmbeddings(cfg)
        self.layers = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.layers))
        self.pooler = nn.Linear(cfg.hidden, cfg.hidden)
        self.apply(_init_weights)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        hidden = self.embeddings(input_ids)
        # [B, S] of 1 (attend) / 0 (padding) -> additive [B, 1, 1, S] of 0 / most negative.
        mask = attention_mask[:, None, None, :].to(hidden.dtype)
        additive_mask = (1.0 - mask) * torch.finfo(hidden.dtype).min
        for layer in self.layers:
            hidden = layer(hidden, additive_mask)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        return hidden, pooled


@torch.no_grad()
def _init_weights(m: nn.Module) -> None:
    if isinstance(m, nn.Linear):
        m.weight.normal_(0.0, 0.02)
        if m.bias is not None:
            m.bias.zero_()
    elif isinstance(m, nn.Embedding):
        m.weight.normal_(0.0, 0.02)
        if m.padding_idx is not None:
            m.weight[m.padding_idx].zero_()


def make_inputs(cfg: BertConfig, batch: int, gen: torch.Generator) -> tuple[torch.Tensor, ...]:
    """Token ids and an attention mask whose last eighth of positions is padding."""
    seq = cfg.seq_len
    input_ids = torch.randint(1, cfg.vocab_size, (batch, seq), generator=gen, dtype=torch.long)
    attention_mask = torch.ones(batch, seq, dtype=torch.long)
    pad = max(1, seq // 8)
    attention_mask[:, seq - pad :] = 0
    input_ids[:, seq - pad :] = 0
    return input_ids, attention_mask


def output_shapes(cfg: BertConfig, batch: int) -> list[tuple[int, ...]]:
    return [(batch, cfg.seq_len, cfg.hidden), (batch, cfg.hidden)]
