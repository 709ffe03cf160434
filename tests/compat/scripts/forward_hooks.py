"""Feature extraction with forward hooks (activation[name] = output.detach()), a forward pre-hook that
rescales a layer's input, a hook that replaces a layer's output, and removing hooks by their handles."""
import numpy as np
import torch
import torch.nn as nn

model = nn.Sequential(
    nn.Linear(6, 8), nn.ReLU(),
    nn.Linear(8, 8), nn.ReLU(),
    nn.Linear(8, 3),
)
rng = np.random.default_rng(12)
with torch.no_grad():
    for param in model.parameters():
        param.copy_(torch.tensor(rng.uniform(-0.5, 0.5, param.shape), dtype=torch.float32))
x = torch.tensor(rng.standard_normal((4, 6)), dtype=torch.float32)

activation = {}


def get_activation(name):
    def hook(model, input, output):
        activation[name] = output.detach()
    return hook


handles = [model[1].register_forward_hook(get_activation('relu1')),
           model[3].register_forward_hook(get_activation('relu2'))]
output = model(x)
for name, feature in activation.items():
    print(name, tuple(feature.shape), f"{feature.sum().item():.6f}", feature.requires_grad,
          (feature == 0).sum().item())
print("output", [round(v, 6) for v in output.flatten().tolist()])

for handle in handles:
    handle.remove()
activation.clear()
model(x)
print("removed hooks are not called:", activation == {})


def halve_input(module, args):
    return (args[0] * 0.5,)


def clamp_output(module, args, output):
    return output.clamp(min=-0.1, max=0.1)


pre = model[2].register_forward_pre_hook(halve_input)
post = model[4].register_forward_hook(clamp_output)
hooked = model(x)
print("hooked", [round(v, 6) for v in hooked.flatten().tolist()])
hooked.sum().backward()
print("gradient through the hooks", f"{model[0].weight.grad.abs().sum().item():.6f}")
pre.remove()
post.remove()
print("unhooked again:", torch.allclose(model(x), output))

# Every named submodule's output, collected by one hook registered through named_modules().
shapes = []
for name, module in model.named_modules():
    if isinstance(module, nn.Linear):
        module.register_forward_hook(lambda m, inp, out, name=name: shapes.append((name, tuple(out.shape))))
model(x)
print(shapes)
