"""The self-test's check of the shipped sample tensor file (engine only, no window).

Opens ``resources/samples/trained_heads.npz`` with :func:`engine.io.tensors.load_tensors` and
diagnoses every head with the file's own scale, cap and mask, so that the wheel and the frozen
bundle prove they can read real tensor files (numpy's ``.npz`` reader, JSON meta, the sample
itself) and run the head diagnostics.
"""

from __future__ import annotations

__all__ = ["check_sample_tensors"]


def check_sample_tensors() -> tuple[list[str], str]:
    """Diagnose every head of the sample; return (report lines, failure reason or "")."""
    from engine.analysis.heads import diagnose_head
    from engine.io.tensors import TensorFileError, load_tensors
    from gui.kit.resources import sample_tensors_path

    path = sample_tensors_path()
    try:
        tf = load_tensors(path)
        flagged = []
        count = 0
        for layer in tf.layers:
            for head in range(tf.heads):
                q, k = tf.qk(layer, head)
                diag = diagnose_head(q, k, scale=tf.layer_scale(layer),
                                     cap=tf.layer_cap(layer), causal=tf.causal)
                count += 1
                if diag.flags:
                    flagged.append(f"{tf.layer_name(layer)}/{head}: {','.join(diag.flags)}")
    except (TensorFileError, ValueError, OSError) as exc:
        return [], f"sample tensors {path.name}: {exc}"
    line = (f"sample tensors {path.name}: {count} heads diagnosed "
            f"({len(tf.layers)} layers × {tf.heads}, n {tf.n}, d_k {tf.d_k}, batch {tf.batch}); "
            f"flagged {len(flagged)}: {'; '.join(flagged) or 'none'}")
    return [line], ""
