"""gpu_chariot on CUDA (marked `gpu`: skipped where there is none). The lead runs
these on the GPU machine through scripts/gpu/python-gpu.sh."""
import os

import numpy as np
import pytest

import gpu_chariot as gc

pytestmark = pytest.mark.gpu

HERE = os.path.dirname(os.path.abspath(__file__))
SHIFT = open(os.path.join(HERE, "..", "..", "chariot-studies", "kernels", "shift.cu")).read()

TWICE = r'''extern "C" __global__ void twice(float* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }'''


def shift_ref(x, iters):
    x = x.astype(np.uint32).copy()
    for k in range(iters):
        x = ((x << np.uint32(1)) ^ (x >> np.uint32(3)) ^ np.uint32(k)).astype(np.uint32)
    return x


def test_pipeline_on_cuda():
    s = gc.Scheduler(backend="cuda")
    assert s.backend == "cuda"
    host = s.alloc_host(4096, "float32")
    assert host.pinned
    np.asarray(host)[:] = np.arange(4096, dtype=np.float32)
    d = s.alloc(1024, "float32")
    k = s.register_kernel(gc.Kernel("twice", TWICE, ["float*", "unsigned"]))
    for i in range(4):
        r = slice(i * 1024, (i + 1) * 1024)
        s.task(i, 1024).download(d, 0, host, r).launch(k, 4, 256, [d, 1024]).readback(host, r, d).submit()
    report = s.synchronize()
    assert report.backend == "cuda" and report.tasks == 4
    np.testing.assert_array_equal(np.asarray(host), 2 * np.arange(4096, dtype=np.float32))
    s.shutdown()


def test_shift_loop_element_by_element():
    s = gc.Scheduler(backend="cuda")
    n, chunks, iters = 1 << 16, 12, 50
    inp, out = s.alloc_host(n * chunks, "uint32"), s.alloc_host(n * chunks, "uint32")
    rng = np.random.default_rng(2013)
    np.asarray(inp)[:] = rng.integers(0, 2**32, n * chunks, dtype=np.uint32)
    np.asarray(out)[:] = 0xDEADBEEF
    d_in, d_out = s.alloc(n, "uint32"), s.alloc(n, "uint32")
    k = s.register_kernel(gc.Kernel("shift", SHIFT, ["unsigned*", "const unsigned*", "unsigned", "unsigned"]))
    for c in range(chunks):
        r = (c * n, (c + 1) * n)
        s.task(c, n).download(d_in, 0, inp, r).launch(k, n // 256, 256, [d_out, d_in, n, iters]).readback(out, r, d_out).submit()
    s.synchronize()
    np.testing.assert_array_equal(np.asarray(out), shift_ref(np.asarray(inp), iters))
    s.shutdown()


def test_kernel_that_does_not_compile_raises_nvrtc_log():
    s = gc.Scheduler(backend="cuda")
    with pytest.raises(gc.ChariotError, match="undefined_name"):
        s.register_kernel(gc.Kernel("twice", TWICE.replace("2.0f", "undefined_name"), ["float*", "unsigned"]))
    s.shutdown()


def test_callback_exception_on_cuda_names_the_task():
    s = gc.Scheduler(backend="cuda")
    host = s.alloc_host(256, "float32")
    d = s.alloc(256, "float32")

    def boom(view, info):
        raise ZeroDivisionError("no")

    s.task(1).download(d, 0, host).readback(host, None, d).callback_reading(host, None, boom).submit()
    # Task 2 reads the host bytes task 1 writes: it runs after task 1, and not at all
    # once task 1 failed.
    s.task(2).download(d, 0, host).submit()
    with pytest.raises(gc.TasksFailed, match=r"task #1.*ZeroDivisionError: no") as e:
        s.synchronize()
    failures = {f["task"]: f["message"] for f in e.value.failures}
    assert sorted(failures) == [1, 2]
    assert "not run" in failures[2] and "task #1" in failures[2], failures[2]
    s.shutdown()


def test_cupy_arrays_in_and_out_without_host_copies():
    cp = pytest.importorskip("cupy")
    s = gc.Scheduler(backend="cuda")
    n = 1 << 20
    theirs = cp.arange(n, dtype=cp.float32)          # CuPy's array, made on the GPU
    back = cp.zeros(n, dtype=cp.float32)             # where chariot's result goes
    cp.cuda.Device().synchronize()
    r = s.alloc_resident(n, "float32")
    k = s.register_kernel(gc.Kernel("twice", TWICE, ["float*", "unsigned"]))
    seen = {}

    def take_in(call):                                # CuPy -> chariot, device to device
        with cp.cuda.ExternalStream(call.stream):
            mine = cp.asarray(call.arrays[0])
            seen["zero_copy"] = mine.data.ptr == call.arrays[0].__cuda_array_interface__["data"][0]
            mine[:] = theirs

    def give_back(call):                              # chariot -> CuPy, device to device
        with cp.cuda.ExternalStream(call.stream):
            back[:] = cp.asarray(call.arrays[0])

    s.task(1).gpu_callback(take_in, [r.writes()]).submit()
    s.task(2).launch(k, n // 256, 256, [r, n]).submit()
    s.task(3).gpu_callback(give_back, [r.reads()]).submit()
    s.synchronize()
    cp.cuda.Device().synchronize()
    assert seen["zero_copy"]
    assert bool((back == 2 * theirs).all())
    s.shutdown()


def test_cupy_on_a_tasks_device_buffer():
    cp = pytest.importorskip("cupy")
    s = gc.Scheduler(backend="cuda")
    n = 1024  # 1023 ** 3 fits an int32
    host = s.alloc_host(n, "int32")
    np.asarray(host)[:] = np.arange(n)
    d = s.alloc(n, "int32")

    def cube(call):
        assert call.__cuda_stream__() == (0, call.stream) and call.stream
        with cp.cuda.ExternalStream(call.stream):
            a = cp.asarray(call.arrays[0])
            a **= 3

    s.task(1).download(d, 0, host).gpu_callback(cube, [d]).readback(host, None, d).submit()
    s.synchronize()
    np.testing.assert_array_equal(np.asarray(host), np.arange(n) ** 3)
    s.shutdown()


def test_torch_tensor_in_and_out():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    s = gc.Scheduler(backend="cuda")
    n = 1 << 16
    theirs = torch.arange(n, dtype=torch.float32, device="cuda")
    back = torch.zeros(n, dtype=torch.float32, device="cuda")
    torch.cuda.synchronize()
    r = s.alloc_resident(n, "float32")

    def through(call):
        stream = torch.cuda.ExternalStream(call.stream)
        with torch.cuda.stream(stream):
            mine = torch.as_tensor(call.arrays[0], device="cuda")
            mine.copy_(theirs * 3)
            back.copy_(mine)

    s.task(1).gpu_callback(through, [r.writes()]).submit()
    s.synchronize()
    torch.cuda.synchronize()
    assert torch.equal(back, theirs * 3)
    s.shutdown()


def test_cupy_and_torch_arrays_as_launch_arguments():
    # Another library's arrays passed to a launch as they are: no copy, the task on
    # their GPU, each element checked; a strided view is refused.
    cp = pytest.importorskip("cupy")
    s = gc.Scheduler(backend="cuda")
    n = 1 << 20
    x = cp.arange(n, dtype=cp.float32)
    cp.cuda.Device().synchronize()
    k = s.register_kernel(gc.Kernel("twice", TWICE, ["float*", "unsigned"]))
    host = s.alloc_host(n, "float32")
    d = s.alloc(n, "float32")
    # Task 1 doubles CuPy's array in place; task 2, after it, doubles it again.
    s.task(1).launch(k, n // 256, 256, [x, n]).submit()
    s.task(2).after(1).launch(k, n // 256, 256, [x, n]).submit()
    report = s.synchronize()
    assert report.tasks == 2
    cp.cuda.Device().synchronize()
    assert bool((x == 4 * cp.arange(n, dtype=cp.float32)).all())
    with pytest.raises(TypeError, match="not contiguous"):
        s.task(3).launch(k, 1, 256, [x[::2], 256])
    with pytest.raises(TypeError, match="holds float64"):
        s.task(3).launch(k, 1, 256, [cp.zeros(256, cp.float64), 256])
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        t = torch.ones(n, dtype=torch.float32, device="cuda")
        torch.cuda.synchronize()
        np.asarray(host)[:] = 1.0
        s.task(4).launch(k, n // 256, 256, [t, n]).submit()
        # chariot's own buffers beside it in the same batch.
        s.task(5).download(d, 0, host).launch(k, n // 256, 256, [d, n]).readback(host, None, d).submit()
        s.synchronize()
        np.testing.assert_array_equal(np.asarray(host), np.full(n, 2.0, np.float32))
        torch.cuda.synchronize()
        assert torch.equal(t, torch.full((n,), 2.0, device="cuda"))
    s.shutdown()
