"""An LSTM sequence classifier: Embedding -> nn.LSTM(batch_first=True) -> the last layer's final hidden
state -> Linear, trained with CrossEntropyLoss and Adam; parameters named and initialised as PyTorch's."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(19)
vocab_size, seq_len, batch = 12, 7, 16
tokens = torch.tensor(rng.integers(1, vocab_size, (batch, seq_len)))
labels = (tokens == 3).any(dim=1).long()  # class 1: the sequence contains token 3
print(tokens.shape, labels.tolist())


class LSTMClassifier(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_dim, num_layers, num_classes):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.lstm = nn.LSTM(embed_dim, hidden_dim, num_layers=num_layers, batch_first=True)
        self.fc = nn.Linear(hidden_dim, num_classes)

    def forward(self, x):
        embedded = self.embedding(x)
        output, (h_n, c_n) = self.lstm(embedded)
        return self.fc(h_n[-1]), output, h_n, c_n


model = LSTMClassifier(vocab_size, 6, 8, 2, 2)
print([(name, tuple(p.shape)) for name, p in model.lstm.named_parameters()])
with torch.no_grad():
    for name, param in model.named_parameters():
        param.copy_(torch.tensor(rng.uniform(-0.4, 0.4, param.shape), dtype=torch.float32))

logits, output, h_n, c_n = model(tokens)
print(output.shape, h_n.shape, c_n.shape, torch.allclose(output[:, -1], h_n[-1]))
print("first logits", [round(v, 6) for v in logits[0].tolist()])

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
for epoch in range(12):
    optimizer.zero_grad()
    logits = model(tokens)[0]
    loss = criterion(logits, labels)
    loss.backward()
    optimizer.step()
    if epoch % 4 == 3:
        accuracy = (logits.argmax(dim=1) == labels).float().mean().item()
        print(f"epoch {epoch + 1}: loss {loss.item():.5f}, accuracy {accuracy:.4f}")

# A given initial state, and an unbatched sequence
h0 = torch.zeros(2, batch, 8)
c0 = torch.full((2, batch, 8), 0.1)
output, (h_n, c_n) = model.lstm(model.embedding(tokens), (h0, c0))
print(f"{output.sum().item():.5f} {c_n.sum().item():.5f}")
single, (h1, c1) = model.lstm(model.embedding(tokens[0]))
print(single.shape, h1.shape, torch.allclose(single, model.lstm(model.embedding(tokens[:1]))[0][0], atol=1e-6))
