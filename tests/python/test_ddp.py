"""DistributedDataParallel around a model compiled with ember: two ranks on this machine
(torch.multiprocessing.spawn, the gloo backend on 127.0.0.1), a bucket size that makes
Dynamo's DDPOptimizer split the graph at bucket boundaries, and the gradients and
parameters of each step compared with eager DDP trained from the same initialization."""

from __future__ import annotations

import copy
import os
import socket
import time
import warnings

import pytest
import torch
import torch.distributed as dist
from torch import nn

pytestmark = pytest.mark.skipif(
    not dist.is_available() or not dist.is_gloo_available(),
    reason="torch.distributed with the gloo backend is not available in this build of torch")

WORLD = 2
STEPS = 3
TIMEOUT_S = 300  # the whole run (about 40-70 s, mostly compiling); killed and failed past this


class Net(nn.Module):
    """About 2 MiB of parameters: with bucket_cap_mb=1, DDP (and Dynamo) use 3 buckets.
    (A module of torch's own, such as nn.Sequential, is not a frame Dynamo compiles on
    its own under DDP: the model's forward is the user's code.)"""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(16, 512), nn.ReLU(), nn.Linear(512, 512), nn.GELU(),
            nn.Linear(512, 512), nn.Tanh(), nn.Linear(512, 4))

    def forward(self, x):
        return self.layers(x)


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))


def _worker(rank: int, port: int, out_dir: str) -> None:
    from torch.nn.parallel import DistributedDataParallel as DDP

    import ember.torch
    from ember.torch.report import EagerFallbackWarning

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD)
    try:
        torch.manual_seed(0)  # the same initialization on both ranks and both models
        model = Net()
        reference = copy.deepcopy(model)
        graphs: list[int] = []

        def backend(gm, example_inputs):  # backend="ember", counting DDPOptimizer's graphs
            graphs.append(len(gm.graph.nodes))
            return ember.torch.ember_backend(gm, example_inputs,
                                             options={"progress": False})

        compiled = torch.compile(DDP(model, bucket_cap_mb=1), backend=backend)
        eager = DDP(reference, bucket_cap_mb=1)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
        gen = torch.Generator().manual_seed(100 + rank)  # each rank its own batch
        worst_grad = worst_param = 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("error", EagerFallbackWarning)
            for _ in range(STEPS):
                x = torch.randn(8, 16, generator=gen)
                target = torch.randn(8, 4, generator=gen)
                for m, o in ((compiled, opt), (eager, ref_opt)):
                    o.zero_grad()
                    ((m(x) - target) ** 2).mean().backward()
                for p, q in zip(model.parameters(), reference.parameters(), strict=True):
                    worst_grad = max(worst_grad, _rel(p.grad, q.grad))
                opt.step()
                ref_opt.step()
                for p, q in zip(model.parameters(), reference.parameters(), strict=True):
                    worst_param = max(worst_param, _rel(p.detach(), q.detach()))
        torch.save({"graphs": graphs, "grad": worst_grad, "param": worst_param},
                   os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_with_ember_matches_eager_ddp(tmp_path):
    import torch.multiprocessing as mp

    context = mp.spawn(_worker, args=(_free_port(), str(tmp_path)), nprocs=WORLD,
                       join=False)
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while not context.join(timeout=1):
            if time.monotonic() > deadline:
                pytest.fail(f"the {WORLD} ranks did not finish in {TIMEOUT_S} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.terminate()
                process.join(5)
    for rank in range(WORLD):
        result = torch.load(tmp_path / f"rank{rank}.pt")
        # DDPOptimizer split the forward at bucket boundaries: one ember graph per bucket.
        assert len(result["graphs"]) >= 2, result["graphs"]
        assert result["grad"] < 1e-5, f"rank {rank}: gradients differ by {result['grad']}"
        assert result["param"] < 1e-5, f"rank {rank}: parameters differ by {result['param']}"
