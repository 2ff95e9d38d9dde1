"""Autograd ops (``Function`` subclasses on raw arrays), one file per family."""
