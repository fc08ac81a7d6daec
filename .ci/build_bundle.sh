#!/usr/bin/env bash
# CI: build the onedir PyInstaller bundle from attention_explorer.spec, run its self-test
# offscreen and check its size. Exits non-zero with the reason when a step fails.
# Uses the .venv that .ci/run creates (created here when missing); builds in a temp folder.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_BYTES=185000000  # the onedir bundle must stay ≤ 185 MB (measured: 182.5 MB in a venv that also
                     # holds transformers and sentencepiece, which the spec excludes)

fail() {
    echo "build_bundle: FAILED: $*" >&2
    exit 1
}

# PyInstaller runs objdump/objcopy, and the spec strips debug info from libpython with
# strip: all three are in binutils. The offscreen Qt libraries are installed by .ci/run.
if ! command -v objdump >/dev/null || ! command -v strip >/dev/null; then
    echo "installing system packages: binutils"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils
fi

[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q -e '.[build]' || fail "pip install -e '.[build]' failed"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bundle="$work/dist/attention-explorer"

echo "build_bundle: building the onedir bundle in $work"
start=$SECONDS
if ! .venv/bin/python -m PyInstaller --noconfirm --log-level WARN \
        --distpath "$work/dist" --workpath "$work/build" attention_explorer.spec \
        >"$work/pyinstaller.log" 2>&1; then
    tail -n 40 "$work/pyinstaller.log" >&2
    fail "PyInstaller could not build the bundle (log above)"
fi
echo "build_bundle: built in $((SECONDS - start)) s"
[ -x "$bundle/attention-explorer" ] || fail "no executable at $bundle/attention-explorer"

echo "build_bundle: running the frozen self-test offscreen"
# --model: the frozen program also tokenizes, dequantizes and runs a real (tiny) GGUF file.
if ! QT_QPA_PLATFORM=offscreen "$bundle/attention-explorer" --self-test "$work/self-test" \
        --model "$PWD/tests/fixtures/models/tiny-llama.gguf" \
        >"$work/self-test.log" 2>&1; then
    cat "$work/self-test.log" >&2
    fail "the frozen program's self-test failed (output above)"
fi
grep "model capture" "$work/self-test.log" || fail "the self-test did not capture from the model"
tail -n 1 "$work/self-test.log"

size=$(du -sb "$bundle" | cut -f1)
echo "build_bundle: bundle size $((size / 1000000)) MB ($size bytes, limit $MAX_BYTES)"
[ "$size" -le "$MAX_BYTES" ] || fail "the bundle is $size bytes, more than $MAX_BYTES"
echo "build_bundle: OK"
