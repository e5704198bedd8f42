"""Similarity metrics of generated answers against a pool of references (for a benchmark whose
``EvalSpec`` sets ``text_metrics``: docs/evals.md names them), each through its maintained library.

* BLEU: ``sacrebleu.sentence_bleu`` (all references at once, default exp smoothing), /100.
* ROUGE-L: ``rouge-score`` F-measure against the best reference (``scorers.rouge_l``).
* METEOR: ``nltk.translate.meteor_score`` (max over references), with WordNet 3.0 read from the
  database files of the Debian package ``wordnet-base`` (``/usr/share/wordnet``, or
  ``SUBTEXT_WORDNET_DIR``). NLTK's reader also wants a ``lexnames`` index, which that package
  documents but does not ship as a file: it is written next to copies of the database files
  in a cache folder (NLTK reads corpora only below its data path). No WordNet → METEOR is skipped with that reason.
* CIDEr: ``pycocoevalcap``'s CIDEr-D scorer over the evaluated set (IDF from its references);
  text lower-cased and split on non-word characters (the COCO PTB tokenizer needs Java).
* BERTScore: ``bert_score.BERTScorer`` with a model from a local folder only
  (``SUBTEXT_BERTSCORE_MODEL`` or config ``bertscore.model_path``); none → skipped with reason.

Each function returns per-item values (NaN where an item has no prediction); a missing
dependency raises ``MetricUnavailable`` with the reason, which the caller reports.
"""

from __future__ import annotations

import os
import re
import shutil
import threading
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from forge.evals.scorers import rouge_l
from forge.storage.location import local_base

# The reader built below warns that Open Multilingual WordNet is absent: METEOR uses English
# WordNet only, so the warning is noise on the build console (filtered by its message only).
warnings.filterwarnings("ignore", message="The multilingual functions are not available", category=UserWarning)

WORDNET_DIR = Path(os.environ.get("SUBTEXT_WORDNET_DIR", "/usr/share/wordnet"))
# WordNet 3.0 lexicographer files, in id order (lexnames(5WN)); NLTK reads them from "lexnames".
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location "
    "noun.motive noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process "
    "noun.quantity noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change "
    "verb.cognition verb.communication verb.competition verb.consumption verb.contact verb.creation "
    "verb.emotion verb.motion verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_TOKEN = re.compile(r"\w+", re.UNICODE)


class MetricUnavailable(RuntimeError):
    """A metric cannot run here (model or data absent); the message says why."""


def tokens(text: str) -> list[str]:
    return _TOKEN.findall((text or "").lower())


def bleu(predictions: Sequence[str | None], references: Sequence[Sequence[str]]) -> np.ndarray:
    import sacrebleu

    return np.array(
        [
            np.nan if p is None else sacrebleu.sentence_bleu(p, [r for r in refs if r] or [""]).score / 100.0
            for p, refs in zip(predictions, references)
        ],
        dtype=float,
    )


def rouge_l_best(predictions: Sequence[str | None], references: Sequence[Sequence[str]]) -> np.ndarray:
    return np.array(
        [np.nan if p is None else rouge_l(p, refs) for p, refs in zip(predictions, references)], dtype=float
    )


@lru_cache(maxsize=2)
def _wordnet(root: str, cache: str):
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader as _Reader

    class WordNetCorpusReader(_Reader):
        def map_wn(self, version="wordnet"):
            # NLTK maps other WordNet versions onto its own "wordnet" corpus (3.0), which is
            # this very database: identity, and nothing to load.
            return None

    src = Path(root)
    if not (src / "data.noun").is_file() or not (src / "index.noun").is_file():
        raise MetricUnavailable(
            f"METEOR skipped: no WordNet 3.0 database in {src} (apt-get install wordnet-base, "
            "or set SUBTEXT_WORDNET_DIR)"
        )
    if (src / "lexnames").is_file():
        nltk.data.path.append(str(src))  # NLTK only reads corpora under its data path
        return WordNetCorpusReader(str(src), None)
    dst = Path(cache)
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():  # copied, not linked: NLTK refuses files resolving outside its root
        if f.is_file() and not (dst / f.name).exists():
            shutil.copyfile(f, dst / f.name)
    syntactic = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}
    (dst / "lexnames").write_text(
        "".join(f"{i:02d}\t{n}\t{syntactic[n.split('.')[0]]}\n" for i, n in enumerate(_LEXNAMES))
    )
    nltk.data.path.extend([str(dst), str(src)])
    return WordNetCorpusReader(str(dst), None)


# One scorer at a time on the shared readers: NLTK's WordNet reader seeks and reads shared file
# handles (concurrent lookups can misread a line: nltk/nltk#2335) and a BERTScorer is one model;
# the eval assets score several models from threads.
_READERS_LOCK = threading.RLock()


def wordnet_reader(cache_dir: str | Path | None = None):
    cache = (Path(cache_dir) if cache_dir else local_base()) / "cache" / "wordnet"
    return _wordnet(str(WORDNET_DIR), str(cache))


def meteor(
    predictions: Sequence[str | None], references: Sequence[Sequence[str]], cache_dir: str | Path | None = None
) -> np.ndarray:
    from nltk.translate.meteor_score import meteor_score

    out = []
    with _READERS_LOCK:
        wn = wordnet_reader(cache_dir)
        for p, refs in zip(predictions, references):
            refs_t = [tokens(r) for r in refs if r]
            out.append(np.nan if p is None else (meteor_score(refs_t, tokens(p), wordnet=wn) if refs_t else 0.0))
    return np.array(out, dtype=float)


def cider(predictions: Sequence[str | None], references: Sequence[Sequence[str]]) -> np.ndarray:
    """CIDEr-D per item; IDF statistics come from the references of the items scored together."""
    from pycocoevalcap.cider.cider import Cider

    idx = [i for i, p in enumerate(predictions) if p is not None and any(references[i])]
    out = np.full(len(predictions), np.nan)
    if not idx:
        return out
    gts = {k: [" ".join(tokens(r)) for r in references[i] if r] for k, i in enumerate(idx)}
    res = {k: [" ".join(tokens(predictions[i]))] for k, i in enumerate(idx)}
    _, scores = Cider().compute_score(gts, res)
    out[idx] = np.asarray(scores, dtype=float)
    return out


@lru_cache(maxsize=2)
def _bert_scorer(model_path: str, num_layers: int | None, lang: str | None):
    from bert_score import BERTScorer

    return BERTScorer(model_type=model_path, num_layers=num_layers, lang=lang, rescale_with_baseline=False)


def bertscore_model_path(cfg: dict | None = None) -> tuple[str | None, str]:
    """The configured local BERTScore model folder, or (None, reason)."""
    path = os.environ.get("SUBTEXT_BERTSCORE_MODEL") or (cfg or {}).get("model_path")
    if not path:
        return None, "BERTScore skipped: no local model configured (SUBTEXT_BERTSCORE_MODEL or bertscore.model_path)"
    if not Path(path).is_dir():
        return None, f"BERTScore skipped: model folder {path} not found"
    return str(path), ""


def bertscore(
    predictions: Sequence[str | None], references: Sequence[Sequence[str]], cfg: dict | None = None
) -> np.ndarray:
    """BERTScore F1 (max over references) with a locally stored model; never downloads."""
    path, why = bertscore_model_path(cfg)
    if path is None:
        raise MetricUnavailable(why)
    layers = (cfg or {}).get("num_layers")
    idx = [i for i, p in enumerate(predictions) if p is not None and any(references[i])]
    out = np.full(len(predictions), np.nan)
    if idx:
        with _READERS_LOCK:
            scorer = _bert_scorer(path, int(layers) if layers else _default_layers(path), (cfg or {}).get("lang"))
            _, _, f1 = scorer.score([predictions[i] for i in idx], [[r for r in references[i] if r] for i in idx])
        out[idx] = f1.numpy().astype(float)
    return out


def _default_layers(path: str) -> int:
    """bert_score's recommended layer for a known model name, else the model's last layer."""
    from bert_score.utils import model2layers
    from transformers import AutoConfig

    name = Path(path).name
    if name in model2layers:
        return model2layers[name]
    return int(AutoConfig.from_pretrained(path).num_hidden_layers)


METRICS = {"bleu": bleu, "rouge_l": rouge_l_best, "meteor": meteor, "cider": cider, "bertscore_f1": bertscore}


def similarity_table(
    predictions: Sequence[str | None],
    references: Sequence[Sequence[str]],
    bertscore_cfg: dict | None = None,
    cache_dir: str | Path | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """Every metric's per-item values, and for each metric that could not run, the reason."""
    values: dict[str, np.ndarray] = {}
    skipped: dict[str, str] = {}
    for name, fn in METRICS.items():
        try:
            if name == "bertscore_f1":
                values[name] = fn(predictions, references, bertscore_cfg)
            elif name == "meteor":
                values[name] = fn(predictions, references, cache_dir)
            else:
                values[name] = fn(predictions, references)
        except MetricUnavailable as exc:
            skipped[name] = str(exc)
    return values, skipped
