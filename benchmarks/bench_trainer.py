"""Training steps per second: the numpy trainer against the same model in PyTorch eager (CPU).

Run: ``python benchmarks/bench_trainer.py [--runs 5] [--repeats 5] [--steps 200] [--sizes 64]``.

The model is the trainer's default (d_model = d_k = 64, 1 head, retrieval with n = 16, batch
64, Adam), one scaling rule (1/√d_k). Both sides draw their batches with the same numpy task
sampler, so data generation costs the same. PyTorch runs the same computation in eager mode
with ``torch.optim.Adam(fused=True)`` (its fastest CPU Adam), on the number of threads that
the numpy trainer lets BLAS use at that size (see ``engine.training.trainer.blas_threads``)
unless ``--torch-threads`` says otherwise.

Each run times ``--repeats`` rounds; a round times numpy and then torch back to back (a pause
in between lets OpenBLAS worker threads stop spinning), and its ratio is numpy steps/s ÷ torch
steps/s. The run's figure is the median of its rounds' ratios, so that load from other
processes on a shared machine hits both sides alike. Goal: ratio ≥ 1.5 in every run. Times are
printed, never asserted; the load average is printed with every run.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.config.train import TrainConfig
from engine.core.memory import tune_allocator
from engine.training.session import TrainingSession
from engine.training.trainer import blas_threads

#: The goal: numpy steps/s ≥ this × torch eager (fused Adam) steps/s, in every run.
GOAL = 1.5
#: Untimed steps before each timing (first-call costs, caches, allocator).
WARMUP_STEPS = 20


def _blas_thread_count(config: TrainConfig) -> int:
    with blas_threads(config):
        counts = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
    return min(counts) if counts else 0


def bench_numpy(config: TrainConfig, steps: int) -> float:
    """Steps/s of ``TrainingSession.train_step`` (one rule), after a warm-up."""
    session = TrainingSession(config.replace(steps=steps + WARMUP_STEPS))
    with blas_threads(config):
        for _ in range(WARMUP_STEPS):
            session.train_step()
        t = time.perf_counter()
        for _ in range(steps):
            session.train_step()
        return steps / (time.perf_counter() - t)


def bench_torch(config: TrainConfig, steps: int, threads: int, fused: bool = True) -> float:
    """Steps/s of the same model written in PyTorch eager, after a warm-up."""
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

    p = {k: torch.tensor(v.copy(), requires_grad=True) for k, v in params0.views.items()}
    opt = torch.optim.Adam(list(p.values()), lr=config.lr, fused=fused or None)
    for _ in range(WARMUP_STEPS):
        step(p, opt)
    t0 = time.perf_counter()
    for _ in range(steps):
        step(p, opt)
    return steps / (time.perf_counter() - t0)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs, each with its own verdict")
    parser.add_argument("--repeats", type=int, default=5, help="rounds per run (median ratio)")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per side and round")
    parser.add_argument("--sizes", default="64", help="comma-separated d_k (= d_model) values")
    parser.add_argument("--torch-threads", type=int, default=None,
                        help="torch threads (default: the numpy trainer's BLAS threads)")
    parser.add_argument("--foreach", action="store_true",
                        help="also time torch's default (foreach, not fused) Adam")
    args = parser.parse_args()
    tune_allocator()  # malloc's thresholds as main.py sets them
    try:
        import torch
    except ImportError:
        torch = None  # type: ignore[assignment]
    print(f"numpy {np.__version__}" + (f", torch {torch.__version__}" if torch else ""))
    verdicts: list[bool] = []
    for d_k in (int(s) for s in args.sizes.split(",")):
        config = TrainConfig(d_k=d_k, rules=("sqrt",), n=16, batch=64, optimizer="adam")
        threads = _blas_thread_count(config)
        t_threads = args.torch_threads or max(threads, 1)
        print(f"d_model = d_k = {d_k}, 1 head, n 16, batch 64, Adam; numpy BLAS threads "
              f"{threads or 'default'}, torch threads {t_threads}; goal numpy/torch ≥ {GOAL}")
        for run in range(1, args.runs + 1):
            load = _load()
            np_sps, t_sps, ratios, foreach = [], [], [], []
            for _ in range(args.repeats):
                np_sps.append(bench_numpy(config, args.steps))
                if torch is None:
                    continue
                time.sleep(0.3)  # let OpenBLAS worker threads stop spinning before torch runs
                t_sps.append(bench_torch(config, args.steps, t_threads, fused=True))
                ratios.append(np_sps[-1] / t_sps[-1])
                if args.foreach:
                    foreach.append(bench_torch(config, args.steps, t_threads, fused=False))
                time.sleep(0.3)
            line = f"run {run}: numpy {statistics.median(np_sps):7.1f} steps/s"
            if torch is None:
                print(line + " (torch not installed)")
                continue
            ratio = statistics.median(ratios)
            verdicts.append(ratio >= GOAL)
            line += (f", torch eager + fused Adam {statistics.median(t_sps):7.1f} steps/s; "
                     f"numpy/torch median {ratio:.2f}x (rounds {min(ratios):.2f}-"
                     f"{max(ratios):.2f}) -> {'PASS' if ratio >= GOAL else 'FAIL'}")
            if foreach:
                line += f"; torch foreach Adam {statistics.median(foreach):7.1f} steps/s"
            print(line + f"  [load {load} -> {_load()}]", flush=True)
    if verdicts:
        print(f"runs meeting the goal: {sum(verdicts)}/{len(verdicts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
