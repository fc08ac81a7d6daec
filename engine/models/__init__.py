"""Real models, run in numpy: open a Hugging Face folder or a GGUF file and capture the q and k
its attention layers compute for a text (:func:`open_model`, :meth:`Model.capture`), or score
the text with the model's language-model head under an :class:`Intervention` on its attention
(:func:`score_text`, :func:`iter_sweep`, :func:`continue_text`; the raw next-token logits:
:func:`text_logits`).

In a notebook, with the SmolLM2 sample model::

    from engine.models import Intervention, iter_sweep, open_model, score_text
    model = open_model("SmolLM2-135M-Instruct.Q4_1.gguf")
    text = "The cat sat on the mat because it was tired."
    score_text(model, text).loss                             # 4.9833: the model's own scale
    score_text(model, text, Intervention(alpha=8.0)).loss    # 7.6350: no scaling (√64 = 8)
    [p.score.loss for p in iter_sweep(model, text)]          # α = 1/8 … 8, 13 points
"""

from engine.models.capture import Capture, Model, layers_text
from engine.models.continuation import Continuation, continue_text
from engine.models.forward import CaptureCancelled
from engine.models.gguf_file import GGUF_TYPES
from engine.models.intervention import DEFAULT_ALPHAS, Intervention
from engine.models.loader import open_model
from engine.models.samples import SAMPLE_MODELS, SampleModel, sample_models
from engine.models.scores import TextLogits, TextScore, TokenPrediction
from engine.models.scoring import score_text, text_logits
from engine.models.spec import ARCHITECTURES, GGUF_ARCHITECTURES
from engine.models.sweeps import SweepPoint, iter_sweep
from engine.models.weights import ModelError

__all__ = ["ARCHITECTURES", "DEFAULT_ALPHAS", "GGUF_ARCHITECTURES", "GGUF_TYPES", "SAMPLE_MODELS",
           "Capture", "CaptureCancelled", "Continuation", "Intervention", "Model", "ModelError",
           "SampleModel", "SweepPoint", "TextLogits", "TextScore", "TokenPrediction",
           "continue_text", "iter_sweep", "layers_text", "open_model", "sample_models",
           "score_text", "text_logits"]
