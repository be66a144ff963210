"""pytest set-up: the `gpu` marker, skipped where CUDA is not there."""
import pytest

import gpu_chariot as gc


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")


def _cuda_reason():
    try:
        s = gc.Scheduler(backend="cuda")
    except gc.ChariotError as e:
        return f"no CUDA here: {e}"
    s.shutdown()
    return None


def pytest_collection_modifyitems(config, items):
    if not any("gpu" in item.keywords for item in items):
        return
    reason = _cuda_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
