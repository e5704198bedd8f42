"""Label Studio labeling configurations generated from a benchmark's ``ReviewSpec``.

Three kinds of project per benchmark (docs/review.md):

* ``review``: the reviewer sees the media (clip player and/or image, the item's boxes drawn and
  editable when the spec says so), the question, the options with the gold marked, the
  statements and foils; answers accept / reject (with a reason from the spec's fixed list) /
  edit (corrected question, options, answer; a moved box);
* ``adjudication``: the same form plus the verdicts the reviewers disagreed on;
* ``human``: the blind form of the human baseline: media, question and options without the
  gold; the answer is an option letter, a free text or a box.

Tag and field names here are the contract with ``forge/review/verdicts.py``.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from forge.review.spec import Media, ReviewSpec

LETTERS = "ABCDEFGHIJ"
VERDICTS = ("accept", "reject", "edit")
BOX_LABEL = "region"
FIELD_TAGS = {"question": "corrected_question", "options": "corrected_options", "answer": "corrected_answer"}


def _media(spec: ReviewSpec) -> list[str]:
    out = []
    if spec.media == Media.VIDEO:
        out.append('  <Header value="Clip"/>')
        out.append('  <Video name="video" value="$video"/>')
        out.append('  <Header value="Frame the model sees"/>')
    out.append('  <Image name="image" value="$image" zoom="true" zoomControl="true" maxWidth="720px"/>')
    if spec.boxes:
        out.append(f'  <RectangleLabels name="box" toName="image"><Label value="{BOX_LABEL}"/></RectangleLabels>')
    return out


def _item_text(show_gold: bool) -> list[str]:
    return [
        '  <Header value="$heading"/>',
        '  <Text name="question" value="$question"/>',
        '  <Header value="Options"/>',
        '  <Text name="options" value="$options_text"/>',
        *(['  <Header value="Gold answer"/>', '  <Text name="answer" value="$answer_text"/>'] if show_gold else []),
        '  <Header value="Statements, foils and other context"/>',
        '  <Text name="context" value="$context_text"/>',
    ]


def _verdict_controls(spec: ReviewSpec) -> list[str]:
    out = ['  <Header value="Your verdict"/>']
    out.append('  <Choices name="verdict" toName="question" choice="single" required="true" showInline="true">')
    out += [f"    <Choice value={quoteattr(v)}/>" for v in VERDICTS]
    out.append("  </Choices>")
    out.append('  <View visibleWhen="choice-selected" whenTagName="verdict" whenChoiceValue="reject">')
    out.append('    <Header value="Reason"/>')
    out.append('    <Choices name="reason" toName="question" choice="single" showInline="true">')
    out += [f"      <Choice value={quoteattr(r)}/>" for r in spec.reasons]
    out.append("    </Choices>")
    out.append("  </View>")
    text_fields = [f for f in spec.editable if f in FIELD_TAGS]
    if text_fields:
        out.append('  <View visibleWhen="choice-selected" whenTagName="verdict" whenChoiceValue="edit">')
        out.append('    <Header value="Corrections (leave a field empty to keep it; options one per line)"/>')
        for f in text_fields:
            out.append(
                f'    <TextArea name="{FIELD_TAGS[f]}" toName="question" maxSubmissions="1" editable="true" '
                f'placeholder="corrected {f}"/>'
            )
        out.append("  </View>")
    return out


def review_config(spec: ReviewSpec, adjudication: bool = False) -> str:
    lines = ["<View>", *_media(spec), *_item_text(spec.show_gold)]
    if adjudication:
        lines += ['  <Header value="Verdicts so far (they disagree)"/>', '  <Text name="prior" value="$prior_text"/>']
    lines += _verdict_controls(spec)
    lines.append("</View>")
    return "\n".join(lines)


def human_config(spec: ReviewSpec, max_options: int = 6) -> str:
    """Blind answering: no gold, no statements marked true or false."""
    letters = LETTERS[: max(2, min(max_options, len(LETTERS)))]
    lines = ["<View>", *_media(spec)]
    lines += [
        '  <Header value="$heading"/>',
        '  <Text name="question" value="$question"/>',
        '  <Header value="Options"/>',
        '  <Text name="options" value="$options_text"/>',
        '  <Header value="$instruction"/>',
        '  <Choices name="choice" toName="question" choice="multiple" showInline="true">',
        *[f'    <Choice value="{x}"/>' for x in letters],
        "  </Choices>",
        '  <TextArea name="answer_text" toName="question" maxSubmissions="1" editable="true" placeholder="your answer"/>',
        "</View>",
    ]
    return "\n".join(lines)
