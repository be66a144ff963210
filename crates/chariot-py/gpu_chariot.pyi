"""chariot for Python: out-of-order software pipelines over GPUs x CUDA streams.

Build a Scheduler, allocate buffers, register kernels, then submit tasks (download,
launch, readback, callbacks) and synchronize.
"""

from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

__version__: str

DTypeLike = Union[str, type, np.dtype]
Region = Union[None, slice, range, Tuple[int, int]]
Dims = Union[int, Tuple[int], Tuple[int, int], Tuple[int, int, int]]
DeviceSide = Union["DeviceBuffer", "ResidentBuffer"]
LaunchArg = Union["DeviceBuffer", "ResidentBuffer", "ResidentRange", Any, int, float]
"""A launch argument: chariot's buffers, a CuPy array or PyTorch tensor on one of the
scheduler's GPUs (contiguous, the parameter's dtype; the task runs on its GPU), or a number."""

class ChariotError(Exception):
    """An error of the chariot runtime; its message is the runtime's."""

class TasksFailed(ChariotError):
    """Some tasks of the batch failed; the others completed."""

    failures: List[Dict[str, Any]]
    """Each failed task: its id (`task`), command, stage, GPU, stream and message."""
    report: "Report"
    """The batch's report."""

class Scheduler:
    """The runtime: D GPUs with S stream slots each, dispatching tasks out of order.

    Every argument left out takes the runtime's default, from the hardware where it
    depends on it. `backend`: "auto" (CUDA where a driver and GPU are, else the
    simulator), "cuda" or "sim". `order`: "fcfs", "lf" or "sf". `execution`: "auto",
    "host", "replay" or "device". A context manager: leaving it shuts the scheduler down.
    """

    def __init__(
        self,
        *,
        backend: str = "auto",
        gpus: Optional[int] = None,
        gpu_list: Optional[Sequence[int]] = None,
        streams: Optional[int] = None,
        order: Optional[str] = None,
        execution: Optional[str] = None,
        adapt: Optional[bool] = None,
        kernel_concurrency: Optional[int] = None,
        cpu_cores: Optional[int] = None,
        buses: Optional[int] = None,
        stage_depth: Optional[int] = None,
        pin_dispatchers: Optional[bool] = None,
    ) -> None: ...
    @property
    def backend(self) -> str:
        """ "cuda" or "sim"."""
    @property
    def gpu_count(self) -> int: ...
    @property
    def streams(self) -> int: ...
    @property
    def execution(self) -> str: ...
    @property
    def gpu_info(self) -> List[Dict[str, Any]]:
        """Each GPU: name, ordinal, arch, memory_bytes, copy_engines, sm_count."""
    def alloc_host(self, len: int, dtype: Optional[DTypeLike] = None) -> "HostBuffer":
        """A pinned host buffer of `len` elements of `dtype` (float32 by default)."""
    def alloc(self, len: int, dtype: Optional[DTypeLike] = None) -> "DeviceBuffer":
        """A virtual device buffer (one copy per GPU and stream slot)."""
    def alloc_resident(
        self, len: int, dtype: Optional[DTypeLike] = None, piece_len: Optional[int] = None
    ) -> "ResidentBuffer":
        """Device data kept on the GPUs between tasks, in pieces of `piece_len` elements."""
    def register_kernel(self, kernel: "Kernel") -> "KernelHandle":
        """Compiles (NVRTC) and loads `kernel` on every GPU; raises ChariotError with NVRTC's log."""
    def task(self, id: int, granularity: int = 1) -> "Task":
        """Starts building task `id`; `granularity` is its chunk's size (for the LF and SF orders)."""
    def record(self, body: Callable[["Scheduler"], Any]) -> "RecordedGraph":
        """Records the tasks `body(scheduler)` submits, running none, as a RecordedGraph.

        The batch must be closed (`synchronize` first). A task with a callback, resident
        data or a GPU preference raises ChariotError; an exception from `body` propagates.
        """
    def synchronize(self) -> "Report":
        """Waits for every submitted task and returns the batch's report.

        Raises TasksFailed when tasks failed. Ctrl-C: Python callbacks and twins not yet
        begun fail at once, the batch drains, KeyboardInterrupt is raised.
        """
    def shutdown(self) -> "Report":
        """Waits for all work, stops the runtime's threads, returns the last report."""
    def __enter__(self) -> "Scheduler": ...
    def __exit__(self, *exc: Any) -> bool: ...

class HostBuffer:
    """Pinned host memory; `numpy.asarray(buf)` is a view of it (no copy), made once no
    in-flight task writes it."""

    @property
    def dtype(self) -> np.dtype: ...
    @property
    def pinned(self) -> bool: ...
    @property
    def id(self) -> int: ...
    def numpy(self) -> npt.NDArray[Any]:
        """A NumPy view of the whole buffer."""
    def __array__(self, dtype: Optional[DTypeLike] = None, copy: Optional[bool] = None) -> npt.NDArray[Any]: ...
    def __len__(self) -> int: ...

class DeviceBuffer:
    """A virtual device buffer: one physical copy per GPU and stream slot."""

    @property
    def dtype(self) -> np.dtype: ...
    @property
    def id(self) -> int: ...
    def __len__(self) -> int: ...

class ResidentBuffer:
    """Device data shared by tasks and kept on the GPUs; a launch orders tasks by the
    ranges they read and write."""

    @property
    def dtype(self) -> np.dtype: ...
    @property
    def id(self) -> int: ...
    @property
    def pieces(self) -> int: ...
    def reads(self, start: int = 0, stop: Optional[int] = None) -> "ResidentRange": ...
    def writes(self, start: int = 0, stop: Optional[int] = None) -> "ResidentRange": ...
    def reads_writes(self, start: int = 0, stop: Optional[int] = None) -> "ResidentRange": ...
    def __len__(self) -> int: ...

class ResidentRange:
    """A range of a resident buffer and how a kernel or GPU callback uses it."""

class Kernel:
    """A kernel of CUDA C source (what CuPy's RawKernel takes).

    `params`: each parameter as C spells it ("float*", "const float*", "unsigned",
    "int", "double") or as NumPy does ("float32*", "uint32"). `twin`: what the
    simulated backend runs instead, called with the launch's arguments (each buffer a
    NumPy view of the task's copy, each scalar a number).
    """

    def __init__(
        self,
        name: str,
        source: str,
        params: Sequence[str],
        twin: Optional[Callable[..., None]] = None,
        sim_sm_share: Optional[float] = None,
    ) -> None: ...
    @property
    def name(self) -> str: ...

class KernelHandle:
    """A kernel registered on every GPU of a scheduler."""

    @property
    def name(self) -> str: ...
    @property
    def params(self) -> List[str]: ...

class CallInfo:
    """Where a callback runs."""

    task: int
    gpu: int
    stream: int

class GpuCall:
    """What a GPU callback gets (valid only while it runs)."""

    info: CallInfo
    stream: Optional[int]
    """The task's CUstream as an int (None on the sim)."""
    arrays: List[Any]
    """The buffers named: `__cuda_array_interface__` objects on CUDA, NumPy views on the sim."""
    def __cuda_stream__(self) -> Tuple[int, int]:
        """The CUDA stream protocol: (0, the task's stream); AttributeError on the sim."""

class Task:
    """A task being built; every method returns the task, so calls chain."""

    @property
    def id(self) -> int: ...
    def download(self, dst: DeviceSide, dst_offset: int, src: HostBuffer, region: Region = None) -> "Task": ...
    def readback(self, dst: HostBuffer, region: Region, src: DeviceSide, src_offset: int = 0) -> "Task": ...
    def launch(
        self, kernel: KernelHandle, grid: Dims, block: Dims, args: Iterable[LaunchArg], shared_bytes: int = 0
    ) -> "Task": ...
    def callback(self, f: Callable[[CallInfo], Any]) -> "Task": ...
    def callback_reading(
        self, host: HostBuffer, region: Region, f: Callable[[npt.NDArray[Any], CallInfo], Any]
    ) -> "Task": ...
    def callback_writing(
        self, host: HostBuffer, region: Region, f: Callable[[npt.NDArray[Any], CallInfo], Any]
    ) -> "Task": ...
    def gpu_callback(
        self,
        f: Callable[[GpuCall], Any],
        buffers: Optional[Iterable[Union[DeviceBuffer, ResidentBuffer, ResidentRange]]] = None,
    ) -> "Task": ...
    def after(self, *ids: int) -> "Task": ...
    def after_all(self, ids: Iterable[int]) -> "Task": ...
    def refuse_conflicts(self) -> "Task": ...
    def prefer_gpu(self, gpu: int) -> "Task":
        """Places the task on GPU `gpu` (0 .. gpu_count); ChariotError at submit if there is none."""
    def submit(self) -> int:
        """Hands the task to the runtime; returns its id."""

class RecordedGraph:
    """A graph recorded once with Scheduler.record and run many times."""

    def run(self) -> None:
        """Queues one run of the whole graph; the next `synchronize` waits for it."""
    def set_arg(self, task: int, command: int, arg: int, value: Union["DeviceBuffer", int, float]) -> None:
        """Sets a launch's argument in place (the kernel's declared kind); waits for the runs."""
    def set_copy(self, task: int, command: int, host: "HostBuffer", offset: int) -> None:
        """Moves a copy's host side to `host` from element `offset` (same shape, same dtype)."""
    @property
    def tasks(self) -> int: ...
    @property
    def gpus(self) -> List[int]: ...

class Report:
    """What a batch produced: str() is the Rust report's text."""

    @property
    def tasks(self) -> int: ...
    @property
    def makespan_ms(self) -> float: ...
    @property
    def backend(self) -> str: ...
    @property
    def gpus(self) -> List[str]: ...
    @property
    def dependencies(self) -> List[Tuple[int, int]]: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def chrome_trace(self) -> str: ...
    def keys(self) -> Any: ...
    def __getitem__(self, key: str) -> Any: ...
