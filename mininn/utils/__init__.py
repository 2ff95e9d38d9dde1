"""Utilities: ``hooks`` (shared inside mininn), and torch's ``utils`` modules that model files import:
``data`` (datasets, samplers, ``DataLoader``), ``checkpoint`` and ``model_zoo``."""
