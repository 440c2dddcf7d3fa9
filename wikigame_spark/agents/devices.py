"""The device a Spark task's model runs on: the GPU Spark assigned the task, else the CPU.

On a cluster with GPU executors (``spark.executor.resource.gpu.amount``,
``spark.task.resource.gpu.amount``; docs/cluster.md) Spark gives each task the addresses of its
GPUs, and the task's model runs on the first of them. Without an assignment (local mode, CPU
clusters) it runs on the CPU, as does a task whose GPU torch cannot see, or whose Python has no torch.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger(__name__)

CPU = "cpu"
CPU_BATCH = 64
# Sentences per batch on a GPU: per GiB of its memory, within bounds (a MiniLM batch of 1,000
# texts of 256 tokens takes well under a GiB of activations).
GPU_BATCH_PER_GIB = 32
GPU_BATCH_RANGE = (64, 1024)


@dataclass(frozen=True)
class Device:
    """Where a task's model runs (``torch``), the GPUs Spark assigned the task, and the batch."""

    torch: str
    gpus: tuple[str, ...]
    batch_size: int

    def describe(self) -> str:
        assigned = f"GPU {', '.join(self.gpus)} assigned by Spark" if self.gpus else "no GPU assigned by Spark"
        return f"{self.torch} ({assigned}), batches of {self.batch_size}"


def assigned_gpus() -> tuple[str, ...]:
    """The GPU addresses Spark assigned the running task; none outside a task."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    gpu = ctx.resources().get("gpu") if ctx is not None else None
    return tuple(gpu.addresses) if gpu is not None else ()


def choose(gpus: tuple[str, ...]) -> Device:
    """The first assigned GPU when torch sees CUDA, with a batch from its memory; else the CPU."""
    if not gpus:
        return Device(CPU, gpus, CPU_BATCH)
    try:
        import torch
    except ImportError:  # a lean environment (make pack's default): no torch, so no GPU
        log.warning("GPU %s assigned by Spark, but this Python has no torch: the model runs on the CPU", gpus[0])
        return Device(CPU, gpus, CPU_BATCH)
    if not torch.cuda.is_available():
        log.warning("GPU %s assigned by Spark, but torch finds no CUDA device: the model runs on the CPU", gpus[0])
        return Device(CPU, gpus, CPU_BATCH)
    name = f"cuda:{gpus[0]}"
    gib = torch.cuda.get_device_properties(int(gpus[0])).total_memory / (1 << 30)
    low, high = GPU_BATCH_RANGE
    return Device(name, gpus, int(min(max(GPU_BATCH_PER_GIB * gib, low), high)))


def task_device() -> Device:
    """The device for the running Spark task (the CPU on the driver)."""
    return choose(assigned_gpus())
