"""A plausible model behind the test double: varied, schema-valid replies to every prompt the
project sends, which pass the recipes' checks most of the time and fail them, the rest of the
time, in the ways a real model does.

Use it as the double's responder::

    double.responder = Plausible(seed=7)

Every reply is drawn from a random generator seeded by (seed, prompt name, the request's
messages), so a run repeats exactly and a regenerated request (feedback turns appended) gets a
new draw. Per request, in order:

* ``unparseable`` (``p_unparseable``): text that is not JSON;
* ``refusal`` (``p_refusal``): a polite refusal in place of the JSON;
* ``flaw`` (``p_flaw``): a schema-valid reply with the prompt's realistic defect — duplicated
  options (II-Bench), an indirect expression that repeats the direct one (VAGUE), an entailed
  foil (MAIA), a box in the wrong convention (Hummus), a non ``TARGET IS SOURCE`` metaphor, a
  hint word in a ViMU question, an inconsistent MAIA answer (and, for some questions, an annotator
  who keeps misreading the question after feedback), a "too literal" or low rating...
  Where a prompt has several kinds of flaw, each a reject reason of its own, one is drawn, or
  with ``rotate_flaws`` they take turns (``flaw_rates`` raises the rate per prompt);
* otherwise a good reply built from the request's own variables (the tags it names, the
  caption it quotes, the statement it edits), so the recipe's code checks pass.

Scripted per item (``doomed`` / ``stubborn``: a count for every prompt or per prompt name, off
by default): the first N items
a prompt is asked about (an item = the messages up to the prompt's own user turn: system text and images
included; repair and feedback turns do not change it) are *doomed* — every request about them is refused, so the call
fails after its repairs and the stage rejects the item with its ``*_failed`` reason — and the
next M are *stubborn* — every reply about them carries the prompt's flaw, so a refine loop runs
out of rounds. Which items come first depends on request order; how many does not.

Judges answer from what they are shown: the MAIA consistency judge scores an off-topic answer 0,
the NLI judge says ``contradiction`` unless the two
sentences are equal, the foil structural check passes a foil that differs from its caption,
the blind solver guesses. Prompts it does not know get a schema-driven value made of words
(never the ``[stub]`` marker). ``counts`` records how many replies of each (prompt, mode).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import threading
from collections import Counter
from typing import Any

from forge.checks.text import guess_language
from tests.llm_double.server import Reply, message_text

WORDS = (
    "river lantern market window garden bicycle kettle ladder orchard harbor shadow signal "
    "blanket compass teacup violin meadow chimney whistle pocket ribbon balcony statue puzzle "
    "candle tunnel feather mirror pillow"
).split()
VERBS = ("carry open watch repair follow paint share hide borrow lift polish wrap count greet").split()
MOODS = (
    "calm, focused on the task",
    "cheerful and relaxed",
    "tense but determined",
    "bored, glancing away",
    "proud of the result",
    "slightly annoyed",
    "curious about the noise",
    "tired after a long day",
)
# varied wording, as different annotators would write (few shared function words)
ANSWER_FORMS = (
    "Next to the {w}, {m}.",
    "He stays by a {w} and seems {m}.",
    "Close to that {w}; {m}.",
    "Somewhere near one {w} — {m}.",
    "Beside some {w}, mostly {m}.",
)
OFF_TOPIC = "The weather outside looks nice, with a"
MISREAD = "I could not tell what the question is about."
ANSWER_FORMS_IT = (
    "Vicino a {w}, {m}.",
    "Resta accanto a {w} e sembra {m}.",
    "Proprio presso {w}; {m}.",
    "Da qualche parte dietro {w}: {m}.",
    "Di fianco a {w}, quasi sempre {m}.",
)
OFF_TOPIC_IT = "Il tempo fuori sembra bello, con"
MISREAD_IT = "Non ho capito di che cosa parla la domanda."
# an annotator who reads the scene the opposite way and keeps that reading after feedback: an
# answer consistent with the question that contradicts the rest of the pool
CONTRARY = "Nobody is there at all; the scene is completely empty."
CONTRARY_IT = "Non c'è nessuno; la scena è completamente vuota."


# Italian prompts (MAIA's ``language: it``) get Italian replies: nouns with their article (elided
# "l'ombra" included, so the recipe's Italian tokenisation is exercised), moods, sentence frames.
WORDS_IT = (
    "il fiume|la lanterna|il mercato|la finestra|il giardino|la bicicletta|il bollitore|la scala|il frutteto|"
    "il porto|l'ombra|il segnale|la coperta|la bussola|la tazza|il violino|il prato|il camino|il fischietto|"
    "la tasca|il nastro|il balcone|la statua|l'orologio|la candela|la galleria|la piuma|lo specchio|il cuscino"
).split("|")
MOODS_IT = (
    "calmo, concentrato sul lavoro",
    "allegro e rilassato",
    "teso ma deciso",
    "annoiato, con lo sguardo altrove",
    "orgoglioso del risultato",
    "un po' infastidito",
    "curioso di quello che succede",
    "stanco dopo una lunga giornata",
)


def _italian(text: str) -> bool:
    """The request's prompt is Italian (the same coarse test the offline stub uses)."""
    return guess_language(text) == "it"


def _rng(*parts: Any) -> random.Random:
    return random.Random(int(hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16], 16))


def _schema(body: dict[str, Any]) -> tuple[str | None, dict[str, Any] | None]:
    rf = body.get("response_format") or {}
    js = rf.get("json_schema") or {}
    return js.get("name"), js.get("schema")


def _field(text: str, prefix: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip().startswith(prefix):
            return line.strip()[len(prefix) :].strip()
    return ""


def _list_field(text: str, prefix: str) -> list[str]:
    """A list variable on the ``prefix`` line: a JSON list, or comma-separated words."""
    raw = _field(text, prefix)
    raw = raw.split("):", 1)[-1] if "):" in raw else raw.lstrip(":")
    raw = raw.strip()
    try:
        vals = json.loads(raw)
        if isinstance(vals, list):
            return [str(v).strip() for v in vals if str(v).strip()]
    except ValueError:
        pass
    return [v.strip(" []\"'") for v in raw.split(",") if v.strip(" []\"'")]


def _first_user(body: dict[str, Any]) -> str:
    """The prompt's own (last example-free) user turn: refine appends feedback turns after it."""
    users = [m for m in body.get("messages", []) if m.get("role") == "user"]
    turns = [message_text({"messages": [m]}) for m in users]
    return next((t for t in reversed(turns) if _own_turn(t)), turns[-1] if turns else "")


def _own_turn(text: str) -> bool:
    """Not a turn the project appends after the prompt's own: refine feedback or a repair request."""
    return "Feedback" not in text and "A reviewer" not in text and not text.startswith("Your reply could not be used")


def _anchor(body: dict[str, Any]) -> str:
    """The item a request is about: every message up to the prompt's own user turn (system text,
    examples, images included), so the appended repair and feedback turns do not change it."""
    msgs = body.get("messages", [])
    own = max(
        (i for i, m in enumerate(msgs) if m.get("role") == "user" and _own_turn(message_text({"messages": [m]}))),
        default=len(msgs) - 1,
    )
    return hashlib.sha256(json.dumps(msgs[: own + 1], sort_keys=True, default=str).encode()).hexdigest()


def _budget(want: int | dict[str, int], name: str) -> tuple[str, int]:
    """(budget key, how many items get the fate) for prompt ``name``: an int for every prompt, or
    per name; a key ending in ``*`` is a prefix whose prompts share one budget (``"maia_foil_*"``)."""
    if isinstance(want, int):
        return name, want
    if name in want:
        return name, want[name]
    return next(((k, v) for k, v in want.items() if k.endswith("*") and name.startswith(k[:-1])), (name, 0))


def _sentence(rng: random.Random, n: int = 8) -> str:
    words = [rng.choice(WORDS + VERBS) for _ in range(n)]
    return (" ".join(words)).capitalize() + "."


class Plausible:
    def __init__(
        self,
        seed: int = 0,
        p_flaw: float = 0.12,
        p_unparseable: float = 0.02,
        p_refusal: float = 0.01,
        p_misread: float = 0.125,
        p_contrary: float = 0.1,
        doomed: int | dict[str, int] = 0,
        stubborn: int | dict[str, int] = 0,
        flaw_rates: dict[str, float] | None = None,
        rotate_flaws: bool = False,
    ):
        self.seed, self.p_flaw, self.p_unparseable, self.p_refusal = seed, p_flaw, p_unparseable, p_refusal
        self.p_misread = p_misread  # share of MAIA questions one annotator keeps misreading
        self.p_contrary = p_contrary  # share of MAIA questions one annotator keeps contradicting the pool
        self.doomed, self.stubborn, self.flaw_rates = doomed, stubborn, flaw_rates or {}
        self.rotate_flaws = rotate_flaws
        self.counts: Counter[tuple[str, str]] = Counter()
        self._fates: dict[tuple[str, str], dict[str, str]] = {}  # (fate, budget key) -> item anchors
        self._lock = threading.Lock()
        self._turns: Counter[str] = Counter()

    def _fate(self, name: str, body: dict[str, Any]) -> str | None:
        """``doomed`` / ``stubborn`` when this request's item is one of the scripted ones of its prompt."""
        anchor = _anchor(body)
        with self._lock:
            for kind, want in (("doomed", self.doomed), ("stubborn", self.stubborn)):
                key, n = _budget(want, name)
                fates = self._fates.setdefault((kind, key), {})
                if anchor in fates:
                    return kind
                if len(fates) < n and not any(anchor in f for f in self._fates.values()):
                    fates[anchor] = kind
                    return kind
            self._fates.setdefault(("", name), {})[anchor] = ""
            return None

    # -- entry point -------------------------------------------------------------------
    def __call__(self, body: dict[str, Any]) -> Any:
        name, schema = _schema(body)
        text = message_text(body)
        # the request's own seed / temperature take part: repeated trials of one prompt differ
        rng = _rng(self.seed, name, body.get("model"), body.get("messages"), body.get("seed"), body.get("temperature"))
        if name is None and not (body.get("response_format") or {}).get("type"):
            return self._count(name or "text", "good", Reply.text(self._free_text(text, rng)))
        roll = rng.random()
        judge = name in ("nli", "blind_solver", "maia_consistency") or (name or "").startswith("eval_")
        # scripted fates apply to any prompt they name (judges included: a doomed check call fails closed)
        fate = None if name is None else self._fate(name, body)
        if fate == "doomed":
            return self._count(name, "doomed", Reply.text("I'm sorry, but I can't help with that request."))
        if not judge and not fate and roll < self.p_unparseable:
            return self._count(name, "unparseable", Reply.text("Sure! Here is the JSON you asked for: {answer: "))
        if not judge and not fate and roll < self.p_unparseable + self.p_refusal:
            return self._count(name, "refusal", Reply.text("I'm sorry, but I can't help with that request."))
        flaw = fate == "stubborn" or (not judge and rng.random() < self.flaw_rates.get(name, self.p_flaw))
        handler = getattr(self, "_" + (name or "").replace("-", "_"), None)
        if name and name.startswith("maia_foil_") and name != "maia_foil_structural":
            handler = self._maia_foil
        if handler is None:
            return self._count(name, "generic", generic(schema, rng))
        out = handler(text, body, rng, flaw)
        return self._count(name, "flaw" if flaw else "good", out)

    def _kind(self, name: str, kinds: list[str], rng: random.Random) -> str:
        """Which of a prompt's flaw kinds: seeded per request, or (``rotate_flaws``) taking turns,
        so a few flaws already show every kind (then the reply depends on the order of requests)."""
        if not self.rotate_flaws:
            return rng.choice(kinds)
        with self._lock:
            self._turns[name] += 1
            return kinds[(self._turns[name] - 1) % len(kinds)]

    def _count(self, name: str | None, mode: str, reply: Any) -> Any:
        self.counts[(name or "?", mode)] += 1
        return reply

    def _free_text(self, text: str, rng: random.Random) -> str:
        letters = re.findall(r"^\(?([A-F])[\)\.] ", text, re.M)
        if letters:
            return f"Answer: ({rng.choice(sorted(set(letters)))})"
        return "The image shows " + _sentence(rng).lower()

    # -- II-Bench ----------------------------------------------------------------------
    def _iibench_implication(self, text, body, rng, flaw):
        keep = not flaw
        return {
            "has_implication": keep,
            "implication": f"Time spent on {rng.choice(WORDS)}s is quietly wasted." if keep else "",
            "reason": "the scene turns an everyday object into a comment on modern life"
            if keep
            else "a plain photograph with nothing implied beyond what it shows",
        }

    def _iibench_labels(self, text, body, rng, flaw):
        expl = (
            "The image uses a "
            + rng.choice(WORDS)
            + " to stand for how people "
            + rng.choice(VERBS)
            + " their days away; the contrast between the calm scene and the hidden cost makes the point."
        )
        return {
            "image_type": rng.choice(["meme", "poster", "illustration", "single-panel comic"]),
            "domain": rng.choice(["life", "society", "psychology"]),
            "emotion": rng.choice(["negative", "neutral"]),
            "rhetoric": ["metaphor"] if flaw else ["metaphor", "contrast"],
            "difficulty": "middle",
            "explanation": expl,
        }

    def _iibench_questions(self, text, body, rng, flaw):
        m = re.search(r"Write (\d+) question", text)
        n = int(m.group(1)) if m else 1
        qs = []
        for k in range(max(1, min(3, n))):
            w = rng.sample(WORDS, 8)
            correct = f"Modern routines let the {w[0]} quietly consume what matters most."
            distractors = [
                f"The {w[1]} is simply decoration for the room.",
                f"Everyone should buy a new {w[2]}.",
                f"The artist dislikes the colour of the {w[3]}.",
                f"A {w[4]} is more useful than a {w[5]}.",
                f"The picture celebrates the craft of making {w[6]}s.",
            ]
            if flaw and k == 0:  # duplicated options: a distractor restating the answer
                distractors[0] = correct.lower().rstrip(".") + "!"
            qs.append(
                {
                    "question": f"What does the {w[7]} in the image imply (v{rng.randint(1, 999)})?",
                    "correct_answer": correct,
                    "distractors": distractors,
                    "nuance": "theme",
                }
            )
        return {"questions": qs}

    def _iibench_distractor_judge(self, text, body, rng, flaw):
        n = len(re.findall(r"^\s*(?:Question\s*)?\d+[\.\):]", text, re.M)) or 1
        kind = (
            self._kind("iibench_distractor_judge", ["also_correct", "implausible", "unsupported"], rng) if flaw else ""
        )
        out = []
        for i in range(1, min(3, n) + 1):
            ds = [
                {
                    "distractor": d,
                    "plausible": not (kind == "implausible" and i == 1 and d == 2),
                    "also_correct": kind == "also_correct" and i == 1 and d == 3,
                    "reason": "a reading the image does not support",
                }
                for d in range(1, 6)
            ]
            supported = not (kind == "unsupported" and i == 1)
            out.append(
                {
                    "index": i,
                    "answer_supported": supported,
                    "answer_reason": "matches the implication" if supported else "the image implies something else",
                    "distractors": ds,
                }
            )
        return {"questions": out}

    # -- MAIA --------------------------------------------------------------------------
    def _maia_questions(self, text, body, rng, flaw):
        if _italian(text):
            a, b = rng.sample(WORDS_IT, 2)
            kind = self._kind("maia_questions", ["yes_no", "short", "audio", "same_focus"], rng) if flaw else ""
            if kind == "yes_no":  # no interrogative word: the recipe rejects each of these
                return {"question_a": f"La persona tiene in mano {a}?", "question_b": f"Dove si trova {b}?"}
            if kind == "short":
                return {"question_a": "Perché, poi?", "question_b": f"Che cosa succede a {b} dopo lo spostamento?"}
            if kind == "audio":
                return {"question_a": f"Che cosa dice la persona di {a}?", "question_b": f"Dove si trova {b}?"}
            if kind == "same_focus":
                q = f"Dove si trova {a} rispetto alla persona durante il video?"
                return {"question_a": q, "question_b": f"Dove si trova {a} rispetto alla persona in tutto il video?"}
            return {
                "question_a": f"Dove si trova {a} rispetto alla persona durante il video?",
                "question_b": f"Che cosa succede a {b} dopo che qualcuno si sposta?",
            }
        a, b = rng.sample(WORDS, 2)
        kind = self._kind("maia_questions", ["yes_no", "short", "audio", "same_focus"], rng) if flaw else ""
        if kind == "yes_no":  # the recipe rejects each of these
            return {"question_a": f"Is the person holding the {a}?", "question_b": f"Where is the {b} placed?"}
        if kind == "short":
            return {"question_a": "Why, though?", "question_b": f"What happens to the {b} after the person moves?"}
        if kind == "audio":
            return {"question_a": f"What does the person say about the {a}?", "question_b": f"Where is the {b} placed?"}
        if kind == "same_focus":  # the second question asks about the first one's entities again
            q = f"Where is the {a} relative to the person during the video?"
            return {"question_a": q, "question_b": f"Where is the {a} relative to the person during the whole video?"}
        return {
            "question_a": f"Where is the {a} relative to the person during the video?",
            "question_b": f"What happens to the {b} after the person moves?",
        }

    def _maia_answers(self, text, body, rng, flaw):
        # one annotator per request (its persona and seed in the request): one answer, never the pool.
        # For a share p_misread of the questions the last annotator misread the question and keeps
        # answering off topic after feedback: the recipe drops the answer and rejects the pool whole.
        it = _italian(text)
        words, moods = (WORDS_IT, MOODS_IT) if it else (WORDS, MOODS)
        q = _field(_first_user(body), "Domanda:" if it else "Question:")
        if body.get("seed") == 7 and _rng(self.seed, "misread", q).random() < self.p_misread:
            return {"answer": MISREAD_IT if it else MISREAD}
        if body.get("seed") == 6 and _rng(self.seed, "contrary", q).random() < self.p_contrary:
            return {"answer": CONTRARY_IT if it else CONTRARY}
        if flaw and rng.random() < 0.5:  # the stock phrase several annotators fall back on: equal strings
            return {"answer": "Vicino al tavolo, calmo." if it else "Next to the table, calm."}
        if flaw:  # an answer to another question: the consistency judge scores it 0, it is regenerated
            return {"answer": f"{OFF_TOPIC_IT if it else OFF_TOPIC} {rng.choice(words)}."}
        return {
            "answer": rng.choice(ANSWER_FORMS_IT if it else ANSWER_FORMS).format(
                w=rng.choice(words), m=rng.choice(moods)
            )
        }

    def _maia_consistency(self, text, body, rng, flaw):
        a = _field(text, "A:")
        off = MISREAD in a or MISREAD_IT in a or a.startswith((OFF_TOPIC, OFF_TOPIC_IT))
        return {"score": 0 if off else rng.choice([1, 1, 1, 2])}

    def _maia_pool_contradiction(self, text, body, rng, flaw):
        # a contrary answer in the listing is named every time (its annotator keeps it: the pool is
        # rejected); otherwise a flawed verdict names two answers, which regeneration resolves
        contrary = [
            int(m.group(1))
            for m in re.finditer(r"^A(\d+):\s*(.*)$", text, re.M)
            if m.group(2).strip() in (CONTRARY, CONTRARY_IT)
        ]
        if contrary:
            return {"contradiction": True, "conflicting": contrary}
        return {"contradiction": flaw, "conflicting": [1, 2] if flaw else []}

    def _maia_rephrase_equal(self, text, body, rng, flaw):
        if _italian(text):
            return {"text": " ".join(rng.sample(WORDS_IT, 2)).capitalize() + " compaiono insieme."}
        return {"text": " ".join(rng.sample(WORDS + VERBS, 4)).capitalize() + "."}

    _maia_rephrase_overlap = _maia_rephrase_equal

    def _maia_statement(self, text, body, rng, flaw):
        a = _field(text, "A:")
        if _italian(text):
            return {"statement": f"Nel video, {a[0].lower() + a[1:] if a else 'la persona aspetta'}".rstrip(".") + "."}
        return {"statement": f"In the video, {a[0].lower() + a[1:] if a else 'the person waits'}".rstrip(".") + "."}

    def _maia_foil(self, text, body, rng, flaw):
        cap = _field(_first_user(body), "C:")
        italian = _italian(text)
        words = cap.rstrip(".").split() or ["something", "happens"]
        if flaw:  # an entailed "foil": the caption itself, lightly reworded
            if italian:
                return {"foil": cap.replace("Nel video, ", "In questo video, ") or cap}
            return {"foil": cap.replace("In the video, ", "In this video, ") or cap}
        i = rng.randrange(len(words))
        pool = [w.split("'")[-1].split()[-1] for w in WORDS_IT] if italian else WORDS
        elided = words[i].rsplit("'", 1)[0] + "'" if italian and "'" in words[i] else ""  # keep "l'" / "dell'"
        words[i] = elided + rng.choice([w for w in pool if w != words[i]])
        return {"foil": " ".join(words) + "."}

    def _maia_foil_structural(self, text, body, rng, flaw):
        cap, foil = _field(text, "C:"), _field(text, "F:")
        ok = bool(foil) and foil.strip(". ").lower() != cap.strip(". ").lower()
        return {"valid": ok, "reason": "a minimal edit that changes one detail" if ok else "no edit"}

    def _nli(self, text, body, rng, flaw):
        s1, s2 = _field(text, "S1:"), _field(text, "S2:")
        norm = [
            re.sub(r"\W+", " ", s)
            .lower()
            .replace("this video", "the video")
            .replace("in questo video", "nel video")
            .strip()
            for s in (s1, s2)
        ]
        return {"label": "entailment" if norm[0] == norm[1] else "contradiction"}

    # -- VAGUE -------------------------------------------------------------------------
    def _vague_direct(self, text, body, rng, flaw):
        objects = _list_field(text, "Objects extracted from the image") or ["cup"]
        persons = _list_field(text, "Person labels in the image:") or ["you"]
        obj, who, verb = rng.choice(objects), rng.choice(persons), rng.choice(VERBS)
        if flaw:
            obj = "unicorn"  # not in the frame's tags: the code check rejects it
        return {
            "direct_expression": f"{who.capitalize()}, please {verb} the {obj}.",
            "subject": who,
            "action": verb,
            "object": obj,
            "intention": f"The speaker wants {who} to {verb} the {obj}.",
        }

    def _vague_rate_direct(self, text, body, rng, flaw):
        return {
            "relevance": 2 if flaw else rng.choice([4, 5]),
            "solvability": rng.choice([4, 5]),
            "rationale": "clear and grounded in the image" if not flaw else "barely related to the scene",
        }

    def _vague_indirect(self, text, body, rng, flaw):
        direct = _field(text, "Direct expression:").strip('"') or "Please pass me that."
        obj = re.search(r"object=([^)]*)\)", text)
        obj = obj.group(1) if obj else "it"

        def cand(expr, sup):
            return {"expression": expr, "superficial_interpretation": sup}

        if flaw:  # too literal: every candidate restates the direct expression
            return {
                "sarcasm": cand(direct, "a plain request"),
                "humour": cand(direct, "a plain request"),
                "meme_idiom": cand(direct, "a plain request"),
            }
        return {
            "sarcasm": cand("Oh sure, I just love standing here doing nothing.", "the speaker enjoys waiting"),
            "humour": cand("I think the room is starting to miss some teamwork.", "the room has feelings"),
            "meme_idiom": cand("Many hands make light work, they say.", "a remark about hands"),
        }

    def _vague_select_indirect(self, text, body, rng, flaw):
        return {
            "selected": rng.randint(0, 2),
            "consistency": 4,
            "ambiguity": 4,
            "naturalness": 4,
            "rating": 2 if flaw else rng.choice([4, 5]),
            "rationale": "natural and indirect",
        }

    def _vague_fake_scene(self, text, body, rng, flaw):
        w = rng.choice(WORDS)
        return {
            "fake_caption": f"Two friends are arguing about a {w} at a bus stop.",
            "fake_scene_interpretation": f"The speaker wants the friend to stop talking about the {w}.",
        }

    def _vague_nonexistent(self, text, body, rng, flaw):
        present = [o.lower() for o in _list_field(text, "Objects present in the image")]
        original = re.search(r"object=([^)]*)\)", text)
        original = original.group(1).strip() if original else ""
        sub = rng.choice([w for w in WORDS if w not in present])
        kind = self._kind("vague_nonexistent", ["present", "same", "mentions"], rng) if flaw else ""
        if kind == "present" and present and present[0]:
            sub = present[0]
        elif kind == "same" and original:
            sub = original
        interp = f"The speaker wants someone to bring the {sub}."
        if kind == "mentions" and original:
            interp = f"The speaker wants someone to bring the {sub} instead of the {original}."
        return {"substitute_object": sub, "ne_interpretation": interp}

    # -- Hummus ------------------------------------------------------------------------
    def _hummus_caption(self, text, body, rng, flaw):
        return {"caption": f"My {rng.choice(WORDS)} is a {rng.choice(WORDS)}."}

    def _hummus_annotate(self, text, body, rng, flaw):
        cap = _field(_first_user(body), "Caption:")
        words = re.findall(r"[A-Za-z]+", cap)
        # one reading per pair: a revision fixes the details, it does not change its mind
        verdict = _rng(self.seed, "hummus_verdict", cap).choice(["Yes", "Yes", "WIDLII", "No"])
        base = {
            "incongruities": ["the picture takes the caption literally"],
            "resolution": "the caption is figurative",
            "verdict": verdict,
            "metaphors": [],
            "regions": [],
            "caption_highlighted": "",
            "explanation": "",
            "devices": [],
            "discard_reason": "",
        }
        if verdict == "No" or not words:
            return base
        target = words[-1]
        box = [0.1, 0.2, 0.5, 0.4]
        if flaw:
            kind = self._kind("hummus_annotate", ["box", "metaphor", "span"], rng)
            box = [0.2, 0.4, 0.9, 0.8] if kind == "box" else box  # corner convention: leaves the image
            metaphor = f"{words[0].lower()} like {target.lower()}" if kind == "metaphor" else None
            highlighted = cap.replace(target, f"<i>{target.upper()}</i>", 1) if kind == "span" else None
        else:
            metaphor = highlighted = None
        return base | {
            "metaphors": [metaphor or f"{words[0].upper()} IS {target.upper()}"],
            "regions": [{"label": target.lower()[:20], "box": box}],
            "caption_highlighted": highlighted or cap[::-1].replace(target[::-1], f">i/<{target[::-1]}>i<", 1)[::-1],
            "explanation": f"Seeing a real {target.lower()} makes the figurative caption absurdly literal.",
        }

    # -- ViMU --------------------------------------------------------------------------
    def _vimu_annotate(self, text, body, rng, flaw):
        kind = self._kind("vimu_annotate", ["external", "ambiguous"], rng) if flaw else ""  # the recipe rejects either
        return {
            "literal_content": "A person talks to the camera in an office.",
            "intended_meaning": "The speaker mocks how meetings waste everyone's time.",
            "rhetoric_mechanisms": rng.sample(["Irony", "Exaggeration", "Contrast", "Deadpan"], 2),
            "social_value_signals": ["Fatalism or Cynicism"],
            "evidence": [
                {"source": "Visual frames", "cue": "the speaker rolls their eyes"},
                {"source": "On-screen text", "cue": "a caption reads MONDAY"},
            ],
            "target_subjects": [{"target": "office meetings", "kind": "institution_or_organization"}],
            "requires_external_context": kind == "external",
            "ambiguous": kind == "ambiguous",
        }

    def _vimu_generate_qa(self, text, body, rng, flaw):
        q = (
            "What is the sarcastic message of the video?"
            if flaw  # a hint word: the code check catches it
            else f"What does the speaker really think about the {rng.choice(['meeting', 'schedule', 'office'])}?"
        )
        return {
            "question": q,
            "answer": "That meetings waste time and nobody dares to say so.",
            "reference_points": ["meetings waste time", "the speaker's eye-roll contradicts the words"],
        }

    _vimu_refine_qa = _vimu_generate_qa

    def _vimu_validate_qa(self, text, body, rng, flaw):
        verdict = rng.choice(["major", "reject"]) if flaw else rng.choice(["pass", "pass", "minor"])
        return {
            "verdict": verdict,
            "hint_free": True,
            "requires_inference": True,
            "aligned": True,
            "answerable": verdict != "reject",
            "feedback": "fine"
            if verdict in ("pass", "minor")
            else "the question can be answered from the transcript alone; ask about the intent",
        }

    # -- gates -------------------------------------------------------------------------
    def _blind_solver(self, text, body, rng, flaw):
        letters = (_field(text, "Valid letters:").split(".")[0] or "A, B").replace(" ", "").split(",")
        return {"answer": rng.choice([x for x in letters if x]) or "A"}


def generic(
    schema: dict[str, Any] | None,
    rng: random.Random,
    root: dict[str, Any] | None = None,
    name: str = "value",
    depth: int = 0,
) -> Any:
    """A schema-valid value made of words (no stub marker): for prompts without a handler."""
    if not schema:
        return {"text": _sentence(rng)}
    root = root or schema
    if "$ref" in schema:
        node: Any = root
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        return generic(node, rng, root, name, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(list(schema["enum"]))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return generic(next(s for s in schema[key] if s.get("type") != "null"), rng, root, name, depth + 1)
    typ = schema.get("type")
    if isinstance(typ, list):
        typ = next(t for t in typ if t != "null")
    if typ == "object" or "properties" in schema:
        return {k: generic(v, rng, root, k, depth + 1) for k, v in schema.get("properties", {}).items()}
    if typ == "array":
        lo, hi = int(schema.get("minItems", 1)), schema.get("maxItems")
        n = max(lo, min(int(hi) if hi is not None else 3, 3))
        items = schema.get("items", {})
        if schema.get("uniqueItems") and "enum" in items:
            return rng.sample(list(items["enum"]), min(n, len(items["enum"])))
        return [generic(items, rng, root, name, depth + 1) for _ in range(n)]
    if typ == "integer":
        return rng.randint(int(schema.get("minimum", 0)), int(schema.get("maximum", 5)))
    if typ == "number":
        return round(rng.uniform(float(schema.get("minimum", 0)), float(schema.get("maximum", 1))), 3)
    if typ == "boolean":
        return rng.random() < 0.5
    s = _sentence(rng, 6)
    lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
    s = s + " more" * max(0, (lo - len(s) + 4) // 5)
    return s[: int(hi)] if hi is not None else s
