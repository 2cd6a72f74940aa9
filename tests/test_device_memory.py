"""skillax.device_memory.peak_memory_metrics: the allocator's peak and limit in GiB over the
process's devices (hand-computed), and {} on a CPU, whose devices report no statistics."""
import pytest

from skillax.device_memory import peak_memory_metrics


class _Dev:
    def __init__(self, stats):
        self._stats = stats

    def memory_stats(self):
        return self._stats


def test_peak_and_limit_are_the_largest_in_gib():
    devs = [_Dev({"peak_bytes_in_use": 3 * 2 ** 30, "bytes_limit": 40 * 2 ** 30}),
            _Dev({"peak_bytes_in_use": 5 * 2 ** 29, "bytes_limit": 42 * 2 ** 30})]   # 2.5 GiB
    assert peak_memory_metrics(devs) == {"memory/peak_gb": 3.0, "memory/limit_gb": 42.0}
    assert peak_memory_metrics([_Dev({"peak_bytes_in_use": 2 ** 29})]) == {"memory/peak_gb": 0.5}


def test_devices_without_statistics_give_nothing():
    import jax

    assert peak_memory_metrics([_Dev(None), _Dev({})]) == {}
    if jax.default_backend() == "cpu":
        assert peak_memory_metrics() == {}
    else:                                                   # pragma: no cover - accelerator runs
        assert peak_memory_metrics()["memory/peak_gb"] > 0


def test_a_mixed_list_reads_the_devices_that_report():
    m = peak_memory_metrics([_Dev(None), _Dev({"peak_bytes_in_use": 2 ** 31})])
    assert m == pytest.approx({"memory/peak_gb": 2.0})
