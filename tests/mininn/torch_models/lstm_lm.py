"""A character-level language model: embedding, a 2-layer LSTM, and an output layer tied to the embedding."""

import torch
from torch import nn


class CharLSTM(nn.Module):
    def __init__(self, vocab=40, width=16, layers=2, dropout=0.2):
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.lstm = nn.LSTM(width, width, num_layers=layers, dropout=dropout, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(width, vocab)
        self.head.weight = self.embed.weight  # one matrix reads and writes tokens

    def forward(self, tokens, state=None):
        hidden, state = self.lstm(self.drop(self.embed(tokens)), state)  # (B, T, width)
        return torch.log_softmax(self.head(self.drop(hidden)), dim=-1), state
