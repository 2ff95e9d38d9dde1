"""Fields a generation request may carry beyond sampling, in every protocol.

:class:`GenerationExtensions` holds them once: the OpenAI request bodies
inherit it (the fields travel as extra body fields, ``extra_body`` in the
``openai`` client), and Triton's generate routes and ``ModelStreamInfer``
validate their leftover ``parameters`` against it. It has no fields yet; a
field added here (with what it adds to the
:class:`~app.runtime.generation.GenerationRequest` in
:meth:`GenerationExtensions.generation_fields`) is accepted by every
generation protocol at once, and anything else is refused by name.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["GenerationExtensions"]


class GenerationExtensions(BaseModel):
    """Fields beyond sampling that a generation request may carry (none yet).

    Unknown fields and values of the wrong JSON type are refused.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    def generation_fields(self) -> dict[str, Any]:
        """Keyword arguments these fields add to the :class:`~app.runtime.generation.GenerationRequest`."""
        return {}
