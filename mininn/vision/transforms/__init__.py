"""torchvision.transforms on mininn."""

__all__: list[str] = []
