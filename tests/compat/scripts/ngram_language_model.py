"""The word-embeddings tutorial's N-gram language model: a vocabulary built from a text, nn.Embedding,
context embeddings concatenated with view((1, -1)), F.log_softmax and nn.NLLLoss, SGD over the n-grams
one at a time, the total loss per epoch, and looking up a word's learned embedding."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

CONTEXT_SIZE = 2
EMBEDDING_DIM = 6
text = """the norm of each layer keeps the activations of the next layer in a range where the
gradients of the layer neither vanish nor explode and the network trains""".split()

ngrams = [([text[i - j - 1] for j in range(CONTEXT_SIZE)], text[i]) for i in range(CONTEXT_SIZE, len(text))]
vocab = sorted(set(text))
word_to_ix = {word: i for i, word in enumerate(vocab)}
print(len(vocab), ngrams[:2])


class NGramLanguageModeler(nn.Module):
    def __init__(self, vocab_size, embedding_dim, context_size):
        super(NGramLanguageModeler, self).__init__()
        self.embeddings = nn.Embedding(vocab_size, embedding_dim)
        self.linear1 = nn.Linear(context_size * embedding_dim, 32)
        self.linear2 = nn.Linear(32, vocab_size)

    def forward(self, inputs):
        embeds = self.embeddings(inputs).view((1, -1))
        out = F.relu(self.linear1(embeds))
        out = self.linear2(out)
        log_probs = F.log_softmax(out, dim=1)
        return log_probs


losses = []
loss_function = nn.NLLLoss()
model = NGramLanguageModeler(len(vocab), EMBEDDING_DIM, CONTEXT_SIZE)
rng = np.random.default_rng(17)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.3, p.shape).astype(np.float32)))
optimizer = optim.SGD(model.parameters(), lr=0.05)

for epoch in range(4):
    total_loss = 0
    for context, target in ngrams:
        context_idxs = torch.tensor([word_to_ix[w] for w in context], dtype=torch.long)
        model.zero_grad()
        log_probs = model(context_idxs)
        loss = loss_function(log_probs, torch.tensor([word_to_ix[target]], dtype=torch.long))
        loss.backward()
        optimizer.step()
        total_loss += loss.item()
    losses.append(total_loss)
print(losses)
assert losses[-1] < losses[0]

print(model.embeddings.weight[word_to_ix["layer"]])
context_idxs = torch.tensor([word_to_ix[w] for w in ["each", "of"]], dtype=torch.long)
print(vocab[model(context_idxs).argmax(dim=1).item()])
