"""The Open Inference Protocol (KServe V2) on the wire, with Triton's extensions.

Request parsing (JSON and binary tensors), response encoding, datatypes and
body compression; nothing here knows about models beyond their tensor specs.
"""

from app.v2.compression import choose_encoding, compress, decompress
from app.v2.datatypes import DATATYPES, numpy_dtype, triton_type, v2_datatype
from app.v2.request import InferenceRequest, RequestedOutput, TensorSpecLike, parse_inference_request
from app.v2.response import EncodedResponse, encode_inference_response

__all__ = [
    "DATATYPES",
    "EncodedResponse",
    "InferenceRequest",
    "RequestedOutput",
    "TensorSpecLike",
    "choose_encoding",
    "compress",
    "decompress",
    "encode_inference_response",
    "numpy_dtype",
    "parse_inference_request",
    "triton_type",
    "v2_datatype",
]
