"""The CIFAR-10 tutorial's network and loops on synthetic 3x32x32 images (ten classes told apart by their
colours): MaxPool2d, torch.flatten(x, 1), CrossEntropyLoss, SGD with momentum, torch.max(outputs, 1),
per-class accuracy, and saving and loading the trained network."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

classes = ('plane', 'car', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse', 'ship', 'truck')

rng = np.random.default_rng(21)
colours = rng.uniform(-1, 1, (10, 3)).astype(np.float32)


def make_images(n):
    labels = np.arange(n) % 10
    images = colours[labels][:, :, None, None] + 0.5 * rng.standard_normal((n, 3, 32, 32)).astype(np.float32)
    return torch.from_numpy(images.astype(np.float32)), torch.from_numpy(labels)


batch_size = 4
trainset = TensorDataset(*make_images(80))
trainloader = DataLoader(trainset, batch_size=batch_size, shuffle=False)
testset = TensorDataset(*make_images(40))
testloader = DataLoader(testset, batch_size=batch_size, shuffle=False)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)  # one row of features per image
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


net = Net()
with torch.no_grad():
    for param in net.parameters():
        bound = 1 / np.sqrt(param[0].numel()) if param.dim() > 1 else 0.05
        param.copy_(torch.from_numpy(rng.uniform(-bound, bound, param.shape).astype(np.float32)))

criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

for epoch in range(3):  # three passes over the training images

    running_loss = 0.0
    for i, data in enumerate(trainloader, 0):
        # each batch arrives as [images, labels]
        inputs, labels = data

        # gradients accumulate: clear the previous batch's
        optimizer.zero_grad()

        # predict, measure the loss, differentiate, update
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        # report the mean loss now and then
        running_loss += loss.item()
        if i % 5 == 4:  # after every fifth batch
            print(f'[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 5:.3f}')
            running_loss = 0.0

print('Finished Training')

PATH = './cifar_net.pth'
torch.save(net.state_dict(), PATH)

dataiter = iter(testloader)
images, labels = next(dataiter)
print('GroundTruth: ', ' '.join(f'{classes[labels[j]]:5s}' for j in range(4)))

net = Net()
net.load_state_dict(torch.load(PATH, weights_only=True))
outputs = net(images)
_, predicted = torch.max(outputs, 1)
print('Predicted: ', ' '.join(f'{classes[predicted[j]]:5s}' for j in range(4)))

correct = 0
total = 0
# evaluation records no graph
with torch.no_grad():
    for data in testloader:
        images, labels = data
        # scores for the ten classes
        outputs = net(images)
        # the best-scoring class is the prediction
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()

print(f'Accuracy of the network on the {total} test images: {100 * correct // total} %')

# per-class tallies
correct_pred = {classname: 0 for classname in classes}
total_pred = {classname: 0 for classname in classes}

# evaluation again
with torch.no_grad():
    for data in testloader:
        images, labels = data
        outputs = net(images)
        _, predictions = torch.max(outputs, 1)
        # count hits per true class
        for label, prediction in zip(labels, predictions):
            if label == prediction:
                correct_pred[classes[label]] += 1
            total_pred[classes[label]] += 1


# accuracy class by class
for classname, correct_count in correct_pred.items():
    accuracy = 100 * float(correct_count) / total_pred[classname]
    print(f'Accuracy for class: {classname:5s} is {accuracy:.1f} %')
assert correct / total > 0.3  # well above chance (10 %)
