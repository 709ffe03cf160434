"""Next-value prediction on a sine wave with a two-layer nn.GRU (seq-first input, an explicit initial
hidden state) and a Linear head, trained with Adam and gradient clipping; an nn.RNN
against its recurrence written out."""
import numpy as np
import torch
import torch.nn as nn

seq_len, batch = 10, 6
time = np.linspace(0, 4 * np.pi, seq_len + batch + 1, dtype=np.float32)
wave = np.sin(time)
inputs = torch.tensor(np.stack([wave[i:i + seq_len] for i in range(batch)], axis=1)[..., None])  # (seq, batch, 1)
targets = torch.tensor(np.stack([wave[i + 1:i + seq_len + 1] for i in range(batch)], axis=1)[..., None])
print(inputs.shape, targets.shape, inputs.dtype)


class SequenceModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(input_size=1, hidden_size=12, num_layers=2)
        self.head = nn.Linear(12, 1)

    def forward(self, x, h0):
        output, h_n = self.gru(x, h0)
        return self.head(output), h_n


model = SequenceModel()
rng = np.random.default_rng(20)
with torch.no_grad():
    for param in model.parameters():
        param.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, param.shape).astype(np.float32)))
print(sum(p.numel() for p in model.parameters()), [name for name, _ in model.gru.named_parameters()][:4])

h0 = torch.zeros(2, batch, 12)
optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
criterion = nn.MSELoss()
for step in range(30):
    optimizer.zero_grad()
    prediction, h_n = model(inputs, h0)
    loss = criterion(prediction, targets)
    loss.backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if step == 0:
        first_loss = loss.item()
    if step % 5 == 4:
        print(f"step {step + 1}: loss {loss.item():.6f}, gradient norm {norm.item():.5f}")
output, h_n = model.gru(inputs, h0)
print(prediction.shape, h_n.shape, torch.allclose(h_n[-1], output[-1]))
assert loss.item() < first_loss / 3

with torch.no_grad():
    model.eval()
    rnn = nn.RNN(1, 4, nonlinearity='tanh')
    rnn.weight_ih_l0.fill_(0.5)
    rnn.weight_hh_l0.fill_(-0.25)
    rnn.bias_ih_l0.zero_()
    rnn.bias_hh_l0.fill_(0.1)
    output, h_n = rnn(inputs)
    h = torch.zeros(batch, 4)
    for x_t in inputs:  # the recurrence written out: h = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)
        h = torch.tanh(x_t @ rnn.weight_ih_l0.T + rnn.bias_ih_l0 + h @ rnn.weight_hh_l0.T + rnn.bias_hh_l0)
    print("RNN", [round(v, 6) for v in h_n[0, :, 0].tolist()], torch.allclose(h, h_n[0], atol=1e-6))
