"""A ResNet BasicBlock (Conv2d without bias, BatchNorm2d, an in-place residual `out += shortcut(x)`, an empty
nn.Sequential() as the identity shortcut or a strided 1x1 projection), a tiny ResNet with adaptive average
pooling, trained a few steps with SGD (momentum, weight decay), then evaluated."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super(BasicBlock, self).__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(self.expansion * planes)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        out = F.relu(out)
        return out


class TinyResNet(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = BasicBlock(8, 8)
        self.layer2 = BasicBlock(8, 16, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.linear = nn.Linear(16, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer2(self.layer1(out))
        out = self.avgpool(out)
        out = out.view(out.size(0), -1)
        return self.linear(out)


model = TinyResNet()
print(len(model.layer1.shortcut), model.layer2.shortcut)
rng = np.random.default_rng(28)
with torch.no_grad():
    for name, param in model.named_parameters():
        if param.dim() > 1:
            param.copy_(torch.from_numpy(rng.normal(0, np.sqrt(2 / param[0].numel()), param.shape).astype(np.float32)))
    model.linear.bias.zero_()
print(sum(p.numel() for p in model.parameters()), model.conv1.bias,
      [k for k in model.state_dict() if "layer2.shortcut" in k])

images = torch.from_numpy(rng.standard_normal((16, 3, 8, 8)).astype(np.float32))
labels = torch.from_numpy(np.arange(16) % 4)
images += labels.view(-1, 1, 1, 1).float() * 0.5  # a class-dependent brightness to learn
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
criterion = nn.CrossEntropyLoss()
model.train()
for step in range(6):
    optimizer.zero_grad()
    outputs = model(images)
    loss = criterion(outputs, labels)
    loss.backward()
    optimizer.step()
    print(f"step {step}: loss {loss.item():.5f}")

model.eval()
with torch.no_grad():
    outputs = model(images)
    _, predicted = outputs.max(1)
    print("accuracy", predicted.eq(labels).sum().item() / labels.size(0), [round(v, 4) for v in outputs[0].tolist()])
    print("running_var", [round(v, 4) for v in model.layer2.shortcut[1].running_var[:4].tolist()])
