"""transformers' side of ``bench_intervene.py``: the same GGUF and ids behind the requests
``forward``, ``scored`` and ``continue``, answered one JSON line each.

``bench_intervene.py`` starts it with an interpreter that has torch, transformers and gguf
(``--transformers-python``), which need not have the engine's packages::

    python intervene_transformers.py THREADS FOLDER GGUF_NAME IDS_JSON
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from bench_intervene import _clocked, _serve, _timed  # beside this script; imports no engine


def serve_transformers(threads: int, folder: str, name: str, ids_json: str) -> None:
    """Open the GGUF of ``folder``/``name`` in transformers (float32, eager attention) on
    ``threads`` threads and answer ``forward``, ``scored`` and ``continue`` for the ids in
    the file ``ids_json``."""
    import torch
    import transformers

    torch.set_num_threads(threads)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=torch.float32, attn_implementation="eager").eval()
    ids = torch.tensor([json.loads(Path(ids_json).read_text())], dtype=torch.long)

    def forward() -> dict:
        with torch.inference_mode():
            return _clocked(lambda: model(input_ids=ids).logits)

    def scored(top_k: str) -> dict:
        """The forward with what a score of ours also returns from the logits: the loss
        (transformers' own, from labels) and the top-k tokens and probabilities at every
        position (ours also gives each layer's attention entropy, which eager transformers
        gives only by returning every layer's weights)."""
        def run() -> None:
            out = model(input_ids=ids, labels=ids)
            torch.softmax(out.logits, dim=-1).topk(int(top_k), dim=-1)
        with torch.inference_mode():
            return _clocked(run)

    class Stamps(transformers.generation.streamers.BaseStreamer):
        """The time of each ``put``: the prompt's, then each new token's."""

        def __init__(self) -> None:
            self.times: list[float] = []

        def put(self, value: object) -> None:
            self.times.append(time.perf_counter())

        def end(self) -> None:
            pass

    def generate(new: str) -> dict:
        stamps = Stamps()
        with torch.inference_mode():
            s, out = _timed(lambda: model.generate(ids, max_new_tokens=int(new), do_sample=False,
                                                   streamer=stamps, pad_token_id=0))
        new_ids = out[0, ids.shape[1]:].tolist()
        steps = stamps.times[-1] - stamps.times[1]
        return {"s": s, "first": s - steps, "steps": steps, "new": len(new_ids),
                "ids": new_ids}

    with torch.inference_mode():  # the loss, to show both ran the same model on the same ids
        logits = model(input_ids=ids).logits[0, :-1].double()
        loss = torch.nn.functional.cross_entropy(logits, ids[0, 1:]).item()
    _serve({"forward": forward, "scored": scored, "continue": generate},
           {"loss": loss, "threads": torch.get_num_threads(), "torch": torch.__version__,
            "transformers": transformers.__version__})


if __name__ == "__main__":
    serve_transformers(int(sys.argv[1]), *sys.argv[2:])
