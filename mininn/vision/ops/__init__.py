"""torchvision.ops on mininn."""

__all__: list[str] = []
