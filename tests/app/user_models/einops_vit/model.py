"""A small vision transformer written with einops: Rearrange patches, rearrange heads, reduce pooling."""

import torch
from einops import rearrange, reduce, repeat
from einops.layers.torch import Rearrange
from torch import einsum, nn


class Attention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=8):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.scale = dim_head**-0.5
        self.norm = nn.LayerNorm(dim)
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.to_out = nn.Linear(inner, dim)

    def forward(self, x):
        x = self.norm(x)
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        dots = einsum("b h i d, b h j d -> b h i j", q, k) * self.scale
        out = einsum("b h i j, b h j d -> b h i d", dots.softmax(dim=-1), v)
        return self.to_out(rearrange(out, "b h n d -> b n (h d)"))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.net = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x):
        return self.net(x)


class ViT(nn.Module):
    def __init__(self, image_size=8, patch_size=4, channels=3, num_classes=4, dim=16, depth=2, heads=2,
                 mlp_dim=32, pool="mean"):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        patch_dim = channels * patch_size * patch_size
        self.pool = pool
        self.to_patch_embedding = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch_size, p2=patch_size),
            nn.LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            nn.LayerNorm(dim),
        )
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.layers = nn.ModuleList(
            nn.ModuleList([Attention(dim, heads=heads, dim_head=dim // heads), FeedForward(dim, mlp_dim)])
            for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.mlp_head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.to_patch_embedding(img)  # (b, n, dim)
        cls_tokens = repeat(self.cls_token, "1 1 d -> b 1 d", b=x.shape[0])
        x = torch.cat((cls_tokens, x), dim=1) + self.pos_embedding
        for attn, ff in self.layers:
            x = x + attn(x)
            x = x + ff(x)
        x = self.norm(x)
        pooled = reduce(x, "b n d -> b d", "mean") if self.pool == "mean" else x[:, 0]
        return self.mlp_head(pooled)
