"""Fields a generation request may carry beyond sampling, in every protocol.

:class:`GenerationExtensions` holds them once: the OpenAI request bodies
inherit it (the fields travel as extra body fields, ``extra_body`` in the
``openai`` client), and Triton's generate routes and ``ModelStreamInfer``
validate their leftover ``parameters`` against it. A field added here (with what it adds to the
:class:`~app.runtime.generation.GenerationRequest` in
:meth:`GenerationExtensions.generation_fields`) is accepted by every
generation protocol at once, and anything else is refused by name.

The fields are per-token edits and captures (:mod:`app.v2.generation_fields` reads them):
``interventions``, ``steering`` and ``capture``, each as JSON gives it or as a string holding
that JSON (V2 and gRPC parameters hold scalars). They travel to the request as they came
(``token_fields``); :meth:`DataPlane.generate <app.runtime.dataplane.DataPlane.generate>`
resolves them against the model (module names, stored steering vectors).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GenerationExtensions"]


class GenerationExtensions(BaseModel):
    """Fields beyond sampling that a generation request may carry.

    Unknown fields and values of the wrong JSON type are refused.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    interventions: list[Any] | str | None = Field(
        None, description="Edits of module outputs per token: module, op, value, index, steps, positions."
    )
    steering: list[Any] | str | None = Field(
        None, description="Stored steering vectors to add: [{name, scale, modules, steps, positions}]."
    )
    capture: dict[str, Any] | str | None = Field(
        None, description="Module outputs recorded at every step: {modules, positions, reduce, bins}."
    )

    def generation_fields(self) -> dict[str, Any]:
        """Keyword arguments these fields add to the :class:`~app.runtime.generation.GenerationRequest`."""
        given = {key: getattr(self, key) for key in ("interventions", "steering", "capture")}
        given = {key: value for key, value in given.items() if value is not None}
        return {"token_fields": given} if given else {}
