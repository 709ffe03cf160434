"""A small sequence classifier in the style of the Transformer tutorials: a sinusoidal PositionalEncoding
kept in a register_buffer, nn.TransformerEncoderLayer(batch_first=True) stacked by nn.TransformerEncoder,
a causal mask from nn.Transformer.generate_square_subsequent_mask, a key padding mask, nn.MultiheadAttention
with its averaged weights, named_buffers and the buffer in the state_dict, and a few Adam steps."""
import math

import numpy as np
import torch
import torch.nn as nn


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x):
        return x + self.pe[:x.size(1)]


class Classifier(nn.Module):
    def __init__(self, vocab, d_model=16, nhead=2, layers=2, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = PositionalEncoding(d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens, mask=None, padding=None):
        x = self.encoder(self.pos(self.embed(tokens)), mask=mask, src_key_padding_mask=padding)
        return self.head(x.mean(dim=1))


rng = np.random.default_rng(9)
model = Classifier(vocab=12)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.2, p.shape).astype(np.float32)))
print([name for name, _ in model.named_buffers()], 'pos.pe' in model.state_dict())
print(model.pos.pe[3, :4], model.encoder.layers[0].self_attn.num_heads)

tokens = torch.from_numpy(rng.integers(0, 12, (4, 6)))
labels = torch.tensor([0, 1, 2, 1])
causal = nn.Transformer.generate_square_subsequent_mask(6)
print(causal[:3, :3])
padding = torch.zeros(4, 6, dtype=torch.bool)
padding[0, 4:] = True
print(model(tokens))
print(model(tokens, mask=causal))
print(model(tokens, padding=padding)[0])

optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(5):
    optimizer.zero_grad()
    loss = nn.functional.cross_entropy(model(tokens, mask=causal), labels)
    loss.backward()
    optimizer.step()
    print(step, f"{loss.item():.5f}")

attention = nn.MultiheadAttention(embed_dim=8, num_heads=2, batch_first=True)
with torch.no_grad():
    for p in attention.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.3, p.shape).astype(np.float32)))
query = torch.from_numpy(rng.normal(size=(2, 5, 8)).astype(np.float32))
out, weights = attention(query, query, query, need_weights=True)
print(out.shape, weights.shape, weights.sum(-1))
print(out[0, 0], weights[1, 0])
