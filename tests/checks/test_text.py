"""Text statistics: tokenisation, MAIA lexical overlap, TTR, token edit distance, equal strings."""

import pytest

from forge.checks import text as T


def test_tokens_drop_punctuation_keep_contractions_and_hyphens():
    assert T.tokens("The pizza-maker doesn't  smile, ‘really’!") == ["the", "pizza-maker", "doesn't", "smile", "really"]
    assert T.content_tokens("The pizza is on a plate in 30 seconds") == ["pizza", "plate", "seconds"]


def test_lexical_overlap_is_jaccard_over_types():
    a, b = "the man eats pizza", "the woman eats pasta"
    # types: {the, man, eats, pizza} ∪ {the, woman, eats, pasta} = 6; shared {the, eats} = 2
    assert T.lexical_overlap(a, b) == pytest.approx(2 / 6)
    assert T.lexical_overlap(a, b, method="min") == pytest.approx(2 / 4)
    # content words only: {man, eats, pizza} vs {woman, eats, pasta} → 1 / 5
    assert T.lexical_overlap(a, b, content_only=True) == pytest.approx(1 / 5)
    assert T.lexical_overlap("", b) == 0.0
    assert T.lexical_overlap(a, a.upper()) == 1.0


def test_pool_overlap_mean_max_and_offenders():
    pool = ["The chef is focused", "The chef is focused today", "A tired cook yawns"]
    ov = T.pool_overlap(pool, threshold=0.5)
    assert ov.above == [(0, 1)]
    assert ov.max == pytest.approx(4 / 5)
    assert ov.mean == pytest.approx((4 / 5 + 0 + 0) / 3)
    assert ov.offenders() == [1]  # the later member of the pair is rephrased
    assert T.overlap_with_others(pool, 2) == 0.0


def test_offenders_cover_every_pair_above_threshold():
    pool = ["red car", "red car fast", "red car slow", "blue boat"]
    ov = T.pool_overlap(pool, 0.5)
    picks = ov.offenders()
    assert all(i in picks or j in picks for i, j in ov.above)
    assert len(picks) < 3


def test_ttr_all_tokens_and_content_words():
    pool = ["the dog runs", "the dog sleeps"]
    assert T.type_token_ratio(pool) == pytest.approx(4 / 6)
    assert T.type_token_ratio(pool, content_only=True) == pytest.approx(3 / 4)
    assert T.type_token_ratio([]) == 0.0


def test_token_edit_distance():
    ts = "After being taken out of the oven, the pizza is placed on a plate."
    fs = "After being taken out of the oven, the pizza is placed on the table."
    assert T.token_edit_distance(ts, fs) == 2
    assert T.token_edit_distance(ts, ts) == 0
    assert T.token_edit_distance("a b c", "") == 3


def test_equal_strings_ignore_case_space_and_final_punctuation():
    pool = ["There is no car.", "there is  no car", "There is no cars", "THERE IS NO CAR!"]
    assert T.equal_pairs(pool) == [(0, 1), (0, 3), (1, 3)]
    assert T.duplicate_indices(pool) == [1, 3]


def test_pool_stats_has_every_maia_figure():
    s = T.pool_stats(["a b c", "a b c", "x y z"])
    assert s["equal_pairs"] == 1 and s["pairs_over_threshold"] == 1 and s["n"] == 3
    assert set(s) >= {"overlap_mean", "overlap_mean_cw", "ttr", "ttr_cw", "overlap_max"}


def test_italian_elisions_split_and_function_words():
    assert T.tokens("L'uomo entra nell'acqua, c'è un po' di sole", "it") == [
        "l'",
        "uomo",
        "entra",
        "nell'",
        "acqua",
        "c'",
        "è",
        "un",
        "po",
        "di",
        "sole",
    ]
    assert T.content_tokens("L'uomo entra nell'acqua dell'altra riva", "it") == ["uomo", "entra", "acqua", "riva"]
    # English keeps contractions whole and does not know Italian articles
    assert T.tokens("L'uomo doesn't") == ["l'uomo", "doesn't"]
    assert T.content_tokens("il cane della donna") == ["il", "cane", "della", "donna"]
    assert T.content_tokens("il cane della donna", "it") == ["cane", "donna"]
    with pytest.raises(ValueError, match="no function-word list"):
        T.tokens("x", "xx")


def test_italian_pool_statistics_differ_from_english_ones():
    pool = ["L'uomo mangia la pizza", "La donna mangia la pasta", "Il bambino beve l'acqua"]
    it, en = T.pool_stats(pool, lang="it"), T.pool_stats(pool)
    # content words in Italian: {uomo, mangia, pizza}, {donna, mangia, pasta}, {bambino, beve, acqua}
    assert it["overlap_mean_cw"] == pytest.approx((1 / 5 + 0 + 0) / 3)
    assert it["ttr_cw"] == pytest.approx(8 / 9)
    assert en["ttr_cw"] != it["ttr_cw"]  # English keeps "la", "il", "l'uomo" as content words
    assert T.lexical_overlap("l'uomo", "uomo", lang="it") == pytest.approx(1 / 2)
    assert T.lexical_overlap("l'uomo", "uomo") == 0.0
