"""torchrun / torch.distributed glue: which rank am I, which rows are mine.

Rows are dealt round-robin (global row ``i`` goes to rank ``i % world``) so that
every rank gets a similar mix of configs; rank 0 merges the shards in dataset
order after a barrier.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    initialized_here: bool = False

    def __post_init__(self) -> None:
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise ValueError(f"bad rank {self.rank} / world size {self.world_size}")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def owns(self, index: int) -> bool:
        """Round-robin sharding.

        >>> [i for i in range(7) if DistContext(1, 3).owns(i)]
        [1, 4]
        """
        return index % self.world_size == self.rank

    def barrier(self) -> None:
        if self.world_size > 1:
            import torch.distributed as dist

            dist.barrier()

    def gather_to_main(self, obj: Any) -> list[Any]:
        """Every rank's ``obj`` on rank 0, in rank order (``[]`` on other ranks).

        >>> DistContext().gather_to_main({"a": 1})
        [{'a': 1}]
        """
        if self.world_size == 1:
            return [obj]
        import torch.distributed as dist

        out: list[Any] | None = [None] * self.world_size if self.is_main else None
        dist.gather_object(obj, out, dst=0)
        return list(out) if out is not None else []

    def broadcast_from_main(self, obj: Any) -> Any:
        """Rank 0's ``obj`` on every rank (what other ranks pass is ignored).

        >>> DistContext().broadcast_from_main(3)
        3
        """
        if self.world_size == 1:
            return obj
        import torch.distributed as dist

        box = [obj if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self) -> None:
        if self.initialized_here:
            import torch.distributed as dist

            dist.destroy_process_group()


def env_world() -> tuple[int, int, int]:
    """(rank, world size, local rank) from the torchrun environment (1 process without it)."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", str(rank)))
    return rank, world, local


def local_world_size() -> int:
    """Processes torchrun started on this host (1 without torchrun)."""
    try:
        return max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        return 1


def init_distributed(device: str | None) -> DistContext:
    """Join the process group torchrun set up (nccl on GPU, gloo on CPU); a no-op
    for a single process. Reuses a group the caller already initialised."""
    rank, world, local = env_world()
    if world == 1:
        return DistContext()
    import torch
    import torch.distributed as dist

    if dist.is_initialized():
        return DistContext(dist.get_rank(), dist.get_world_size(), local)
    use_cuda = torch.cuda.is_available() and (device is None or device.startswith("cuda"))
    if use_cuda:
        torch.cuda.set_device(local % torch.cuda.device_count())
    dist.init_process_group(backend="nccl" if use_cuda else "gloo", rank=rank, world_size=world)
    return DistContext(rank, world, local, initialized_here=True)
