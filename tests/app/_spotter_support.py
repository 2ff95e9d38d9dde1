"""A 1-D keyword spotter written for torch: its input's time axis has any length, but at least 2.

``F.max_pool1d(x, 2)`` on a length of 1 fails with torch's ``max_pool1d() Invalid computed
output size: 0``, so a warm-up at the default length of 1 fails, and one at a length the model
accepts (``model_warmup`` in ``model.json``) serves.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

SPOTTER_CODE = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class KeywordSpotter(nn.Module):
    def __init__(self, n_mfcc=40, n_classes=4):
        super().__init__()
        self.conv = nn.Conv1d(n_mfcc, 8, 3, padding=1)
        self.fc = nn.Linear(8, n_classes)

    def forward(self, mfcc):
        x = F.max_pool1d(F.relu(self.conv(mfcc)), 2)  # (B, 8, T // 2)
        return self.fc(x.mean(-1))
'''
FIXED_LENGTH = {
    "module": "spotter.py:KeywordSpotter",
    "inputs": [{"name": "mfcc", "datatype": "FP32", "shape": [-1, 40, 16]}],
}
ANY_LENGTH = {
    "module": "spotter.py:KeywordSpotter",
    "inputs": [{"name": "mfcc", "datatype": "FP32", "shape": [-1, 40, -1]}],
}


def spotter_weights(seed: int = 0) -> dict[str, np.ndarray]:
    """A state dict for ``KeywordSpotter()`` drawn from ``seed``."""
    rng = np.random.default_rng(seed)
    shapes = {"conv.weight": (8, 40, 3), "conv.bias": (8,), "fc.weight": (4, 8), "fc.bias": (4,)}
    return {key: (0.1 * rng.standard_normal(shape)).astype(np.float32) for key, shape in shapes.items()}


def write_spotter(root: Path, name: str, spec: dict[str, Any], versions: int = 1) -> Path:
    """``<root>/<name>/`` with ``spotter.py``, ``model.json`` = ``spec`` and ``versions`` versions."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "spotter.py").write_text(SPOTTER_CODE)
    (folder / "model.json").write_text(json.dumps(spec))
    for version in range(1, versions + 1):
        (folder / str(version)).mkdir()
        save_file(spotter_weights(version), str(folder / str(version) / "weights.safetensors"))
    return folder
