"""A small translator on nn.Transformer: learned positions, causal and padding masks, batch first."""

import torch
import torch.nn as nn

PAD = 0


class Translator(nn.Module):
    def __init__(self, source_vocab=30, target_vocab=30, dim=16, heads=2, layers=2, max_len=32, dropout=0.1):
        super().__init__()
        self.source_tokens = nn.Embedding(source_vocab, dim, padding_idx=PAD)
        self.target_tokens = nn.Embedding(target_vocab, dim, padding_idx=PAD)
        self.positions = nn.Embedding(max_len, dim)
        self.core = nn.Transformer(d_model=dim, nhead=heads, num_encoder_layers=layers,
                                   num_decoder_layers=layers, dim_feedforward=2 * dim, dropout=dropout,
                                   batch_first=True)
        self.to_vocab = nn.Linear(dim, target_vocab)

    def embed(self, table, tokens):
        return table(tokens) + self.positions(torch.arange(tokens.shape[1]))

    def forward(self, source, target):
        causal = nn.Transformer.generate_square_subsequent_mask(target.shape[1])
        hidden = self.core(
            self.embed(self.source_tokens, source), self.embed(self.target_tokens, target),
            tgt_mask=causal, src_key_padding_mask=source == PAD, tgt_key_padding_mask=target == PAD,
            memory_key_padding_mask=source == PAD,
        )
        return self.to_vocab(hidden)
