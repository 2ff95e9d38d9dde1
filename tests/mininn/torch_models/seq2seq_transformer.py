"""An encoder-decoder nn.Transformer for translation (as in the PyTorch seq2seq tutorial)."""

import math

import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, emb_size, dropout, maxlen=64):
        super().__init__()
        den = torch.exp(-torch.arange(0, emb_size, 2) * math.log(10000) / emb_size)
        pos = torch.arange(0, maxlen).reshape(maxlen, 1)
        pos_embedding = torch.zeros((maxlen, emb_size))
        pos_embedding[:, 0::2] = torch.sin(pos * den)
        pos_embedding[:, 1::2] = torch.cos(pos * den)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("pos_embedding", pos_embedding.unsqueeze(-2))

    def forward(self, token_embedding):
        return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])


class Seq2SeqTransformer(nn.Module):
    def __init__(self, src_vocab=30, tgt_vocab=30, emb_size=16, nhead=2, layers=2, ffn=32, dropout=0.1):
        super().__init__()
        self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=layers,
                                          num_decoder_layers=layers, dim_feedforward=ffn, dropout=dropout)
        self.generator = nn.Linear(emb_size, tgt_vocab)
        self.src_tok_emb = nn.Embedding(src_vocab, emb_size)
        self.tgt_tok_emb = nn.Embedding(tgt_vocab, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)
        self.emb_size = emb_size

    def forward(self, src, tgt):
        tgt_mask = self.transformer.generate_square_subsequent_mask(tgt.size(0))
        src_padding_mask = (src == 0).transpose(0, 1)
        tgt_padding_mask = (tgt == 0).transpose(0, 1)
        src_emb = self.positional_encoding(self.src_tok_emb(src) * math.sqrt(self.emb_size))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(tgt) * math.sqrt(self.emb_size))
        outs = self.transformer(src_emb, tgt_emb, None, tgt_mask, None, src_padding_mask, tgt_padding_mask,
                                src_padding_mask)
        return self.generator(outs)
