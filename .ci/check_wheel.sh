#!/usr/bin/env bash
# CI: build the wheel, install it into a fresh temporary venv (not editable, so nothing can be
# read from the checkout), and run the installed program's self-test offscreen from another
# folder. Catches files the program reads but the wheel leaves out (ENVIRONMENT.md, trap 7).
# Exits non-zero with the reason when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

MAX_WHEEL_BYTES=1400000  # code, tour texts, one catalogue, a ~190 KB font subset, the ~200 KB
                         # sample tensor file (measured ~1.03 MB; tests/test_packaging.py agrees)

fail() {
    echo "check_wheel: FAILED: $*" >&2
    exit 1
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS

# Build from a copy: an in-tree build leaves build/ and *.egg-info in the checkout.
mkdir "$work/source"
tar -C "$repo" -c --exclude=./.git --exclude=./.venv --exclude=./build --exclude=./dist \
    --exclude='*.egg-info' --exclude=__pycache__ --exclude=./out . | tar -C "$work/source" -x
python3 -m venv "$work/venv"
# pip's cache (~/.cache/pip) is reused: the PySide6-Essentials wheel is not downloaded again.
"$work/venv/bin/pip" wheel -q --disable-pip-version-check --no-deps \
    --wheel-dir "$work/dist" "$work/source" || fail "pip wheel could not build the wheel"
wheel=$(ls "$work"/dist/attention_scale_explorer-*.whl)
size=$(stat -c %s "$wheel")
echo "check_wheel: built $(basename "$wheel") ($size bytes, limit $MAX_WHEEL_BYTES)"
[ "$size" -le "$MAX_WHEEL_BYTES" ] || fail "the wheel is $size bytes, more than $MAX_WHEEL_BYTES"

"$work/venv/bin/pip" install -q --disable-pip-version-check "$wheel" \
    || fail "pip install of the wheel failed"
[ -x "$work/venv/bin/attention-explorer" ] || fail "no attention-explorer script in the venv"
echo "check_wheel: built and installed in $((SECONDS - start)) s"
# The files must come from the installed package, not from some folder that happens to exist.
found=$(cd / && "$work/venv/bin/python" -c \
    "from gui.kit.resources import resource_dir; print(resource_dir())")
case "$found" in
    "$work/venv/"*/attention_explorer_resources) echo "check_wheel: resources in $found" ;;
    *) fail "the installed program reads its resources from $found" ;;
esac

# From an empty folder, so that only the installed files can be found; settings in a temp
# folder so the user's (or another CI step's) settings are neither read nor written.
model="$repo/tests/fixtures/models/tiny-llama"  # a tiny Hugging Face folder (the bundle: GGUF)
mkdir "$work/elsewhere"
cd "$work/elsewhere"
echo "check_wheel: running the installed program's self-test offscreen from $PWD"
if ! QT_QPA_PLATFORM=offscreen ATTENTION_EXPLORER_SETTINGS_DIR="$work/settings" \
        "$work/venv/bin/attention-explorer" --self-test "$work/self-test" --model "$model" \
        >"$work/self-test.log" 2>&1; then
    cat "$work/self-test.log" >&2
    fail "the installed program's self-test failed (output above)"
fi
grep "model capture" "$work/self-test.log" || fail "the self-test did not capture from the model"
tail -n 1 "$work/self-test.log"
# The headless CLI entry point too (engine only, no Qt).
"$work/venv/bin/attention-scale" sweep --values 4,16 --samples 200 --quiet >"$work/sweep.csv" \
    || fail "attention-scale sweep failed"
[ "$(wc -l <"$work/sweep.csv")" -ge 3 ] || fail "attention-scale sweep wrote no rows"
echo "check_wheel: OK in $((SECONDS - start)) s"
