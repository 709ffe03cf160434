"""A WGAN-GP gradient penalty: torch.autograd.grad with create_graph=True on interpolated samples,
then backward through the gradient (a second-order derivative) into the critic's parameters."""
import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(13)
critic = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
with torch.no_grad():
    for param in critic.parameters():
        param.copy_(torch.from_numpy(rng.uniform(-0.6, 0.6, param.shape).astype(np.float32)))

real = torch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32))
fake = torch.from_numpy(rng.standard_normal((8, 4)).astype(np.float32) + 1.0)
alpha = torch.from_numpy(rng.uniform(0, 1, (8, 1)).astype(np.float32))


def gradient_penalty(critic, real, fake, alpha):
    interpolates = (alpha * real + ((1 - alpha) * fake)).requires_grad_(True)
    d_interpolates = critic(interpolates)
    gradients = torch.autograd.grad(
        outputs=d_interpolates,
        inputs=interpolates,
        grad_outputs=torch.ones_like(d_interpolates),
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    return ((gradients.norm(2, dim=1) - 1) ** 2).mean()


optimizer = torch.optim.Adam(critic.parameters(), lr=1e-2, betas=(0.5, 0.9))
for step in range(5):
    optimizer.zero_grad()
    wasserstein = critic(fake).mean() - critic(real).mean()
    penalty = gradient_penalty(critic, real, fake, alpha)
    loss = wasserstein + 10 * penalty
    loss.backward()
    grad_norm = torch.sqrt(sum((p.grad ** 2).sum() for p in critic.parameters()))
    print(f"step {step}: wasserstein {wasserstein.item():.6f} penalty {penalty.item():.6f} "
          f"grad norm {grad_norm.item():.6f}")
    optimizer.step()

# The first-order gradient of a scalar function and its own gradient, checked against the formulas.
x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
y = (x ** 3).sum()
(dy_dx,) = torch.autograd.grad(y, x, create_graph=True)
print("dy/dx = 3x^2:", dy_dx.tolist(), dy_dx.requires_grad)
(d2y_dx2,) = torch.autograd.grad(dy_dx.sum(), x)
print("d2y/dx2 = 6x:", d2y_dx2.tolist(), x.grad)
