"""The Open Inference Protocol over gRPC (``inference.GRPCInferenceService``), beside HTTP.

- ``inference.proto``: the service and messages, written for this server with the
  protocol's package, service, message and field names and numbers (the wire
  contract of ``tritonclient.grpc`` and KServe's ``InferenceGRPCClient``).
- ``inference_pb2.py``, ``inference_pb2_grpc.py``: generated from it and committed;
  ``python -m app.grpc.generate`` regenerates them (:mod:`app.grpc.generate` has
  the exact ``grpc_tools.protoc`` command).
- :mod:`app.grpc.codec`: ``ModelInfer`` messages to and from the V2 request and response.
- :mod:`app.grpc.raw_request`: the direct decode of a plain raw-contents ``ModelInfer``.
- :mod:`app.grpc.servicer`: the service, a thin adapter over the data plane.
- :mod:`app.grpc.server`: the gRPC server the app's lifespan starts.
"""

from app.grpc.server import GrpcPortError, GrpcServer, grpc_address
from app.grpc.servicer import GRPC_STATUS, InferenceServicer

__all__ = ["GRPC_STATUS", "GrpcPortError", "GrpcServer", "InferenceServicer", "grpc_address"]
