"""The tests reach the package as ``mininn.distributions`` (``lib.distributions`` for either library).
``import mininn`` alone does not import it (``import torch`` does); served model code gets it through
the torch alias, which imports it on first use."""

import mininn.distributions  # noqa: F401
