"""An LSTM language model with tied input and output embeddings (the word_language_model layout)."""

import torch.nn as nn
import torch.nn.functional as F


class RNNModel(nn.Module):
    def __init__(self, ntoken=40, ninp=16, nhid=16, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight  # tied weights: nhid == ninp
        self.nlayers, self.nhid = nlayers, nhid

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        shape = (self.nlayers, bsz, self.nhid)
        return weight.new_zeros(shape), weight.new_zeros(shape)

    def forward(self, input, hidden=None):
        emb = self.drop(self.encoder(input))  # (T, B, ninp)
        if hidden is None:
            hidden = self.init_hidden(input.size(1))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output))
        return F.log_softmax(decoded, dim=-1), hidden
