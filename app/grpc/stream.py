"""``ModelStreamInfer``: a text model's tokens over gRPC, as Triton's decoupled models stream them.

A stream carries any number of ``ModelInferRequest`` messages; each is
answered on its own, concurrently, so one stream can hold several
generations at once (their responses carry the request's ``id``):

- a text-generation model: the request is Triton's generate request as gRPC
  inputs (``text_input`` BYTES ``[1]``, or ``input_ids`` INT32/INT64; optional
  ``max_tokens``, ``temperature``, ``stop``, ``exclude_input_in_output``,
  ``sampling_parameters``, ... as inputs of one element, or as request
  parameters; :mod:`app.v2.generate` has every name). It gets one response
  per generated token, with output ``text_output`` BYTES ``[1]`` (the text the
  token releases; ``output_ids`` INT64 ``[1]`` too for ``input_ids`` requests);
  the last response has the parameter ``triton_final_response: true`` and the
  vLLM backend's ``finish_reason``, ``num_input_tokens`` and ``num_output_tokens``.
  With ``triton_enable_empty_final_response`` (``tritonclient``'s
  ``enable_empty_final_response=True``) the tokens come unflagged and an empty
  response carries the flag.
- any other model: one response, as ``ModelInfer`` answers, flagged final.

An error answers that request with ``error_message`` (``tritonclient`` hands it
to the callback as an ``InferenceServerException``); the stream and its other
requests go on. The bearer key is checked once, when the stream opens;
closing the stream (or cancelling the call) cancels its generations.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.errors import ServiceError, loggable
from app.grpc import inference_pb2 as pb
from app.grpc.codec import parameters_from_proto, request_document
from app.log import request_id_var
from app.runtime.dataplane import DataPlane
from app.runtime.generation import GenerationRequest, GenerationResult, TokenEvent
from app.runtime.manager import ModelVersion
from app.v2.generate import GenerateRequest, final_fields, parse_generate
from app.v2.request import decode_inference_document
from app.v2.tensors import encode_binary

__all__ = ["EMPTY_FINAL", "FINAL", "StreamAnswers", "generation_responses"]

logger = logging.getLogger("app.errors")

FINAL = "triton_final_response"
"""The parameter that marks the last response of a request."""

EMPTY_FINAL = "triton_enable_empty_final_response"
"""The request parameter asking for the flag on an empty response of its own."""

Send = Callable[[pb.ModelStreamInferResponse], None]


@dataclass(frozen=True)
class _Spec:
    """An input as the request declares it (the checks take its own datatype and shape)."""

    name: str
    datatype: str
    shape: tuple[int, ...]


def generate_inputs(message: pb.ModelInferRequest, model: str) -> dict[str, np.ndarray]:
    """The request's inputs as arrays, by name (framing checked as for ``ModelInfer``).

    Raises:
        BadRequestError: raw contents that do not match the inputs.
        UnprocessableError: an input whose contents do not fit its datatype and shape.
    """
    document, tail = request_document(message)
    specs = [_Spec(t.name, t.datatype, tuple(t.shape)) for t in message.inputs]
    document.pop("outputs", None)  # the outputs are text_output (and output_ids), whatever is asked
    parsed = decode_inference_document(document, tail, model=model, inputs=specs, outputs=[])
    return parsed.inputs


def _text_tensor(response: pb.ModelInferResponse, name: str, values: list[Any], datatype: str) -> None:
    array = np.empty(len(values), dtype=object) if datatype == "BYTES" else np.asarray(values, np.int64)
    if datatype == "BYTES":
        array[:] = [v.encode("utf-8") for v in values]
    response.outputs.add(name=name, datatype=datatype, shape=[len(values)])
    response.raw_output_contents.append(encode_binary(array))


@dataclass
class _Responder:
    """Builds one request's responses."""

    model: ModelVersion
    request_id: str
    with_ids: bool

    def token(
        self, text: str, token_ids: list[int], *, final: bool, captures: Any = None
    ) -> pb.ModelInferResponse:
        response = pb.ModelInferResponse(
            model_name=self.model.name, model_version=str(self.model.version), id=self.request_id
        )
        _text_tensor(response, "text_output", [text], "BYTES")
        if self.with_ids:
            _text_tensor(response, "output_ids", token_ids, "INT64")
        _capture_outputs(response, captures)
        response.parameters[FINAL].bool_param = final
        return response

    def held(self, prefix: str, event: TokenEvent, *, final: bool) -> pb.ModelInferResponse:
        """The response of token ``event`` (its text after ``prefix``, its captures)."""
        return self.token(prefix + event.text, [event.token_id], final=final, captures=event.captures)

    def empty_final(self) -> pb.ModelInferResponse:
        response = pb.ModelInferResponse(
            model_name=self.model.name, model_version=str(self.model.version), id=self.request_id
        )
        response.parameters[FINAL].bool_param = True
        return response


def _capture_outputs(response: pb.ModelInferResponse, captures: Any) -> None:
    """A token's captures as extra outputs ``<module>:output`` (FP32, ``[positions, ...]``), or, for
    ``reduce: "stats"``, a JSON string parameter ``<module>:stats``; the step and positions go in
    the parameter ``<module>:positions`` (``"step:p0,p1"``)."""
    for name, record in (captures or {}).items():
        response.parameters[f"{name}:positions"].string_param = (
            f"{record.step}:{','.join(map(str, record.positions))}"
        )
        if record.values is None:
            response.parameters[f"{name}:stats"].string_param = json.dumps(record.stats.to_dict())
            continue
        values = np.ascontiguousarray(record.values, dtype=np.float32)
        response.outputs.add(name=f"{name}:output", datatype="FP32", shape=list(values.shape))
        response.raw_output_contents.append(values.tobytes())


def _finish(response: pb.ModelInferResponse, result: GenerationResult) -> pb.ModelInferResponse:
    for key, value in final_fields(result).items():
        if isinstance(value, str):
            response.parameters[key].string_param = value
        else:
            response.parameters[key].int64_param = value
    response.parameters[FINAL].bool_param = True
    return response


async def generation_responses(
    plane: DataPlane, model: ModelVersion, message: pb.ModelInferRequest, deadline_s: float | None
) -> AsyncIterator[pb.ModelInferResponse]:
    """The responses of one generate request on text model ``model``, a token at a time.

    Raises:
        ServiceError: a bad request, a refusal of the engine, or a failure while generating.
    """
    parameters = parameters_from_proto(message.parameters)
    empty_final = parameters.pop(EMPTY_FINAL, False) is True
    parsed = parse_generate(generate_inputs(message, model.name), parameters, model=model.name)
    request = _generation_request(plane, model, parsed, deadline_s)
    responder = _Responder(model, message.id, parsed.input_ids is not None)
    prefix = "" if parsed.exclude_input else parsed.text_input or ""
    held: TokenEvent | None = None
    stream = await plane.generate(model, request)
    try:
        async for item in stream:
            if isinstance(item, TokenEvent):
                if held is not None:
                    yield responder.held(prefix, held, final=False)
                    prefix = ""
                held = item
                continue
            if held is None or empty_final:
                if held is not None:
                    yield responder.held(prefix, held, final=False)
                yield _finish(responder.empty_final(), item)
            else:
                yield _finish(responder.held(prefix, held, final=True), item)
    except Exception:
        if held is not None:  # the tokens before a failure still come through, then its error
            yield responder.held(prefix, held, final=False)
        raise
    finally:
        await stream.aclose()


def _generation_request(
    plane: DataPlane, model: ModelVersion, parsed: GenerateRequest, deadline_s: float | None
) -> GenerationRequest:
    if parsed.input_ids is not None:
        prompt = parsed.input_ids
    else:
        assert parsed.text_input is not None
        prompt = plane.encode_prompt(model, parsed.text_input)
    timeout = parsed.timeout_s
    if deadline_s is not None:
        timeout = deadline_s if timeout is None else min(timeout, deadline_s)
    return GenerationRequest(
        prompt, parsed.sampling, request_id=request_id_var.get(), timeout_s=timeout, **parsed.extensions
    )


_READ_ALL = object()


def _error(request: pb.ModelInferRequest, message: str) -> pb.ModelStreamInferResponse:
    """The error of one request; its ``infer_response`` names the request (model, version, id)."""
    named = pb.ModelInferResponse(
        model_name=request.model_name, model_version=request.model_version, id=request.id
    )
    return pb.ModelStreamInferResponse(error_message=message, infer_response=named)


class StreamAnswers:
    """Answers the requests of one ``ModelStreamInfer`` call, each in a task of its own.

    Args:
        answer: answers one request, sending its responses (raises a ServiceError for its error).
    """

    def __init__(self, answer: Callable[[pb.ModelInferRequest, Send], Awaitable[None]]) -> None:
        self.answer = answer
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.tasks: set[asyncio.Task[None]] = set()

    async def run(
        self, requests: AsyncIterator[pb.ModelInferRequest]
    ) -> AsyncIterator[pb.ModelStreamInferResponse]:
        """The responses to ``requests`` as they come; ends once every request sent is answered."""
        reader = asyncio.create_task(self._read(requests), name="grpc-stream-reader")
        reading = True
        try:
            while reading or self.tasks:
                item = await self.queue.get()
                if item is _READ_ALL:
                    reading = False
                elif isinstance(item, asyncio.Task):
                    self.tasks.discard(item)
                else:
                    yield item
        finally:
            reader.cancel()
            for task in list(self.tasks):
                task.cancel()
            for task in [reader, *self.tasks]:
                try:
                    await task
                except BaseException:  # cancelled, or the client's stream broke: nothing to answer
                    pass

    async def _read(self, requests: AsyncIterator[pb.ModelInferRequest]) -> None:
        try:
            async for request in requests:
                task = asyncio.create_task(self._one(request))
                self.tasks.add(task)
        finally:
            self.queue.put_nowait(_READ_ALL)

    async def _one(self, request: pb.ModelInferRequest) -> None:
        try:
            await self.answer(request, lambda response: self.queue.put_nowait(response))
        except ServiceError as exc:
            logger.log(
                exc.log_level or logging.INFO,
                "request %s: gRPC stream model=%s -> %s",
                request_id_var.get(),
                loggable(request.model_name or "-"),
                loggable(exc.message),
            )
            self.queue.put_nowait(_error(request, exc.message))
        except Exception as exc:
            request_id = request_id_var.get()
            logger.error("request %s: gRPC stream request failed unexpectedly", request_id, exc_info=exc)
            message = f"internal server error (request id {request_id}); the server log has the details"
            self.queue.put_nowait(_error(request, message))
        finally:
            task = asyncio.current_task()
            if task is not None:
                self.queue.put_nowait(task)
