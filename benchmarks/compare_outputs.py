"""Compare what two commits write: every exported view and the command-line outputs.

Run from the repository root::

    python benchmarks/compare_outputs.py A B [--keep DIR] [--only export,sweep,…]

Each commit is checked out in a temporary ``git worktree add --detach`` and runs, offscreen
and in English, ``main.py export`` and the commands of :func:`commands` on the fixtures of
tests/fixtures (standard output kept as ``NAME.stdout.txt``); a command a commit does not
have is skipped there. benchmarks/compare_files.py compares the two output trees file by
file (benchmarks/README.md says how and what it passes over). The last lines are
``N files, M differ`` and each differing file with its first difference; the exit status is
1 when any file differs (or a run failed), else 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare_files import Normaliser, compare_trees  # beside this script

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = "tests/fixtures/models"
TEXT = "The cat sat on the mat because it was warm, and the dog watched it from the door."


def commands(tree: str, out: str) -> list[tuple[str, list[str]]]:
    """``(name, main.py arguments)`` of every run, in order (later runs read earlier files)."""
    fixtures, causal = f"{tree}/{FIXTURES}", f"{tree}/tests/fixtures/causal"
    rules = "none,sqrt,linear,temperature,qk_norm,softcap,log_n,ssmax,yarn"
    sweep = ["sweep", "--rules", rules, "--samples", "2000", "--quiet"]
    return [
        ("export", ["export", "--out", f"{out}/export", "--lang", "en"]),
        ("capture_llama", ["capture", f"{fixtures}/tiny-llama", "--text", TEXT,
                           "--out", f"{out}/capture_llama.npz", "--quiet"]),
        ("capture_gguf", ["capture", f"{fixtures}/tiny-llama.gguf", "--text", TEXT,
                          "--out", f"{out}/capture_gguf.safetensors", "--quiet"]),
        ("capture_bert", ["capture", f"{fixtures}/tiny-bert", "--text", TEXT, "--with-v",
                          "--out", f"{out}/capture_bert.npz", "--quiet"]),
        ("inspect_llama", ["inspect", f"{out}/capture_llama.npz", "--quiet"]),
        ("inspect_llama_csv", ["inspect", f"{out}/capture_llama.npz", "--quiet",
                               "--out", f"{out}/inspect_llama.csv"]),
        ("inspect_gguf_none", ["inspect", f"{out}/capture_gguf.safetensors", "--rule", "none",
                               "--quiet", "--out", f"{out}/inspect_gguf_none.csv"]),
        ("inspect_bert", ["inspect", f"{out}/capture_bert.npz", "--quiet",
                          "--out", f"{out}/inspect_bert.csv"]),
        ("export_head", ["export", "--out", f"{out}/export_head", "--lang", "en",
                         "--tensors", f"{out}/capture_llama.npz", "--head", "1,2"]),
        ("sweep_dk", [*sweep, "--param", "d_k", "--values", "0:8",
                      "--out", f"{out}/sweep_dk.csv"]),
        ("sweep_s", [*sweep, "--param", "s", "--values", "0.5,2,8,32", "--dtype", "float16",
                     "--softmax", "naive", "--out", f"{out}/sweep_s.csv"]),
        ("sweep_rho", [*sweep, "--param", "rho", "--values=-0.9,-0.5,0,0.5,0.9",
                       "--out", f"{out}/sweep_rho.csv"]),
        ("sweep_n", [*sweep, "--param", "n", "--values", "1:10", "--dtype", "bfloat16",
                     "--out", f"{out}/sweep_n.csv"]),
        ("train_json", ["train", "--steps", "60", "--json", "--quiet",
                        "--tensors-out", f"{out}/train_qk.npz"]),
        ("train_table", ["train", "--task", "copy_back", "--rules", rules, "--steps", "40",
                         "--d-k", "16", "--quiet"]),
        ("inspect_train", ["inspect", f"{out}/train_qk.npz", "--quiet",
                           "--out", f"{out}/inspect_train.csv"]),
        ("lr_sweep", ["lr-sweep", "--steps", "30", "--seeds", "2", "--lrs", "0.01,0.1",
                      "--d-k", "16", "--quiet", "--out", f"{out}/lr_sweep.csv"]),
        # Issue P's command: run where the commit has it (else its files are "only in").
        ("intervene_alpha", ["intervene", f"{causal}/tiny-llama", "--text", TEXT,
                             "--alphas=-2:2", "--continue", "4", "--quiet",
                             "--out", f"{out}/intervene_alpha.json"]),
        ("intervene_layer", ["intervene", f"{causal}/tiny-llama.gguf", "--text", TEXT,
                             "--sweep", "layer", "--quiet", "--out", f"{out}/intervene_layer.csv"]),
    ]


def _commands_of(tree: Path, env: dict[str, str]) -> set[str] | None:
    """The subcommands of ``tree``'s main.py (None when its parser cannot say)."""
    probe = ("import argparse, main; print(*next(a for a in main.build_parser()._actions if "
             "isinstance(a, argparse._SubParsersAction)).choices)")
    done = subprocess.run([sys.executable, "-c", probe], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    return set(done.stdout.split()) if done.returncode == 0 else None


def run_all(tree: Path, out: Path, only: set[str] | None) -> list[str]:
    """Run every command of ``tree`` into ``out``; returns the failures as lines."""
    out.mkdir(parents=True, exist_ok=True)
    config = out.parent / f"{out.name}-config"
    # QT_HASH_SEED=0: Qt seeds its hash tables per process, and a PDF lists its embedded
    # fonts in hash order (regular and bold swap subset tags from one run to the next).
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(tree),
               XDG_CONFIG_HOME=str(config), PYTHONHASHSEED="0", QT_HASH_SEED="0")
    failures = []
    known = _commands_of(tree, env)
    for name, args in commands(str(tree), str(out)):
        if only is not None and name.split("_")[0] not in only and name not in only:
            continue
        if known is not None and args[0] not in known:
            print(f"  {tree.name}: {name} skipped (no command {args[0]})", file=sys.stderr)
            continue
        print(f"  {tree.name}: {name}", file=sys.stderr, flush=True)
        done = subprocess.run([sys.executable, "main.py", *args], cwd=tree, env=env,
                              capture_output=True, text=True, check=False)
        if done.stdout:
            (out / f"{name}.stdout.txt").write_text(done.stdout, encoding="utf-8")
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            failures.append(f"{tree.name}: {name} exited {done.returncode}: {tail}")
    return failures


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", help="first commit (any git revision)")
    parser.add_argument("b", help="second commit")
    parser.add_argument("--keep", type=Path, help="write the outputs into this folder "
                        "(out-A, out-B) and keep them (default: a temporary folder, removed)")
    parser.add_argument("--only", help="comma-separated command names or kinds to run "
                        "(export, capture, inspect, sweep, train, lr_sweep; default: all)")
    options = parser.parse_args(argv)
    only = set(options.only.split(",")) if options.only else None
    commits = [_git("rev-parse", "--verify", f"{rev}^{{commit}}") for rev in (options.a,
                                                                              options.b)]
    holder = None if options.keep else tempfile.TemporaryDirectory(prefix="compare-")
    base = (options.keep or Path(holder.name)).resolve()
    base.mkdir(parents=True, exist_ok=True)
    trees = [base / "A", base / "B"]
    for name in ("A", "B"):  # what an earlier --keep run into the same folder left
        if (base / name).exists():
            _git("worktree", "remove", "--force", str(base / name))
        for stale in (base / f"out-{name}", base / f"out-{name}-config"):
            shutil.rmtree(stale, ignore_errors=True)
    failures: list[str] = []
    try:
        for tree, commit in zip(trees, commits, strict=True):
            _git("worktree", "add", "--detach", str(tree), commit)
        for tree, commit in zip(trees, commits, strict=True):
            print(f"running {commit[:10]} in {tree}", file=sys.stderr, flush=True)
            failures += run_all(tree, base / f"out-{tree.name}", only)
        count, differences = compare_trees(
            *[(base / f"out-{tree.name}", Normaliser(tree, base / f"out-{tree.name}"))
              for tree in trees])
    finally:
        for tree in trees:
            if tree.exists():
                _git("worktree", "remove", "--force", str(tree))
        if holder is not None:
            holder.cleanup()
    for line in failures:
        print(f"FAILED {line}")
    print(f"{count} files, {len(differences)} differ")
    for line in differences:
        print(f"  {line}")
    return 1 if differences or failures else 0


if __name__ == "__main__":
    sys.exit(main())
