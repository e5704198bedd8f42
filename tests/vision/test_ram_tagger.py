"""RAM tagging logic (``RamTagger``, ``run_ram``) on the ``ram`` test double: tags are the classes
whose sigmoid score passes the model's per-class threshold, minus the deleted ones, highest score
first; undecodable frames are rejects, not lost rows."""

from __future__ import annotations

import pandas as pd
import torch
from PIL import Image

from forge.vision.pipeline import DecodeOptions, run_ram
from forge.vision.tagger import TAG_COLUMNS, RamTagger


def test_tags_pass_the_per_class_thresholds_minus_deleted_ones(ram_double, photos):
    from forge.vision.images import load_image

    tagger = RamTagger(str(ram_double), image_size=32, device="cpu", batch_size=2)
    assert tagger.model_version.startswith("ram-swin_l@") and len(tagger.model_version.split("@")[1]) == 12
    images = [load_image(p) for p in photos.values()]
    got = tagger.tag(images)
    assert len(got) == len(images) and any(got)
    # the rule, recomputed from the model's own logits
    x = torch.stack([tagger._transform(Image.fromarray(im.rgb)) for im in images])
    with torch.inference_mode():
        probs = torch.sigmoid(tagger._logits(x).float()).numpy()
    thr = tagger.model.class_threshold.numpy()
    deleted = {str(tagger.tag_list[j]) for j in tagger.model.delete_tag_index}
    assert any(probs[b, j] > thr[j] for b in range(len(images)) for j in tagger.model.delete_tag_index)  # exercised
    assert any(0 < len(tags) < len(thr) - 1 for tags in got)  # thresholds cut inside an image's classes
    for b, tags in enumerate(got):
        want = {str(tagger.tag_list[j]) for j in range(len(thr)) if probs[b, j] > thr[j]} - deleted
        assert {t for t, _ in tags} == want
        scores = [s for _, s in tags]
        assert scores == sorted(scores, reverse=True)
    # the batch size does not change the tags
    assert RamTagger(str(ram_double), image_size=32, device="cpu", batch_size=3).tag(images) == got


def test_run_ram_rows_and_rejects(ram_double, photos, tmp_path):
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8 not a jpeg")
    for name, p in photos.items():
        (tmp_path / f"{name}{p.suffix}").write_bytes(p.read_bytes())
    frames = pd.DataFrame(
        [{"frame_id": n, "batch": "b-0", "path": f"{n}{p.suffix}"} for n, p in photos.items()]
        + [{"frame_id": "broken", "batch": "b-0", "path": "broken.jpg"}]
    )
    rejects = []
    tagger = RamTagger(str(ram_double), image_size=32, device="cpu", batch_size=2)
    df = run_ram(frames, tmp_path, tagger, lambda *a: rejects.append(a), DecodeOptions(workers=1))
    assert list(df.columns) == TAG_COLUMNS and len(df) > 0
    assert set(df["frame_id"]) <= set(photos) and (df["backend"] == "ram").all() and (df["count"] == 1).all()
    assert set(df["model_version"]) == {tagger.model_version}
    assert [r[0] for r in rejects] == ["broken"]
