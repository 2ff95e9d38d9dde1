"""``torch.utils.model_zoo``: ``load_url`` is ``mininn.hub.load_state_dict_from_url`` (local cache only)."""

from mininn.hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
