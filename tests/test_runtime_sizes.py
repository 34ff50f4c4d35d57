"""Which run size a runtime can meet (the Colab set-up cell's choice), and what it says."""

import pytest

from companion.base.runtime import GPU_SIZE_MEMORY_GIB, pick_run_size

T4 = dict(cuda_available=True, torch_cuda="12.4", gpu_present=True, memory_gib=14.7)


def test_a_t4_class_gpu_gets_the_gpu_size_silently():
    assert pick_run_size(None, **T4) == ("gpu", "")
    assert GPU_SIZE_MEMORY_GIB <= 14.7  # a T4 reports about 14.7 GiB


def test_no_gpu_gets_the_ci_size_and_says_how_to_get_one():
    size, note = pick_run_size(None, cuda_available=False, torch_cuda=None, gpu_present=False,
                               memory_gib=None)
    assert size == "ci"
    assert note.startswith("NOTE: no GPU") and "Change runtime type > GPU" in note


def test_a_cpu_torch_on_a_gpu_runtime_is_named():
    size, note = pick_run_size(None, cuda_available=False, torch_cuda=None, gpu_present=True,
                               memory_gib=None)
    assert size == "ci" and "CPU build" in note and "'ci' size" in note


def test_a_cuda_torch_the_driver_cannot_run_is_named():
    size, note = pick_run_size(None, cuda_available=False, torch_cuda="12.8", gpu_present=True,
                               memory_gib=None)
    assert size == "ci" and "CUDA 12.8" in note and "driver" in note


def test_too_little_device_memory_falls_back_to_the_ci_size():
    size, note = pick_run_size(None, **{**T4, "memory_gib": 7.6})
    assert size == "ci" and "7.6 GiB" in note and f"{GPU_SIZE_MEMORY_GIB:g} GiB" in note


def test_a_size_the_reader_chose_is_kept_with_a_warning():
    assert pick_run_size("ci", **T4) == ("ci", "")
    size, note = pick_run_size(" GPU ", cuda_available=False, torch_cuda=None,
                               gpu_present=False, memory_gib=None)
    assert size == "gpu" and "kept as you chose it" in note and "no GPU" in note


def test_an_unknown_size_is_one_line_naming_the_variable():
    with pytest.raises(ValueError, match=r"unknown run size 'huge' in COMPANION_RUN_SIZE; set it "
                                         r"to one of ci, gpu, paper"):
        pick_run_size("huge", **T4)
