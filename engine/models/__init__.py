"""Real models, run in numpy: open a Hugging Face folder or a GGUF file and capture the q and k
its attention layers compute for a text (:func:`open_model`, :meth:`Model.capture`)."""

from engine.models.capture import Capture, Model, layers_text
from engine.models.forward import CaptureCancelled
from engine.models.gguf_file import GGUF_TYPES
from engine.models.loader import open_model
from engine.models.samples import SAMPLE_MODELS, SampleModel, sample_models
from engine.models.spec import ARCHITECTURES, GGUF_ARCHITECTURES
from engine.models.weights import ModelError

__all__ = ["ARCHITECTURES", "GGUF_ARCHITECTURES", "GGUF_TYPES", "SAMPLE_MODELS", "Capture",
           "CaptureCancelled", "Model", "ModelError", "SampleModel", "layers_text",
           "open_model", "sample_models"]
