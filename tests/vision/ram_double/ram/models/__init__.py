"""``ram.models.ram`` / ``ram_plus`` of the test double (see ``ram/__init__.py``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

TAGS = ["person", "car", "bus", "tree", "sky", "cup", "coffee", "road", "building", "dog", "cat", "sign"]
DIM = 16


class _Patches(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, DIM, kernel_size=8, stride=8)

    def forward(self, x):
        return self.conv(x).flatten(2).transpose(1, 2)  # B x tokens x DIM


class _TaggingHead(nn.Module):
    """Label queries attend over image tokens (what RAM's BERT tagging head does, in one layer)."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(DIM, DIM), nn.Linear(DIM, DIM), nn.Linear(DIM, DIM)

    def forward(self, encoder_embeds, encoder_hidden_states, encoder_attention_mask, return_dict, mode):
        assert mode == "tagging" and return_dict is False
        att = self.q(encoder_embeds) @ self.k(encoder_hidden_states).transpose(1, 2) / DIM**0.5
        att = att.masked_fill(encoder_attention_mask[:, None, :] == 0, float("-inf")).softmax(-1)
        return (encoder_embeds + att @ self.v(encoder_hidden_states),)


class DoubleRAM(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        self.tag_list = np.asarray(TAGS)
        self.label_embed = nn.Parameter(torch.zeros(len(TAGS), 24))
        self.wordvec_proj = nn.Linear(24, DIM)
        self.visual_encoder = _Patches()
        self.image_proj = nn.Linear(DIM, DIM)
        self.tagging_head = _TaggingHead()
        self.fc = nn.Linear(DIM, 1)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g) * 0.3)
        self.class_threshold = 0.2 + 0.6 * torch.rand(len(TAGS), generator=g)  # per class, as RAM's
        self.delete_tag_index = [TAGS.index("sign")]


def _build(pretrained: str, image_size: int = 384, vit: str = "swin_l", seed: int = 0) -> DoubleRAM:
    if not Path(pretrained).is_file():
        raise FileNotFoundError(pretrained)
    return DoubleRAM(seed)


def ram(pretrained: str = "", image_size: int = 384, vit: str = "swin_l") -> DoubleRAM:
    return _build(pretrained, image_size, vit, seed=0)


def ram_plus(pretrained: str = "", image_size: int = 384, vit: str = "swin_l") -> DoubleRAM:
    return _build(pretrained, image_size, vit, seed=1)
