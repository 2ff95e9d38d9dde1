from __future__ import annotations

import app
import app.errors
import app.v2


def test_the_package_exports() -> None:
    assert app.__all__ == ["Settings", "SettingsError", "create_app", "load_settings"]
    for name in app.__all__:
        assert hasattr(app, name)


def test_the_protocol_exports() -> None:
    assert sorted(app.v2.__all__) == [
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


def test_every_service_error_carries_its_status() -> None:
    statuses = {
        name: getattr(app.errors, name).status_code for name in app.errors.__all__ if name.endswith("Error")
    }
    assert statuses == {
        "BadRequestError": 400,
        "ClientDisconnectedError": 499,
        "ConflictError": 409,
        "ForbiddenError": 403,
        "GatewayTimeoutError": 504,
        "NotFoundError": 404,
        "PayloadTooLargeError": 413,
        "RequestTimeoutError": 408,
        "ServiceError": 500,
        "ServiceUnavailableError": 503,
        "TooManyRequestsError": 429,
        "UnauthorizedError": 401,
        "UnprocessableError": 422,
        "UnsupportedMediaTypeError": 415,
    }
