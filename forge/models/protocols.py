"""What the stages need of their models: one small ``Protocol`` per kind (issue #38).

A stage types its model with these and calls only what they name, so another engine (a detector
runtime, an OCR library, a tagger, a transcriber) is one adapter that satisfies the protocol, not
an edit to every stage. The optional capabilities are protocols of their own, checked with
``isinstance`` (``runtime_checkable``: an attribute check, as the ``getattr`` probes they replace).
What a protocol returns is declared beside it (``OCRResult``, ``Heard``), so the engines import
this module and it imports none of them. It imports no project module at run time, so any floor
may use it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import pandas as pd

    from forge.llm.types import AudioRequest


class Detector(Protocol):
    """An object detector the detections stage runs in its own process: ``YoloDetector`` (the
    library's predict) or ``fast_detect.TensorDetector``. ``spec`` names the weights in the rows."""

    spec: Any
    device: str
    half: bool | None
    imgsz: int
    batch_size: int

    def detect(self, images: Sequence[Any]) -> list[Any]: ...


@runtime_checkable
class StreamingDetector(Protocol):
    """A detector that overlaps its batches, may decode on the device and times its phases
    (``fast_detect.TensorDetector``); without it the stage runs ``detect`` batch after batch."""

    engine: str
    device_decode: bool
    phase_seconds: dict[str, float]

    def detect_stream(self, chunks: Iterable[tuple[Any, Sequence[Any]]]) -> Iterator[tuple[Any, list[Any]]]: ...


@runtime_checkable
class ShardedDetector(Protocol):
    """A detector whose model lives elsewhere (``forge.vision.detect_worker.RemoteDetector``, on
    Ray actors): it runs the whole stage on shards and returns the rows and stats itself."""

    def run_remote(
        self, frames: pd.DataFrame, data_dir: Path, reject: Any, opts: Any, progress: Any = None
    ) -> tuple[pd.DataFrame, Any]: ...


class OCRReader(Protocol):
    """EasyOCR's ``Reader`` as the OCR stages use it (``forge.media.ocr_reader.build_reader``):
    ``detect`` finds the boxes, ``recognize`` reads them, ``readtext`` does both."""

    device: str  # "cpu" or "cuda[:n]"
    detect_network: str  # "craft" (the one the ONNX engines export) or "dbnet18"
    detector: Any  # the text detector network, or an ONNX engine (``TextDetectorEngine``)

    def detect(self, img: Any, **kwargs: Any) -> tuple[list[Any], list[Any]]: ...

    def recognize(self, img: Any, **kwargs: Any) -> list[Any]: ...

    def readtext(self, image: Any, **kwargs: Any) -> list[Any]: ...


@runtime_checkable
class TextDetectorEngine(Protocol):
    """A text detector swapped in for the reader's torch network (``forge.media.text_detector``:
    ONNX or int8); a torch network has neither attribute."""

    engine: str
    sha256: str  # of the ONNX graph it runs


@dataclass(frozen=True)
class OCRResult:
    """What an OCR read of one image found (``OCR.read``): the text area ratio, boxes and text."""

    ratio: float
    n_boxes: int
    text: str
    boxes: list[dict[str, Any]] = field(default_factory=list)  # poly (original pixels), text, conf
    width: int = 0
    height: int = 0

    def boxes_json(self) -> str:
        return json.dumps(self.boxes, separators=(",", ":"))


class OCR(Protocol):
    """What the text_ratio stage takes (``resources.ocr.OCRResource``): its readers, the build
    arguments a Ray replica builds its own reader from, and where it hears what they ran."""

    languages: Sequence[str]
    model_dir: str | None
    gpu: bool | None
    detector_engine: str
    max_side: int

    def detect_reader(self) -> OCRReader: ...

    def read(self, rgb: np.ndarray) -> OCRResult: ...

    def note_remote_engines(self, engines: set[tuple[str, str]]) -> None: ...


class Tagger(Protocol):
    """A frame tagger (``forge.vision.tagger.RamTagger``): ``(tag, score)`` lists per image."""

    batch_size: int
    model_version: str

    def tag(self, images: Sequence[Any]) -> list[list[tuple[str, float]]]: ...


@dataclass
class Heard:
    """One recogniser answer: ``text`` ('' = no speech) or ``error``."""

    ok: bool
    text: str = ""
    error: str = ""
    model: str = ""
    request_key: str = ""
    unsupported: bool = False  # the endpoint serves no transcriptions at all (a chat-only server)


class Transcriber(Protocol):
    """What hears a clip's audio: the LLM endpoint or a local Whisper (forge.media.transcripts)."""

    label: str  # transcript_source of what it hears

    def hear(self, partition: str, audio: list[AudioRequest]) -> list[Heard]: ...


@dataclass
class NLIResult:
    """One NLI verdict on a (premise, hypothesis) pair (``forge.checks.nli``)."""

    item_id: str
    label: str | None  # "entailment" / "neutral" / "contradiction" (forge.checks.nli.LABELS); None when the call failed
    scores: dict[str, float] | None  # per-label probabilities (cross-encoder only)
    backend: str  # "cross_encoder" or the engine backend ("openai" / "stub")
    model: str
    prompt_hash: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.label is not None


class NLIBackend(Protocol):
    """Natural language inference over pairs: ``forge.checks.nli.CrossEncoderNLI`` or ``LLMNLI``."""

    name: str

    def classify(self, pairs: Sequence[tuple[str, str]], item_ids: Sequence[str] | None = None) -> list[NLIResult]: ...
