"""Language identification of generated text (forge.checks.language): Italian and English,
short texts left alone, and the refine checks where the language check speaks first."""

from forge.checks.language import after_language, detect, language_first, texts_of, wrong_language
from forge.llm.refine import Verdict

IT = [
    "Dove si trova la lanterna rispetto alla persona durante il video?",
    "Che cosa succede al porto dopo che qualcuno si sposta?",
    "Nel video il cuoco resta accanto al forno e sembra stanco.",
    "Non c'è nessuna torta nel video.",
]
EN = [
    "Where is the lantern relative to the person during the video?",
    "What happens to the harbor after someone moves?",
    "In the video the chef stays next to the oven and looks tired.",
    "There is no cake in the video.",
]


def test_detects_italian_and_english():
    for text in IT:
        assert detect(text).language == "it", text
        assert wrong_language(text, "it") is None
        found = wrong_language(text, "en")
        assert found is not None and found.language == "it" and found.confidence >= 0.9, text
    for text in EN:
        assert detect(text).language == "en", text
        assert wrong_language(text, "en") is None
        assert wrong_language(text, "it").language == "en", text


def test_short_or_empty_text_is_not_judged():
    assert wrong_language("", "it") is None
    assert wrong_language("OK.", "it") is None  # too few words to tell
    assert wrong_language("Pizza margherita", "en") is None
    assert wrong_language("Dove? Qui.", "en", min_words=3) is None


def test_language_check_comes_first_and_gates_the_others():
    calls = []

    def form_check(req, data):
        calls.append(data["q"])
        return Verdict("major", "not a question", "form")

    lang, gated = language_first("it", ["q"], [form_check])
    v = lang(None, {"q": EN[0]})
    assert v.label == "major" and v.source == "wrong_language" and "italiano" in v.feedback
    assert gated(None, {"q": EN[0]}) is None and calls == []  # never judged in the wrong language
    assert lang(None, {"q": IT[0]}) is None
    assert gated(None, {"q": IT[0]}).source == "form" and calls == [IT[0]]
    assert after_language("en", ["q"], form_check).__name__ == "form_check"
    en_lang = language_first("en", ["q"], [])[0]
    assert "English" in en_lang(None, {"q": IT[1]}).feedback and en_lang(None, {"q": EN[1]}) is None


def test_texts_of_joins_strings_and_lists():
    assert texts_of({"a": "uno due", "b": ["tre", 4], "c": None}, ["a", "b", "c", "d"]) == "uno due\ntre"


def test_stub_placeholders_have_no_language():
    from forge.llm.stub import STUB_MARK

    assert wrong_language(f"{STUB_MARK} lanterna prato bosco porto isola favola", "en") is None
