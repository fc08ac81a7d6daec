"""Training steps per second: the numpy trainer against the same model in PyTorch eager (CPU).

Run: ``python benchmarks/bench_trainer.py [--steps 300] [--repeats 5] [--sizes 64,256]``.

The model is the trainer's default (d_model = d_k = 64, 1 head, retrieval with n = 16, batch
64, Adam), one scaling rule (1/√d_k). Both sides draw their batches with the same numpy task
sampler, so data generation costs the same. PyTorch runs with the same number of threads that
the numpy trainer lets BLAS use at that size (see ``engine.training.trainer.blas_threads``);
its Adam is timed both in the default (foreach) and the fused variant. Times are printed, never
asserted; on a shared machine expect noise: each figure is the best of ``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.config.train import TrainConfig
from engine.training.session import TrainingSession
from engine.training.trainer import blas_threads


def _blas_thread_count(config: TrainConfig) -> int:
    with blas_threads(config):
        counts = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    return min(counts) if counts else 0


def bench_numpy(config: TrainConfig, steps: int, repeats: int) -> float:
    """Best steps/s of ``TrainingSession.train_step`` (one rule)."""
    best = 0.0
    for _ in range(repeats):
        session = TrainingSession(config.replace(steps=steps + 20))
        with blas_threads(config):
            for _ in range(20):
                session.train_step()
            t = time.perf_counter()
            for _ in range(steps):
                session.train_step()
            best = max(best, steps / (time.perf_counter() - t))
    return best


def bench_torch(config: TrainConfig, steps: int, repeats: int, threads: int, fused: bool) -> float:
    """Best steps/s of the same model written in PyTorch eager."""
    import torch

    torch.set_num_threads(max(threads, 1))
    session = TrainingSession(config.replace(steps=1))  # for the task sampler and init
    task, dims = session.task, session.dims
    params0 = next(iter(session.runs.values())).params
    rng = np.random.default_rng(1)
    positions = torch.tensor(task.target_positions)
    scale = 1.0 / math.sqrt(dims.d_k)
    h, dk = dims.heads, dims.d_k

    def step(p: dict, opt: torch.optim.Optimizer) -> None:
        batch = task.sample(rng, config.batch)
        ids = torch.tensor(batch.ids)
        targets = torch.tensor(batch.targets).reshape(-1)
        b, t = ids.shape[:2]
        x = p["embed"][ids].sum(2) + p["pos"]
        q = (x[:, positions] @ p["w_q"]).reshape(b, -1, h, dk).transpose(1, 2)
        kv = (x @ p["w_kv"]).reshape(b, t, 2, h, dk)
        k, v = kv[:, :, 0].transpose(1, 2), kv[:, :, 1].transpose(1, 2)
        att = torch.softmax((q * scale) @ k.transpose(-1, -2), dim=-1)
        o = (att @ v).transpose(1, 2).reshape(-1, h * dk)
        z = (o @ p["w_o"]) @ p["w_u"] + p["b_u"]
        loss = torch.nn.functional.cross_entropy(z, targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    best = 0.0
    for _ in range(repeats):
        p = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params0.views.items()}
        opt = torch.optim.Adam(list(p.values()), lr=config.lr, fused=fused or None)
        for _ in range(20):
            step(p, opt)
        t0 = time.perf_counter()
        for _ in range(steps):
            step(p, opt)
        best = max(best, steps / (time.perf_counter() - t0))
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", default="64", help="comma-separated d_k (= d_model) values")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        torch = None  # type: ignore[assignment]
    print(f"numpy {np.__version__}" + (f", torch {torch.__version__}" if torch else ""))
    for d_k in (int(s) for s in args.sizes.split(",")):
        config = TrainConfig(d_k=d_k, rules=("sqrt",), n=16, batch=64, optimizer="adam")
        threads = _blas_thread_count(config)
        # Interleave the contenders and keep each one's best round, so that load from other
        # processes on a shared machine hits them alike.
        best = {"numpy": 0.0, "torch eager, Adam": 0.0, "torch eager, fused Adam": 0.0}
        for _ in range(args.repeats):
            best["numpy"] = max(best["numpy"], bench_numpy(config, args.steps, 1))
            if torch is None:
                continue
            for fused in (False, True):
                time.sleep(0.3)  # let OpenBLAS worker threads stop spinning before torch runs
                name = "torch eager, fused Adam" if fused else "torch eager, Adam"
                best[name] = max(best[name], bench_torch(config, args.steps, 1, threads, fused))
            time.sleep(0.3)
        np_sps = best["numpy"]
        print(f"d_model = d_k = {d_k}, 1 head, n 16, batch 64, Adam: numpy {np_sps:8.1f} steps/s "
              f"(BLAS threads {threads or 'default'})")
        if torch is None:
            print("torch not installed")
            continue
        for name in ("torch eager, Adam", "torch eager, fused Adam"):
            t_sps = best[name]
            print(f"    {name:24s} {t_sps:8.1f} steps/s ({max(threads, 1)} threads)  "
                  f"numpy/torch = {np_sps / t_sps:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
