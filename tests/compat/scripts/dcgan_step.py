"""The DCGAN tutorial's training step, scaled down to 16x16 images: a generator of ConvTranspose2d,
BatchNorm2d and ReLU ending in Tanh, a discriminator of Conv2d and LeakyReLU(0.2, inplace=True) ending in
Sigmoid, the tutorial's weights_init through model.apply, BCELoss with real and fake labels,
Adam(betas=(0.5, 0.999)), fake.detach() for the discriminator's step, and the tutorial's printed D(x),
D(G(z)) numbers."""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nz, ngf, ndf, nc = 8, 8, 8, 3
rng = np.random.default_rng(13)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


def deterministic(m):
    """Replace the random initialisation by a seeded one, so that both libraries start equal."""
    classname = m.__class__.__name__
    with torch.no_grad():
        if classname.find('Conv') != -1:
            m.weight.copy_(torch.from_numpy(rng.normal(0.0, 0.2, m.weight.shape).astype(np.float32)))
        elif classname.find('BatchNorm') != -1:
            m.weight.copy_(torch.from_numpy(rng.normal(1.0, 0.02, m.weight.shape).astype(np.float32)))


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input)


netG, netD = Generator(), Discriminator()
netG.apply(weights_init)
netD.apply(weights_init)
conv_weights = [m.weight for m in netD.modules() if isinstance(m, nn.Conv2d)]
assert all(abs(w.std().item() - 0.02) < 0.01 for w in conv_weights)
netG.apply(deterministic)
netD.apply(deterministic)
print(netG)

criterion = nn.BCELoss()
real_label, fake_label = 1., 0.
optimizerD = optim.Adam(netD.parameters(), lr=0.0002, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=0.0002, betas=(0.5, 0.999))

batch = 6
for i in range(3):
    real = torch.from_numpy(rng.uniform(-1, 1, (batch, nc, 16, 16)).astype(np.float32))
    noise = torch.from_numpy(rng.normal(size=(batch, nz, 1, 1)).astype(np.float32))
    # the discriminator learns to call real images real and generated ones fake
    netD.zero_grad()
    label = torch.full((batch,), real_label, dtype=torch.float)
    output = netD(real).view(-1)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach()).view(-1)
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()
    # the generator learns to have its images called real
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake).view(-1)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    print('[%d/3]\tLoss_D: %.4f\tLoss_G: %.4f\tD(x): %.4f\tD(G(z)): %.4f / %.4f'
          % (i, errD.item(), errG.item(), D_x, D_G_z1, D_G_z2))

print(fake.shape, netD.main[3].running_mean[:4])
