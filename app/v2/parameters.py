"""The request-level ``parameters`` of an inference request: those the server reads, and the rest refused.

A parameter the server does not understand is refused (400) rather than
silently ignored, so a client never believes it was honoured. Accepted:

- read by the server: ``timeout`` (microseconds), ``binary_data_output``, and the
  endpoint's own (``/infer``: ``capture``, ``capture_mode``, ``interventions``;
  ``/activations``: its capture fields);
- accepted and ignored, because stock clients send them routinely and ignoring
  them changes no answer: ``priority`` (tritonclient; one queue here, first come
  first served), ``content_type`` and ``headers`` (MLServer's and KServe's codecs
  tag a request with the codec that made it);
- ``sequence_id``, ``sequence_start``, ``sequence_end`` only with their "no
  sequence" values (``0``, ``""``, ``false``): no model here is stateful, so a
  real sequence is refused with "sequence batching is not supported".
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from app.errors import BadRequestError

__all__ = ["IGNORED_PARAMETERS", "SEQUENCE_PARAMETERS", "SERVER_PARAMETERS", "check_request_parameters"]

SERVER_PARAMETERS = ("binary_data_output", "timeout")
"""Request parameters every inference endpoint reads."""
IGNORED_PARAMETERS = ("content_type", "headers", "priority")
"""Request parameters stock clients send that change nothing here."""
SEQUENCE_PARAMETERS = ("sequence_id", "sequence_start", "sequence_end")
"""Triton's sequence batching (stateful models), which this server does not do."""


def check_request_parameters(parameters: Mapping[str, Any], *, model: str, accepts: Collection[str]) -> None:
    """Refuse the request parameters the server would not honour.

    Args:
        parameters: the request's ``parameters``.
        model: the model's name, for messages.
        accepts: the parameters the endpoint reads besides :data:`SERVER_PARAMETERS`.

    Raises:
        BadRequestError: a sequence, or a parameter nobody here reads (named, with the accepted ones).
    """
    sequence = [key for key in SEQUENCE_PARAMETERS if parameters.get(key) not in (None, 0, "", False)]
    if sequence:
        raise BadRequestError(
            f"sequence batching is not supported: model '{model}' is not stateful, so parameter "
            f"{_listed(sequence)} cannot be honoured; send each request on its own without "
            "sequence_id, sequence_start and sequence_end"
        )
    known = {*SERVER_PARAMETERS, *IGNORED_PARAMETERS, *SEQUENCE_PARAMETERS, *accepts}
    unknown = sorted(key for key in parameters if key not in known)
    if unknown:
        raise BadRequestError(
            f"unknown request parameter {_listed(unknown)} for model '{model}'; this endpoint accepts "
            f"{_listed(sorted(known - set(SEQUENCE_PARAMETERS)))}"
        )


def _listed(names: Collection[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)
