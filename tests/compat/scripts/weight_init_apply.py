"""Weight initialisation with model.apply, nn.init and .data.fill_: random draws differ between libraries, so
the deterministic parts are printed and the random ones checked against the bounds and spreads their
formulas promise."""
import math

import torch
import torch.nn as nn


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.classifier = nn.Sequential(nn.Linear(16 * 8 * 8, 256), nn.ReLU(), nn.Linear(256, 10))

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def init_weights(m):
    if isinstance(m, nn.Linear):
        torch.nn.init.xavier_uniform_(m.weight)
        m.bias.data.fill_(0.01)
    elif isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.constant_(m.weight, 1)
        nn.init.constant_(m.bias, 0)


torch.manual_seed(0)
model = ConvNet()
returned = model.apply(init_weights)
print("apply returns the model:", returned is model)

fc1, fc2 = model.classifier[0], model.classifier[2]
bound = math.sqrt(6.0 / (fc1.in_features + fc1.out_features))
print(f"xavier bound {bound:.6f}, gain(relu) {nn.init.calculate_gain('relu'):.6f}, "
      f"gain(tanh) {nn.init.calculate_gain('tanh'):.6f}")
print("fc1 weights within the bound:", fc1.weight.abs().max().item() <= bound)
print("fc1 weights spread like U(-b, b):", abs(fc1.weight.std().item() - bound / math.sqrt(3)) < 0.02 * bound)
print("biases:", fc1.bias[:3].tolist(), fc2.bias.sum().item(), fc1.bias.requires_grad, fc1.bias.is_leaf)

conv = model.features[0]
fan_out = conv.out_channels * conv.kernel_size[0] * conv.kernel_size[1]
expected_std = math.sqrt(2.0) / math.sqrt(fan_out)
print(f"kaiming std {expected_std:.6f}:", abs(conv.weight.std().item() - expected_std) < 0.1 * expected_std)
print("conv bias zero:", conv.bias.abs().sum().item(), "batchnorm:", model.features[1].weight.mean().item(),
      model.features[1].bias.mean().item())

torch.manual_seed(0)
again = ConvNet().apply(init_weights)
print("same seed, same weights:", torch.equal(again.classifier[0].weight, fc1.weight))

# .data shares memory with the parameter: an in-place write through it changes the parameter
fc2.weight.data.normal_(mean=0.0, std=0.02)
print("normal_ through .data:", abs(fc2.weight.std().item() - 0.02) < 0.004, fc2.weight.requires_grad)
fc2.weight.data.mul_(0).add_(0.5)
print("mul_ and add_ through .data:", fc2.weight.unique().tolist(), fc2.weight.grad)
out = model(torch.ones(2, 3, 8, 8))
print(out.shape, out.requires_grad)
