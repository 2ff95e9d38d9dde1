"""torchvision.datasets on mininn."""

__all__: list[str] = []
