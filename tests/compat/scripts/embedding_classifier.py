"""A bag-of-words text classifier: token ids padded with 0, nn.Embedding(padding_idx=0), a masked mean over
the sequence, a linear layer and CrossEntropyLoss, trained with Adam; the padding row gets no gradient."""
import numpy as np
import torch
import torch.nn as nn

vocab = {"<pad>": 0, "good": 1, "great": 2, "fun": 3, "bad": 4, "awful": 5, "boring": 6, "movie": 7, "plot": 8}
sentences = [("good movie", 1), ("great fun plot", 1), ("bad plot", 0), ("awful boring movie", 0),
             ("fun movie", 1), ("boring plot", 0), ("great movie", 1), ("bad awful", 0)]


def encode(text, length=4):
    ids = [vocab[word] for word in text.split()]
    return ids + [0] * (length - len(ids))


tokens = torch.tensor([encode(text) for text, _ in sentences])
labels = torch.tensor([label for _, label in sentences])
print(tokens.shape, tokens.dtype, tokens[3].tolist())


class BagOfWords(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.fc = nn.Linear(embed_dim, num_class)

    def forward(self, text):
        embedded = self.embedding(text)
        mask = (text != 0).unsqueeze(-1).float()
        pooled = (embedded * mask).sum(dim=1) / mask.sum(dim=1)
        return self.fc(pooled)


model = BagOfWords(len(vocab), 5, 2)
rng = np.random.default_rng(18)
with torch.no_grad():
    model.embedding.weight.copy_(torch.tensor(rng.standard_normal((len(vocab), 5)), dtype=torch.float32))
    model.embedding.weight[0].fill_(0)
    model.fc.weight.copy_(torch.tensor(rng.uniform(-0.4, 0.4, (2, 5)), dtype=torch.float32))
    model.fc.bias.zero_()
print(model.embedding, model.embedding.weight.shape)

criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
for epoch in range(15):
    optimizer.zero_grad()
    loss = criterion(model(tokens), labels)
    loss.backward()
    if epoch == 0:
        print("padding row gradient:", model.embedding.weight.grad[0].abs().sum().item(),
              "others:", model.embedding.weight.grad[1:].abs().sum().item() > 0)
    optimizer.step()
    if epoch % 5 == 4:
        accuracy = (model(tokens).argmax(1) == labels).float().mean().item()
        print(f"epoch {epoch + 1}: loss {loss.item():.5f} accuracy {accuracy:.3f}")

print("padding row unchanged:", model.embedding.weight[0].tolist())
with torch.no_grad():
    test = torch.tensor([encode("great plot"), encode("awful movie")])
    print(torch.softmax(model(test), dim=1).argmax(dim=1).tolist())
    print(nn.functional.embedding(torch.tensor([[1, 2]]), model.embedding.weight).shape)
