import pytest

from forge.media.clips import (
    ClipSettings,
    attach_transcripts,
    cut_clip,
    measure_signals,
    most_engaging,
    parse_subtitles,
    plan_clips,
    segment_bounds,
    transcript_for,
)
from forge.media.download import ffmpeg_exe, probe_video


@pytest.fixture(scope="module")
def scene_signals(corpus):
    return measure_signals(corpus.files["scenes"], True, ffmpeg_exe())


def test_signals_see_cuts_motion_and_loudness(scene_signals):
    s = scene_signals
    half = s.n // 2
    assert s.cuts[half:].sum() >= 6 > s.cuts[:half].sum()  # a cut every 2 s in the busy half
    assert s.motion[half:].mean() > s.motion[1:half].mean()
    assert s.audio_db[half:].mean() > s.audio_db[:half].mean() + 15


def test_engaging_window_is_in_the_busy_half(scene_signals):
    best, cands = most_engaging(scene_signals, 36.0, 10.0, 1.0)
    assert best.start_s >= 18.0 and best.end_s - best.start_s == 10.0
    assert best.score == max(c.score for c in cands) and 0.0 <= min(c.score for c in cands)
    calm = [c for c in cands if c.end_s <= 18.0]
    assert all(c.score < best.score for c in calm)


def test_segments_and_engaging_plan(scene_signals):
    assert segment_bounds(36, 30, 5) == [(0.0, 30), (30, 36)]
    assert segment_bounds(32, 30, 5) == [(0.0, 30)]  # a 2 s tail is dropped
    assert segment_bounds(10, 30, 5) == [(0.0, 10)]
    plans = plan_clips("v", 36.0, scene_signals, ClipSettings(segment_s=10))
    assert [p.kind for p in plans] == ["segment"] * 4 + ["engaging"]
    assert sum(p.is_engaging for p in plans) == 1 and plans[-1].start_s >= 18


def test_short_video_flags_its_only_segment(corpus):
    sig = measure_signals(corpus.files["bikes"], False, ffmpeg_exe())
    plans = plan_clips("b", 10.0, sig, ClipSettings())
    assert len(plans) == 1 and plans[0].is_engaging and plans[0].window.audio_rms_db is None


def test_cut_clip_keeps_requested_window(corpus, tmp_path):
    dst = tmp_path / "c.mp4"
    cut_clip(ffmpeg_exe(), corpus.files["scenes"], dst, 20.0, 28.0, True)
    p = probe_video(dst)
    assert abs(p.duration_s - 8.0) < 0.3 and p.has_audio


def test_transcripts_follow_the_clip_window(corpus, scene_signals):
    cues = parse_subtitles(corpus.files["scenes_vtt"])
    assert len(cues) == 6 and cues[0].start_s == 0.5
    assert transcript_for(cues, 18.0, 24.0) == "Then the match starts!"
    assert transcript_for(cues, 36.0, 40.0) is None
    plans = plan_clips("v", 36.0, scene_signals, ClipSettings(segment_s=12, engaging=False))
    attach_transcripts(plans, corpus.files["scenes_vtt"], "subtitles")
    assert [p.transcript_status for p in plans] == ["subtitles"] * 3
    assert plans[2].transcript.startswith("Everyone runs") or "GOAL" in plans[2].transcript
    attach_transcripts(plans, None, None)
    assert {p.transcript_status for p in plans} == {"none: no subtitle track"} and plans[0].transcript is None


def test_srt_parsing(tmp_path):
    f = tmp_path / "a.srt"
    f.write_text("1\n00:00:01,000 --> 00:00:02,500\n<i>Hello</i> there\n\n2\n00:00:03,000 --> 00:00:04,000\nBye\n")
    cues = parse_subtitles(f)
    assert [(c.start_s, c.end_s, c.text) for c in cues] == [(1.0, 2.5, "Hello there"), (3.0, 4.0, "Bye")]
