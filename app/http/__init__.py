"""HTTP plumbing shared by every route: the uvicorn protocol, middleware, limits, keys, bodies.

Nothing here knows about models; :mod:`app.routes` adapts HTTP requests to
:mod:`app.runtime.dataplane` with these pieces.
"""
