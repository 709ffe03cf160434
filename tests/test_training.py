"""End to end: a small MLP learns the two-spirals task with autograd and SGD (no linear model can)."""
import numpy as np

import tinynorm
import tinynorm.nn.functional as F
from tinynorm import nn
from tinynorm.data import make_spirals, minibatches
from tinynorm.optim import SGD


def accuracy(model, X, y):
    with tinynorm.no_grad():
        return float((model(tinynorm.tensor(X)).argmax(1).numpy() == y).mean())


def test_mlp_learns_two_spirals_with_sgd():
    tinynorm.manual_seed(0)
    X, y = make_spirals(n_per_class=200, noise=0.05, seed=0)
    model = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
    optimizer = SGD(model.parameters(), lr=0.1, momentum=0.9)
    before = accuracy(model, X, y)
    losses = []
    shuffle_rng = np.random.default_rng(0)
    for epoch in range(150):
        for xb, yb in minibatches(X, y, batch_size=32, rng=shuffle_rng):
            loss = F.cross_entropy(model(tinynorm.tensor(xb)), tinynorm.tensor(yb))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    assert before < 0.7  # the task is not solved by chance
    assert np.mean(losses[-20:]) < 0.1 * np.mean(losses[:20])
    assert accuracy(model, X, y) >= 0.95
    X_new, y_new = make_spirals(n_per_class=200, noise=0.05, seed=1)  # fresh points from the same spirals
    assert accuracy(model, X_new, y_new) >= 0.9
