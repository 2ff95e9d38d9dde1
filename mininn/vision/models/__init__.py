"""torchvision.models on mininn."""

__all__: list[str] = []
