"""OpenAI's API on the wire, for text-generation models: request bodies, responses, errors.

- :mod:`app.openai.schemas`: the request bodies as typed models, with OpenAI's defaults and vLLM's extras.
- :mod:`app.openai.completions`: a request to the engine's generations, their tokens to a body or chunks.
- :mod:`app.openai.responses`: bodies, chunks, usage and log-probabilities in OpenAI's shapes.
- :mod:`app.openai.streams`: starting, merging and closing one request's generations.
- :mod:`app.openai.errors`: OpenAI's error body, ``{"error": {"message", "type", "param", "code"}}``.

The routes are :mod:`app.routes.openai`.
"""

from app.openai.errors import openai_error_response
from app.openai.schemas import ChatCompletionRequest, CompletionRequest

__all__ = ["ChatCompletionRequest", "CompletionRequest", "openai_error_response"]
