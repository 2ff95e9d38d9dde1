"""A closed-loop gRPC load generator in processes of its own, pinned away from the server's cores.

Python's gRPC client costs about 170 us of CPU a call (``serve_load.grpc_closed_loop``): in the
benchmark's own interpreter, beside the servers, it would compete with them for a core and for
the interpreter. Here each client is a thread with a channel of its own (its own HTTP/2
connection) in one of a few ``spawn``-ed worker processes, which run on the client's cores
(``os.sched_setaffinity``). Every client sends the same pre-serialized ``ModelInferRequest``
through a generic ``unary_unary`` call (bytes in, bytes out: nothing is encoded or decoded per
call) as soon as its previous call returns.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np

__all__ = ["GRPC_INFER", "GrpcLoad", "GrpcResult"]

GRPC_INFER = "/inference.GRPCInferenceService/ModelInfer"
_OPTIONS = [("grpc.use_local_subchannel_pool", 1), ("grpc.max_receive_message_length", -1)]


@dataclass(frozen=True)
class GrpcResult:
    """One closed-loop run: answered calls, their rate and latency, and the failed ones by code."""

    requests: int
    seconds: float
    requests_per_s: float
    p50_ms: float
    p99_ms: float
    failures: dict[str, int]
    late: int = 0  # calls sent in the window that finished after it (not counted above)
    slowest_ms: float = 0.0  # of every call sent in the window, the late ones too

    @property
    def errors(self) -> int:
        """Calls that ended with a status other than OK."""
        return sum(self.failures.values())


def _pin(cpus: list[int] | None) -> None:
    if cpus:
        os.sched_setaffinity(0, set(cpus))


def _ready() -> int:
    import grpc  # noqa: F401  (the first import costs most of a process's start)

    time.sleep(0.2)  # long enough that every process of the pool takes one
    return os.getpid()


def _clients(target: str, body: bytes, clients: int, begin: float,
             end: float) -> tuple[list[float], Counter, list[float]]:
    """Run ``clients`` threads until wall-clock time ``end``: the latencies (seconds) of the calls
    sent from ``begin`` that finished by ``end``, the failed ones' status names, and the latencies
    of the calls sent in the window that finished after it."""
    import grpc

    latencies: list[float] = []
    failures: Counter = Counter()
    late: list[float] = []
    lock = threading.Lock()

    def one_client() -> None:
        mine: list[float] = []
        failed: Counter = Counter()
        overdue: list[float] = []
        with grpc.insecure_channel(target, options=_OPTIONS) as channel:
            call = channel.unary_unary(GRPC_INFER)
            while (sent := time.time()) < end:
                try:
                    call(body, timeout=120)
                    ok = True
                except grpc.RpcError as exc:
                    ok, code = False, exc.code().name
                done = time.time()
                if begin <= sent and done > end:
                    overdue.append(done - sent)
                elif begin <= sent:
                    if ok:
                        mine.append(done - sent)
                    else:
                        failed[code] += 1
        with lock:
            latencies.extend(mine)
            failures.update(failed)
            late.extend(overdue)

    threads = [threading.Thread(target=one_client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, failures, late


class GrpcLoad:
    """A pool of up to ``processes`` client processes on ``cpus``, kept for every run of a benchmark.

    Use as a context manager; :meth:`run` drives one target.
    """

    def __init__(self, processes: int, cpus: Iterable[int] | None = None) -> None:
        self.processes = processes
        cpu_list = sorted(cpus) if cpus is not None else None
        self._pool = ProcessPoolExecutor(processes, multiprocessing.get_context("spawn"),
                                         initializer=_pin, initargs=(cpu_list,))
        for future in [self._pool.submit(_ready) for _ in range(processes)]:
            future.result(timeout=120)

    def __enter__(self) -> GrpcLoad:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(cancel_futures=True)

    def run(self, target: str, body: bytes, clients: int, warmup: float, seconds: float) -> GrpcResult:
        """``clients`` closed-loop clients on ``target`` (``host:port``), spread over the processes;
        calls finished in the ``seconds`` after ``warmup`` are counted."""
        start = time.time() + 1.0  # the processes start together (and may still be importing grpc)
        begin, end = start + warmup, start + warmup + seconds
        shares = [clients // self.processes + (i < clients % self.processes) for i in range(self.processes)]
        futures = [self._pool.submit(_clients, target, body, n, begin, end) for n in shares if n]
        latencies: list[float] = []
        failures: Counter = Counter()
        late: list[float] = []
        for future in futures:
            mine, failed, overdue = future.result(timeout=warmup + seconds + 180)
            latencies += mine
            failures.update(failed)
            late += overdue
        if not latencies:
            failures["NO_CALL_ANSWERED_IN_THE_WINDOW"] += 1  # a stalled server is not a slow one
        p50, p99 = (float(np.percentile(latencies, q) * 1e3) if latencies else float("nan") for q in (50, 99))
        slowest = max(latencies + late, default=float("nan")) * 1e3
        return GrpcResult(len(latencies), seconds, len(latencies) / seconds, p50, p99, dict(failures),
                          len(late), slowest)
