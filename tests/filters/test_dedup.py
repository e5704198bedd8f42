"""Near-duplicate grouping: real variants, deterministic representatives, clip sequences,
and equality with a brute-force pairwise reference."""

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from forge.media.dedup import (
    DedupParams,
    aligned_matches,
    components,
    find_duplicates,
    near_duplicate_pairs,
    pairs_within,
    plan_mih,
)
from forge.media.hashing import hamming, hash_image


def hash_rows(media, specs):
    """specs: (frame_id, media name, source, extra dict) → frame_hashes-like rows."""
    rows = []
    for fid, name, source, extra in specs:
        h = hash_image(media[name])
        rows.append(
            {
                "frame_id": fid,
                "batch": f"{source}-0000",
                "source": source,
                "item_id": extra.get("item", fid),
                "clip_id": extra.get("clip"),
                "kind": "clip_frame" if extra.get("clip") else "image",
                "frame_index": extra.get("index", 0),
                "width": h.width,
                "height": h.height,
                "phash_int": h.phash_int,
                "dhash_int": h.dhash_int,
            }
        )
    return pd.DataFrame(rows)


def brute_pairs(ph, dh, params):
    """Reference: every pair compared (numpy broadcasting over the full n x n matrix)."""
    dp = hamming(ph[:, None], ph[None, :])
    dd = hamming(dh[:, None], dh[None, :])
    okp, okd = dp <= params.threshold, dd <= params.t_dhash
    ok = {"both": okp & okd, "either": okp | okd, "phash": okp, "dhash": okd}[params.rule]
    i, j = np.nonzero(np.triu(ok, 1))
    return set(zip(i.tolist(), j.tolist()))


def groups_of(labels):
    out = {}
    for k, lab in enumerate(labels):
        out.setdefault(lab, set()).add(k)
    return {frozenset(g) for g in out.values()}


def planted(rng, n, n_groups, max_flips):
    """Random 64-bit hashes with planted families of near-duplicates (both hashes)."""
    ph = rng.integers(-(1 << 63), (1 << 63) - 1, size=n, dtype=np.int64)
    dh = rng.integers(-(1 << 63), (1 << 63) - 1, size=n, dtype=np.int64)
    for _ in range(n_groups):
        src, size = rng.integers(0, n), rng.integers(2, 6)
        for dst in rng.choice(n, size=size, replace=False):
            fp = sum(1 << int(b) for b in rng.choice(64, size=rng.integers(0, max_flips + 1), replace=False))
            fd = sum(1 << int(b) for b in rng.choice(64, size=rng.integers(0, max_flips + 1), replace=False))
            ph[dst] = np.int64(np.uint64(ph[src].view(np.uint64) ^ np.uint64(fp)).view(np.int64))
            dh[dst] = np.int64(np.uint64(dh[src].view(np.uint64) ^ np.uint64(fd)).view(np.int64))
    return ph, dh


# -- real images -------------------------------------------------------------------------------

VARIANTS = ["resized", "jpeg", "crop2", "watermark"]


def test_variants_of_one_photo_form_one_group_with_deterministic_representative(media):
    specs = [(f"img_astro_{v}", f"astronaut_{v}", "memes", {}) for v in VARIANTS]
    specs += [
        ("img_astro_orig", "astronaut", "memes", {}),
        ("img_coffee", "coffee", "memes", {}),
        ("img_hopper", "hopper", "memes", {}),
        ("img_page", "page", "memes", {}),
    ]
    df = hash_rows(media, specs)
    out = find_duplicates(df).set_index("frame_id")
    astro = [f"img_astro_{v}" for v in VARIANTS + ["orig"]]
    assert out.loc[astro, "group_id"].nunique() == 1
    assert (out.loc[astro, "group_size"] == 5).all()
    # most pixels wins; jpeg, orig and watermark are all 512x512 → smallest id
    assert set(out.loc[astro, "kept_frame_id"]) == {"img_astro_jpeg"}
    assert out.loc[astro, "is_kept"].sum() == 1 and out.at["img_astro_jpeg", "is_kept"]
    assert out.at["img_astro_jpeg", "distance"] == 0 and out.at["img_astro_orig", "distance"] == 0
    assert (out.loc[astro, "distance"] <= 16).all()
    for other in ("img_coffee", "img_hopper", "img_page"):
        assert out.at[other, "is_kept"] and out.at[other, "group_size"] == 1 and out.at[other, "kept_frame_id"] == other
    # same answer whatever order the rows come in
    again = find_duplicates(df.sample(frac=1, random_state=3)).set_index("frame_id")
    pd.testing.assert_frame_equal(out.sort_index(), again.sort_index())


def test_representative_prefers_resolution_then_source_priority(media):
    specs = [
        ("a_small", "coffee_resized", "alpha", {}),
        ("b_big", "coffee", "beta", {}),
        ("c_big", "coffee_watermark", "gamma", {}),
    ]
    df = hash_rows(media, specs)
    out = find_duplicates(df).set_index("frame_id")
    assert set(out["kept_frame_id"]) == {"b_big"}  # tie on pixels with c_big: sources alphabetical
    out = find_duplicates(df, DedupParams(source_priority=("gamma", "beta"))).set_index("frame_id")
    assert set(out["kept_frame_id"]) == {"c_big"}  # the listed source order wins the tie
    assert not out.at["a_small", "is_kept"]  # never the low-resolution copy


def test_cross_source_repost_is_grouped(media):
    specs = [
        ("img_orig_rocket", "rocket", "artists", {}),
        ("img_repost", "rocket_watermark", "reddit", {}),
        ("img_repost2", "rocket_jpeg", "twitter", {}),
        ("img_bus", "bus", "reddit", {}),
    ]
    out = find_duplicates(hash_rows(media, specs)).set_index("frame_id")
    assert out.loc[["img_repost", "img_repost2"], "kept_frame_id"].tolist() == ["img_orig_rocket"] * 2
    assert out.loc[["img_repost", "img_repost2"], "source"].tolist() == ["reddit", "twitter"]
    assert out.at["img_bus", "is_kept"]


def test_strict_rule_and_threshold_are_configurable(media):
    specs = [("o", "rocket", "s", {}), ("w", "rocket_watermark", "s", {})]
    df = hash_rows(media, specs)
    d = find_duplicates(df).set_index("frame_id")
    assert not d.at["w", "is_kept"]
    # the watermark moves pHash a lot on this small photo: pHash alone at 8 bits misses it
    p = find_duplicates(df, DedupParams(rule="phash", threshold=8)).set_index("frame_id")
    assert p["is_kept"].all() and (p["group_size"] == 1).all()
    z = find_duplicates(df, DedupParams(threshold=0, rule="both")).set_index("frame_id")
    assert z["is_kept"].all()


# -- clip sequences ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clip_frames(media, tmp_path_factory):
    """Clip A: 6 frames from different photos; clip B: the same video re-uploaded at half size
    and re-encoded (another item); clip C: a different video that shares one frame with A."""
    root = tmp_path_factory.mktemp("clips")
    names = ["astronaut", "coffee", "hopper", "bus", "chelsea", "rocket"]
    rows = []
    for k, n in enumerate(names):
        im = Image.open(media[n]).convert("RGB")
        a = root / f"a{k}.png"
        im.resize((640, 480)).save(a)
        b = root / f"b{k}.jpg"
        im.resize((320, 240)).save(b, quality=50)
        for clip, item, path in (("clip_a", "vid_a", a), ("clip_b", "vid_b", b)):
            rows.append((clip, item, k, path))
    others = ["page", "text", "coffee_crop2", "astronaut", "page", "text"]  # shares one frame with A
    for k, n in enumerate(others):
        c = root / f"c{k}.png"
        Image.open(media[n]).convert("RGB").resize((640, 480)).save(c)
        rows.append(("clip_c", "vid_c", k, c))
    out = []
    for clip, item, k, path in rows:
        h = hash_image(path)
        out.append(
            {
                "frame_id": f"{clip}_f{k:03d}",
                "batch": "vids-0000",
                "source": "vids",
                "item_id": item,
                "clip_id": clip,
                "kind": "clip_frame",
                "frame_index": k,
                "width": h.width,
                "height": h.height,
                "phash_int": h.phash_int,
                "dhash_int": h.dhash_int,
            }
        )
    return pd.DataFrame(out)


def test_reuploaded_video_found_by_frame_hash_sequence(clip_frames):
    out = find_duplicates(clip_frames).set_index("frame_id")
    assert (out["method"] == "clip").all()
    a = out[out["clip_id"] == "clip_a"]
    b = out[out["clip_id"] == "clip_b"]
    c = out[out["clip_id"] == "clip_c"]
    assert a["is_kept"].all() and (a["kept_clip_id"] == "clip_a").all()  # higher resolution copy kept
    assert not b["is_kept"].any() and (b["kept_clip_id"] == "clip_a").all() and (b["group_id"] == "clip_a").all()
    # each frame of the duplicate points at its own twin in the kept clip
    assert b["kept_frame_id"].tolist() == [f"clip_a_f{k:03d}" for k in range(6)]
    assert (b["group_size"] == 2).all()
    assert c["is_kept"].all() and (c["group_size"] == 1).all()  # one shared frame is not a re-upload


def test_shuffled_sequence_is_not_a_reupload(clip_frames):
    """Same frames in another order: the order-preserving alignment stays short."""
    df = clip_frames.copy()
    b = df["clip_id"] == "clip_b"
    df.loc[b, "frame_index"] = [3, 5, 1, 4, 0, 2]
    out = find_duplicates(df, DedupParams(clip_min_match=0.8)).set_index("frame_id")
    assert out["is_kept"].all()


def test_clips_of_the_same_video_only_compared_when_asked(clip_frames):
    df = clip_frames[clip_frames["clip_id"] != "clip_c"].copy()
    df["item_id"] = "vid_same"
    assert find_duplicates(df)["is_kept"].all()
    out = find_duplicates(df, DedupParams(clip_same_item=True))
    assert (~out["is_kept"]).sum() == 6


def test_aligned_matches_is_order_preserving():
    assert aligned_matches([0, 1, 2, 3], [0, 1, 2, 3]) == 4
    assert aligned_matches([0, 1, 2, 3], [3, 2, 1, 0]) == 1
    assert aligned_matches([0, 0, 0, 1, 2], [0, 1, 2, 1, 2]) == 3  # one a-frame can't match twice
    assert aligned_matches([], []) == 0


# -- exactness against brute force ---------------------------------------------------------------


@pytest.mark.parametrize("threshold", [0, 2, 5, 8, 10, 12])
def test_pairs_within_equals_brute_force(threshold):
    rng = np.random.default_rng(threshold)
    ph, _ = planted(rng, 2500, 400, max_flips=threshold + 3)
    i, j, d = pairs_within(ph, threshold)
    full = hamming(ph[:, None], ph[None, :])
    bi, bj = np.nonzero(np.triu(full <= threshold, 1))
    assert set(zip(i.tolist(), j.tolist())) == set(zip(bi.tolist(), bj.tolist()))
    assert (d == full[i, j]).all() and (d <= threshold).all()
    assert len(i) > 0


@pytest.mark.parametrize("rule", ["both", "either", "phash", "dhash"])
def test_grouping_equals_brute_force_reference(rule):
    rng = np.random.default_rng(7)
    n = 3000
    ph, dh = planted(rng, n, 500, max_flips=11)
    params = DedupParams(threshold=8, dhash_threshold=6, rule=rule)
    i, j = near_duplicate_pairs(ph, dh, params)
    ref = brute_pairs(ph, dh, params)
    assert set(zip(i.tolist(), j.tolist())) == ref and len(ref) > 100
    ri = np.array([p[0] for p in ref]), np.array([p[1] for p in ref])
    assert groups_of(components(n, i, j)) == groups_of(components(n, *ri))
    # and through the table: kept/twin consistent with those groups
    df = pd.DataFrame(
        {
            "frame_id": [f"f{k:05d}" for k in range(n)],
            "batch": "b",
            "source": "s",
            "item_id": [f"i{k}" for k in range(n)],
            "clip_id": None,
            "kind": "image",
            "frame_index": 0,
            "width": rng.integers(100, 200, n),
            "height": 100,
            "phash_int": ph,
            "dhash_int": dh,
        }
    )
    out = find_duplicates(df, params)
    want = groups_of(components(n, *ri))
    got = {frozenset(int(f[1:]) for f in g["frame_id"]) for _, g in out.groupby("group_id")}
    assert got == want
    assert (out.groupby("group_id")["is_kept"].sum() == 1).all()
    px = dict(zip(df["frame_id"], df["width"]))
    for _, g in out.groupby("group_id"):
        assert px[g["kept_frame_id"].iat[0]] == max(px[f] for f in g["frame_id"])


def test_plan_blocks_cover_64_bits():
    for n in (10, 1000, 100_000):
        for t in range(0, 15):
            plan = plan_mih(n, t)
            assert sum(w for _, w in plan.blocks) == 64
            assert len(plan.blocks) * (plan.radius + 1) > t  # pigeonhole holds


def test_group_check_flags_malformed_tables(media):
    from assets.ingest.filters import group_problems

    specs = [("o", "coffee", "s", {}), ("r", "coffee_resized", "s", {}), ("h", "hopper", "s", {})]
    good = find_duplicates(hash_rows(media, specs))
    assert group_problems(good) == []
    two_kept = good.assign(is_kept=True)
    assert any("exactly one kept" in p for p in group_problems(two_kept))
    dangling = good.copy()
    dangling.loc[dangling["frame_id"] == "r", "kept_frame_id"] = "h_missing"
    assert any("not kept" in p for p in group_problems(dangling))
