"""A small MLServer custom runtime: the zoo's ``mlp`` forward pass in NumPy, for the serving benchmark.

``benchmarks/serve_load.py`` serves the same weights through mininn-serve and
through Seldon's MLServer with this runtime, so the two servers do the same
arithmetic (``x @ W.T + b`` and ReLU per layer, float32, the same BLAS) and the
comparison measures the servers. It runs only inside MLServer's own virtual
environment (``benchmarks/mlserver_runtime/.venv``, made by the benchmark's
``--setup-mlserver`` step), never in the project's.

``model-settings.json``::

    {"name": "mlp", "implementation": "runtime.NumpyMLP",
     "parameters": {"uri": "./weights.npz"}}

The ``.npz`` holds the state dict of :class:`models.mlp.MLP`: ``0.weight``,
``0.bias``, ``3.weight``, ... (a Linear every third module).
"""

from __future__ import annotations

import numpy as np
from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse
from mlserver.utils import get_model_uri


class NumpyMLP(MLModel):
    """``Linear -> ReLU`` per hidden layer, then ``Linear``, on float32 NumPy arrays."""

    async def load(self) -> bool:
        uri = await get_model_uri(self.settings)
        with np.load(uri, allow_pickle=False) as archive:
            indices = sorted({int(key.split(".")[0]) for key in archive.files})
            self._layers = [
                (archive[f"{i}.weight"].astype(np.float32), archive[f"{i}.bias"].astype(np.float32))
                for i in indices
            ]
        self.ready = True
        return self.ready

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        x = NumpyCodec.decode_input(payload.inputs[0]).astype(np.float32, copy=False)
        for position, (weight, bias) in enumerate(self._layers):
            x = x @ weight.T + bias
            if position < len(self._layers) - 1:
                np.maximum(x, 0, out=x)
        return InferenceResponse(
            model_name=self.name,
            model_version=self.version,
            outputs=[NumpyCodec.encode_output(name="output", payload=x)],
        )
