"""Probabilistic model heads written the way torch users write them (a VAE, a mixture density
network, a Beta/Gamma/Dirichlet policy and a full-covariance Gaussian head); used by
test_model_code.py with real torch and with mininn through load_code."""

import torch
import torch.distributions as D
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Independent, Normal, kl_divergence
from torch.distributions.multivariate_normal import MultivariateNormal


class VAE(nn.Module):
    def __init__(self, d=6, z=3):
        super().__init__()
        self.enc = nn.Linear(d, 2 * z)
        self.dec = nn.Linear(z, d)

    def forward(self, x, eps):
        mu, log_sigma = self.enc(x).chunk(2, dim=-1)
        q = Independent(Normal(mu, log_sigma.exp()), 1)
        prior = Independent(Normal(torch.zeros_like(mu), torch.ones_like(mu)), 1)
        z = q.mean + q.stddev * eps
        recon = D.Bernoulli(logits=self.dec(z))
        return recon.log_prob(x.round().clamp(0, 1)).sum(-1) - kl_divergence(q, prior)


class MDN(nn.Module):
    def __init__(self, d=6, k=4):
        super().__init__()
        self.pi, self.mu, self.sigma = nn.Linear(d, k), nn.Linear(d, k), nn.Linear(d, k)

    def forward(self, x, y):
        mix = D.MixtureSameFamily(D.Categorical(logits=self.pi(x)),
                                  D.Normal(self.mu(x), F.softplus(self.sigma(x)) + 1e-3))
        return -mix.log_prob(y), mix.mean, mix.variance


class Policy(nn.Module):
    def __init__(self, d=6):
        super().__init__()
        self.body = nn.Linear(d, 7)

    def forward(self, x, action, rate_value, weights):
        h = F.softplus(self.body(x)) + 0.1
        beta = D.Beta(h[:, 0], h[:, 1])
        gamma = D.Gamma(h[:, 2], h[:, 3])
        dirichlet = D.Dirichlet(h[:, 4:])
        return (beta.log_prob(action) + gamma.log_prob(rate_value) + dirichlet.log_prob(weights),
                beta.entropy() + gamma.entropy() + dirichlet.entropy(),
                D.kl_divergence(beta, D.Beta(torch.ones_like(h[:, 0]), torch.ones_like(h[:, 0]))))


class GaussianHead(nn.Module):
    def __init__(self, d=6, n=3):
        super().__init__()
        self.n = n
        self.loc = nn.Linear(d, n)
        self.tril = nn.Linear(d, n * n)

    def forward(self, x, y):
        raw = self.tril(x).view(-1, self.n, self.n)
        scale_tril = torch.tril(raw, -1) + torch.diag_embed(raw.diagonal(dim1=-2, dim2=-1).exp())
        dist = MultivariateNormal(self.loc(x), scale_tril=scale_tril)
        return dist.log_prob(y), dist.entropy(), dist.covariance_matrix
