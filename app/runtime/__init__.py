"""Serving models: the model manager and its versions, the runners and batch queues, statistics, metrics.

:mod:`app.runtime.dataplane` is the one entry point the transports call.
"""
