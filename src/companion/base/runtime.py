"""Where and how big: the device every computation uses, and the run-size switch.

One switch picks the size of every experiment in the book:

``ci``
    minutes on two CPU cores; what the book executes by default without a GPU.
``gpu``
    a single Colab-class GPU, tens of minutes per chapter.
``paper``
    the sizes the paper reports (hours to days on one GPU).

Set it with the environment variable ``COMPANION_RUN_SIZE`` (or pass ``size=`` to the
functions that take it).  Without it the default is ``gpu`` when CUDA is available and
``ci`` otherwise.
"""

from __future__ import annotations

import os

import torch

RUN_SIZES = ("ci", "gpu", "paper")
ENV_VAR = "COMPANION_RUN_SIZE"

__all__ = ["RUN_SIZES", "ENV_VAR", "GPU_SIZE_MEMORY_GIB", "run_size", "default_device", "describe_device",
           "describe_machine", "pick_run_size", "runtime_run_size"]


def default_device() -> torch.device:
    """``cuda`` when a GPU is visible, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def describe_device(device: torch.device | str | None = None) -> str:
    """Human-readable name of the device, e.g. ``'cpu (2 threads)'`` or the GPU's name."""
    device = torch.device(device) if device is not None else default_device()
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"cpu ({torch.get_num_threads()} threads)"


#: CPU features that change how reduced-precision (bf16, fp16) arithmetic is done on the CPU,
#: and so a CPU run's numbers
BF16_FEATURES = ("avx512_bf16", "amx_bf16", "avx512_fp16")


def describe_machine(device: torch.device | str | None = None, cpuinfo: str | None = None) -> dict:
    """The machine a run's steps are made on: the device's name, the CPU model and its bf16
    features (from ``/proc/cpuinfo`` where there is one).  Two CPU machines running the
    same code from the same checkpoint can differ in the last bits of every bf16 step, so a
    run records this for each sitting."""
    import platform

    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
                cpuinfo = fh.read()
        except OSError:
            cpuinfo = ""
    model, flags = None, set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model is None:
            model = value.strip()
        elif key.strip() == "flags" and not flags:
            flags = set(value.split())
    return {"device": describe_device(device), "cpu_model": model or platform.processor() or platform.machine(),
            "cpu_bf16_features": [f for f in BF16_FEATURES if f in flags]}


def run_size(size: str | None = None) -> str:
    """Resolve the run size: explicit argument, then ``$COMPANION_RUN_SIZE``, then default."""
    chosen = size if size is not None else os.environ.get(ENV_VAR)
    if chosen is None or (isinstance(chosen, str) and not chosen.strip()):   # blank is unset, as pick_run_size reads it
        return "gpu" if torch.cuda.is_available() else "ci"
    if not isinstance(chosen, str):
        raise ValueError(f"run size {chosen!r} is not a name; give one of {RUN_SIZES} as text.")
    chosen = chosen.strip().lower()
    if chosen not in RUN_SIZES:
        raise ValueError(
            f"unknown run size {chosen!r} (from {'argument' if size else ENV_VAR}); "
            f"choose one of {RUN_SIZES}."
        )
    return chosen


# --------------------------------------------------------------------------- which size fits
GPU_SIZE_MEMORY_GIB = 14.0
"""Device memory the ``gpu`` size is sized for: a T4-class card (15 GB, of which PyTorch
reports about 14.7 GiB).  A card that reports less gets the ``ci`` size."""


def pick_run_size(requested: str | None, *, cuda_available: bool, torch_cuda: str | None,
                  gpu_present: bool, memory_gib: float | None) -> tuple[str, str]:
    """The run size a runtime can meet, and one line saying why when it is not ``gpu``.

    ``requested``: the reader's ``COMPANION_RUN_SIZE`` (``None``: choose).  The other
    arguments are the runtime's facts: ``torch.cuda.is_available()``, ``torch.version.cuda``
    (``None`` for a CPU build), whether an NVIDIA device is visible (``/dev/nvidia0``), and the
    first device's memory in GiB (``None``: unknown).  A size the reader chose is kept, with
    a warning when the runtime cannot meet it; otherwise the largest size that fits is
    chosen: ``gpu`` on a usable GPU with at least :data:`GPU_SIZE_MEMORY_GIB`, else ``ci``.
    Returns ``(size, note)``; ``note`` is empty when nothing needs saying.
    """
    chosen = None
    if requested is not None and requested.strip():
        chosen = requested.strip().lower()
        if chosen not in RUN_SIZES:
            raise ValueError(f"unknown run size {requested!r} in {ENV_VAR}; set it to one of "
                             f"{', '.join(RUN_SIZES)} (or leave it unset to choose by the GPU).")
    problem = ""
    if not cuda_available:
        if gpu_present and torch_cuda is None:
            problem = ("this PyTorch is a CPU build but the runtime has an NVIDIA GPU: install "
                       "the CUDA build that matches the driver (on Colab: Runtime > Disconnect "
                       "and delete runtime, which restores Colab's own PyTorch)")
        elif gpu_present:
            problem = (f"PyTorch (built for CUDA {torch_cuda}) cannot use this GPU, most likely "
                       "because the driver is older than that CUDA: install a PyTorch built for "
                       "the driver's CUDA (nvidia-smi names it), or use Colab's own PyTorch")
        else:
            problem = ("no GPU in this runtime (Colab: Runtime > Change runtime type > GPU, "
                       "then run this cell again)")
    elif memory_gib is not None and memory_gib < GPU_SIZE_MEMORY_GIB:
        problem = (f"the GPU has {memory_gib:.1f} GiB of memory, less than the "
                   f"{GPU_SIZE_MEMORY_GIB:g} GiB the gpu size is sized for")
    if chosen is not None:
        if problem and chosen != "ci":
            return chosen, f"NOTE: run size {chosen!r} kept as you chose it, but {problem}."
        return chosen, ""
    if problem:
        return "ci", f"NOTE: {problem}; the chapter runs at the small 'ci' size."
    return "gpu", ""


def runtime_run_size(requested: str | None = None) -> tuple[str, str]:
    """:func:`pick_run_size` with this runtime's facts (``requested`` defaults to
    ``$COMPANION_RUN_SIZE``)."""
    if requested is None:
        requested = os.environ.get(ENV_VAR)
    available = torch.cuda.is_available()
    memory = None
    if available:
        try:
            memory = torch.cuda.get_device_properties(0).total_memory / 2**30
        except (RuntimeError, AssertionError, AttributeError):
            memory = None
    present = os.path.exists("/dev/nvidia0") or os.path.exists("/proc/driver/nvidia/version")
    return pick_run_size(requested, cuda_available=available, torch_cuda=torch.version.cuda,
                         gpu_present=present, memory_gib=memory)
