"""Autograd ops (``ArrayFunction`` subclasses on raw arrays), one file per family."""
