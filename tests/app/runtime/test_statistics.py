from __future__ import annotations

from app.runtime.statistics import InferenceStatistics


def test_new_statistics_are_zero_in_tritons_shape() -> None:
    stats = InferenceStatistics("m", 3).as_dict()
    assert stats["name"] == "m" and stats["version"] == "3"
    assert (stats["inference_count"], stats["execution_count"], stats["last_inference"]) == (0, 0, 0)
    assert set(stats["inference_stats"]) == {
        "success",
        "fail",
        "queue",
        "compute_input",
        "compute_infer",
        "compute_output",
        "cache_hit",
        "cache_miss",
    }
    assert all(v == {"count": 0, "ns": 0} for v in stats["inference_stats"].values())
    assert stats["batch_stats"] == [] and stats["memory_usage"] == []


def test_executions_and_requests_accumulate() -> None:
    stats = InferenceStatistics("m", 1)
    stats.record_execution(4, queue_ns=10, infer_ns=100)
    stats.record_execution(1, queue_ns=5, infer_ns=50)
    stats.record_request(ok=True, total_ns=300, batch_size=4, input_ns=20, output_ns=30)
    stats.record_request(ok=False, total_ns=7)
    out = stats.as_dict()
    assert (out["inference_count"], out["execution_count"]) == (5, 2)
    assert out["last_inference"] > 0
    inference = out["inference_stats"]
    assert inference["queue"] == {"count": 2, "ns": 15}
    assert inference["compute_infer"] == {"count": 2, "ns": 150}
    assert inference["success"] == {"count": 1, "ns": 300}
    assert inference["fail"] == {"count": 1, "ns": 7}
    assert inference["compute_input"] == {"count": 1, "ns": 20}
    assert [b["batch_size"] for b in out["batch_stats"]] == [1, 4]
    assert out["batch_stats"][1]["compute_output"] == {"count": 1, "ns": 30}
