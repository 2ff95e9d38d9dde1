"""A small GPT in nanoGPT's style, written for torch: a config dataclass, pre-norm blocks, learned
positions, a head tied to the token embedding, and ``forward(idx, targets=None) -> (logits, loss)``.

``CachedGPT`` is the same network taking the server's cache protocol (docs/generation.md): its
forward accepts ``past_key_values`` (None, or what it returned last time) and returns
``(logits, past_key_values)`` for the new tokens only.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass(frozen=True)
class GPTConfig:
    block_size: int = 64  # longest sequence
    vocab_size: int = 128  # at least the tokenizer's size
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x, past=None):
        B, T, C = x.size()
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)  # (B, nh, S, hs)
            v = torch.cat([past[1], v], dim=2)
        S = k.size(2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, T, S)
        visible = torch.tril(torch.ones(T, S), diagonal=S - T)
        att = F.softmax(att.masked_fill(visible == 0, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y), (k, v)


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x, past=None):
        a, present = self.attn(self.ln_1(x), past)
        x = x + a
        return x + self.mlp(self.ln_2(x)), present


class GPT(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.config = GPTConfig(**kwargs)
        c = self.config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(c.vocab_size, c.n_embd),
            wpe=nn.Embedding(c.block_size, c.n_embd),
            h=nn.ModuleList([Block(c) for _ in range(c.n_layer)]),
            ln_f=nn.LayerNorm(c.n_embd),
        ))
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.transformer.wte.weight = self.lm_head.weight  # tied, as nanoGPT

    def hidden(self, idx, past_key_values=None):
        start = 0 if past_key_values is None else past_key_values[0][0].size(2)
        T = idx.size(1)
        assert start + T <= self.config.block_size, f"{start + T} tokens, block size {self.config.block_size}"
        pos = torch.arange(start, start + T, dtype=torch.long)
        x = self.transformer.wte(idx) + self.transformer.wpe(pos)
        presents = []
        for i, block in enumerate(self.transformer.h):
            x, present = block(x, None if past_key_values is None else past_key_values[i])
            presents.append(present)
        return self.transformer.ln_f(x), presents

    def forward(self, idx, targets=None):
        x, _ = self.hidden(idx)
        logits = self.lm_head(x)  # (B, T, vocab_size)
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss


class CachedGPT(GPT):
    def forward(self, idx, past_key_values=None):
        x, presents = self.hidden(idx, past_key_values)
        return self.lm_head(x), presents


class LastTokenGPT(GPT):
    """nanoGPT's inference shortcut: without targets, logits of the last position only."""

    def forward(self, idx, targets=None):
        x, _ = self.hidden(idx)
        return self.lm_head(x[:, [-1], :]), None


class BrokenGPT(GPT):
    """Returns logits without the token dimension: refused at warm-up."""

    def forward(self, idx):
        x, _ = self.hidden(idx)
        return self.lm_head(x[:, -1, :])
