"""Release import at the published sizes and beyond: parse + side-by-side statistics.

    python perf/release_import.py [--scale 1]

Writes synthetic releases in the released formats to a temp folder (Hummus: ``scale`` × 2,500
pairs, 40 % Yes / WIDLII with boxes, spans, Title Case names; MAIA: ``scale`` × 480 questions
with 8-answer pools and 8 statement pairs each, Italian categories) with tiny media
(``require_media: false`` for MAIA, whose frame sampling is timed by frame_sampling.py), then
prints records/s for ``parse_release`` and the time of ``compare.side_by_side``.
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image

from assets.recipes.hummus.logic.release import parse_release as parse_hummus
from assets.recipes.maia.logic.release import parse_release as parse_maia
from forge.releases import compare
from forge.releases.config import ReleaseInfo

CATS = [
    "CausaleEsplicita",
    "Controfattuale",
    "ImplicitoParziale",
    "ImplicitoTot",
    "Incertezza",
    "OutofScope",
    "Pianificazione",
    "Sentiment",
    "SpazialeParziale",
    "SpazialeTotale",
    "TemporaleDurata",
    "TemporaleParziale",
]
WORDS = "uomo donna cane pizza forno tavolo strada piazza bicicletta caffè libro sole mare treno porta".split()


def hummus_release(d: Path, n: int) -> None:
    (d / "images").mkdir(parents=True)
    contests = max(1, n // 5)
    for c in range(contests):
        Image.new("RGB", (64, 48), (c % 255, 90, 120)).save(d / "images" / f"{c}.jpeg")
    ds = {}
    for i in range(n):
        cls = ["Yes", "WIDLII", "No", "No", "Discard"][i % 5]
        r = {
            "caption": f"Caption number {i} about the office and the sea.",
            "contest_number": i % contests,
            "met_class": cls,
        }
        if cls in ("Yes", "WIDLII"):
            r |= {
                "image_attributes": {"height": 48, "width": 64},
                "bboxes": [{"top": 4.0, "left": 5.0, "height": 20.0, "width": 30.0}],
                "bbox_labels": "desk",
                "caption_hl": f"Caption number {i} about the <u>office</u> and the sea.",
                "conceptual_metaphor": "Office Is Sea (Boss Is Shark)",
                "figures": "personification; pun",
                "explanation": " ".join(["word"] * 40),
            }
        ds[f"nyc-combi-{i}"] = r
    (d / "hummus_dataset.json").write_text(json.dumps(ds))


def maia_release(d: Path, n: int) -> None:
    d.mkdir(parents=True)
    gen, mc = [], []
    for i in range(n):
        cat = f"{CATS[i % 12]}_{'AB'[(i // 12) % 2]}"
        ws = [WORDS[(i + k) % len(WORDS)] for k in range(8)]
        gen.append(
            {
                "id": i,
                "video_id": f"v{i // 24}",
                "file_name": f"v{i // 24}.mp4",
                "question_category": cat,
                "question": f"Dove si trova l'{ws[0]} vicino al {ws[1]}?",
                **{
                    f"answer{k + 1}": f"L'{ws[k]} è vicino al {ws[(k + 3) % 8]} nella {ws[(k + 5) % 8]}."
                    for k in range(8)
                },
            }
        )
        for k in range(8):
            mc.append(
                {
                    "id": i,
                    "video_id": f"v{i // 24}",
                    "file_name": f"v{i // 24}.mp4",
                    "question_category": cat,
                    "pool_pos": k + 1,
                    "answer1": f"L'{ws[k]} è vicino al {ws[(k + 3) % 8]}.",
                    "answer2": f"L'{ws[k]} è lontano dal {ws[(k + 3) % 8]}.",
                    "target": 0,
                }
            )
    (d / "gen.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in gen))
    (d / "mc.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in mc))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        hummus_release(tmp / "hummus", 2500 * a.scale)
        maia_release(tmp / "maia", 480 * a.scale)
        for name, parse, info in (
            ("hummus", parse_hummus, ReleaseInfo("hummus", "h", tmp / "hummus", "1", "x", "en")),
            ("maia", parse_maia, ReleaseInfo("maia", "m", tmp / "maia", "1", "x", "it", {"require_media": False})),
        ):
            t0 = time.perf_counter()
            r = parse(info)
            dt = time.perf_counter() - t0
            t1 = time.perf_counter()
            table = compare.side_by_side(r.items, {"release:" + info.name: info.language})
            dt2 = time.perf_counter() - t1
            print(
                f"{name:7s} records {r.records:6d}  items {len(r.items):6d}  rejects {len(r.rejects):4d}  "
                f"parse {dt:6.2f} s ({r.records / dt:8.0f} records/s)  side_by_side {dt2:6.2f} s ({len(table)} figures)"
            )


if __name__ == "__main__":
    main()
