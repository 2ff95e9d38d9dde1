"""Helpers behind ``mininn.utils.data``, at torch's paths (``torch.utils.data._utils.collate``)."""

from mininn.utils.data._utils import collate, worker

__all__ = ["collate", "worker"]
