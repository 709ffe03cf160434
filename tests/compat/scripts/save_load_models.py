"""The saving-and-loading tutorial's idioms: a state_dict saved to a path and to an in-memory buffer,
loaded with weights_only=True and map_location (a string, a torch.device, a dict), tensors and lists of
tensors saved alone, warm-starting a different model with strict=False (missing and unexpected keys),
the error of a strict load with a wrong shape, and a model left unchanged by that failed load."""
import io

import numpy as np
import torch
import torch.nn as nn


class Small(nn.Module):
    def __init__(self, hidden=4, extra=False):
        super().__init__()
        self.fc1 = nn.Linear(3, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, 2)
        if extra:
            self.fc3 = nn.Linear(2, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


rng = np.random.default_rng(12)
model = Small()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(size=p.shape).astype(np.float32)))
model(torch.from_numpy(rng.normal(size=(8, 3)).astype(np.float32)))  # moves the running statistics
print(list(model.state_dict().keys()))

torch.save(model.state_dict(), "small.pt")
for location in ("cpu", torch.device("cpu"), {"cpu": "cpu"}, None):
    state = torch.load("small.pt", map_location=location, weights_only=True)
    fresh = Small()
    fresh.load_state_dict(state)
    print(type(state).__name__, all(torch.equal(a, b) for a, b in zip(fresh.state_dict().values(),
                                                                      model.state_dict().values())))
print(state["bn.running_mean"], state["bn.num_batches_tracked"])

buffer = io.BytesIO()
torch.save({"weights": model.fc1.weight.detach(), "history": [torch.tensor(1.5), torch.tensor([2, 3])]}, buffer)
buffer.seek(0)
loaded = torch.load(buffer, weights_only=True)
print(loaded["weights"].shape, loaded["history"], loaded["weights"].requires_grad)

bigger = Small(extra=True)
result = bigger.load_state_dict(model.state_dict(), strict=False)
print(sorted(result.missing_keys), result.unexpected_keys)
smaller = Small()
partial = {k: v for k, v in model.state_dict().items() if k.startswith("fc")}
result = smaller.load_state_dict(partial, strict=False)
print(sorted(result.missing_keys), torch.equal(smaller.fc2.bias, model.fc2.bias))

wide = Small(hidden=5)
before = wide.fc1.weight.detach().clone()
try:
    wide.load_state_dict(model.state_dict())
except RuntimeError as error:
    print("RuntimeError:", "size mismatch" in str(error), "fc1.weight" in str(error))
print(torch.equal(wide.fc1.weight, before))
