# compat: requires=sklearn
"""The MNIST example's network and loop on the 8x8 digits: Conv2d, dropout, max_pool2d, log_softmax,
nll_loss, Adadelta and StepLR. Dropout and shuffling make the training random: the untrained network is
evaluated (eval mode, seeded weights) and compared, the trained one must reach a stated accuracy."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from sklearn.datasets import load_digits
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, 1)
        self.conv2 = nn.Conv2d(16, 32, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(128, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(model, device, train_loader, optimizer, epoch):
    model.train()
    losses = []
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test(model, device, test_loader, verbose=True):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction='sum').item()  # summed, averaged over the set below
            pred = output.argmax(dim=1, keepdim=True)  # the most probable digit
            correct += pred.eq(target.view_as(pred)).sum().item()

    test_loss /= len(test_loader.dataset)
    if verbose:
        print('\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n'.format(
            test_loss, correct, len(test_loader.dataset),
            100. * correct / len(test_loader.dataset)))
    return correct / len(test_loader.dataset)


torch.manual_seed(1)
device = torch.device("cpu")

digits = load_digits()
images = (digits.images / 16.0).astype(np.float32)[:, None]
images = (images - images.mean()) / images.std()  # as transforms.Normalize((mean,), (std,))
labels = torch.from_numpy(digits.target)
train_set = TensorDataset(torch.from_numpy(images[:1500]), labels[:1500])
test_set = TensorDataset(torch.from_numpy(images[1500:]), labels[1500:])
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
test_loader = DataLoader(test_set, batch_size=1000)

model = Net().to(device)
rng = np.random.default_rng(11)
with torch.no_grad():
    for name, param in model.named_parameters():
        bound = 1 / np.sqrt(param[0].numel()) if param.dim() > 1 else 0.05
        param.copy_(torch.from_numpy(rng.uniform(-bound, bound, param.shape).astype(np.float32)))
test(model, device, test_loader)

optimizer = optim.Adadelta(model.parameters(), lr=1.0)
scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
for epoch in range(1, 4):
    losses = train(model, device, train_loader, optimizer, epoch)
    accuracy = test(model, device, test_loader, verbose=False)
    scheduler.step()
    print(f"epoch {epoch}: next lr {scheduler.get_last_lr()[0]:.4f}, batches {len(losses)}")

print("last epoch's training loss below 0.8:", np.mean(losses) < 0.8)
print("test accuracy above 75%:", accuracy > 0.75)
assert np.mean(losses) < 0.8 and accuracy > 0.75, (np.mean(losses), accuracy)
torch.save(model.state_dict(), "mnist_cnn.pt")
