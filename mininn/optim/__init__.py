"""Optimizers with torch's names, update rules and state-dict format."""

from mininn.optim import lr_scheduler
from mininn.optim.adam import Adam, AdamW
from mininn.optim.optimizer import Optimizer
from mininn.optim.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]
