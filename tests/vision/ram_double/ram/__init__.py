"""Test double of the optional ``recognize-anything`` package (``import ram``), which cannot be
installed or given a checkpoint on these machines.

It has the attributes ``forge.vision.tagger.RamTagger`` uses of the real RAM model (label
embeddings through ``wordvec_proj``, image tokens from ``visual_encoder`` + ``image_proj``, a
``tagging_head`` that attends label queries over image tokens, ``fc`` to one logit per tag,
``class_threshold`` and ``delete_tag_index``), with a tiny network whose weights are drawn from a
fixed seed: the same in every process, so rows from Ray replicas can be compared with the
in-process ones. It proves the plumbing (loading per replica, thresholds, deleted tags, rows),
not RAM's accuracy.
"""

from __future__ import annotations

import numpy as np
import torch


def get_transform(image_size: int = 384):
    """PIL image -> normalised CHW float tensor of ``image_size`` x ``image_size``."""

    def transform(img):
        arr = np.asarray(img.convert("RGB").resize((image_size, image_size)), dtype=np.float32) / 255.0
        return torch.from_numpy((arr - 0.5) / 0.25).permute(2, 0, 1).contiguous()

    return transform
