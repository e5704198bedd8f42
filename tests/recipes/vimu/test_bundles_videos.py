"""The clip bundle finds the channel through the `videos` contract's key (video_id)."""

import pandas as pd

from assets.recipes.vimu.logic.annotate import clip_bundles


def test_channel_from_videos_keyed_by_video_id():
    ev = pd.DataFrame(
        [
            {
                "unit": "clip",
                "unit_id": "c1",
                "batch": "b",
                "source": "s",
                "transcript": "hi",
                "transcript_status": "ok",
                "ocr_text": "",
                "tags": ["cat"],
                "persons": 1,
            }
        ]
    )
    fr = pd.DataFrame(
        [
            {
                "frame_id": "f1",
                "clip_id": "c1",
                "item_id": "v1",
                "kind": "clip_frame",
                "frame_index": 0,
                "path": "media/f1.jpg",
            }
        ]
    )
    videos = pd.DataFrame([{"video_id": "v1", "channel": "chan", "uploader": "up"}])
    [b] = clip_bundles(ev, fr, None, videos)
    assert b.item_id == "v1" and b.channel == "chan"
