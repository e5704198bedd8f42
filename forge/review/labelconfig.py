"""Label Studio labeling configurations generated from a benchmark's ``ReviewSpec``.

Three kinds of project per benchmark (docs/review.md):

* ``review``: the reviewer sees the media (clip player and/or image, the item's boxes drawn and
  editable when the spec says so), the question, the options with the gold marked, the
  statements and foils; answers accept / reject (with a required reason from the spec's fixed
  list, each with its help text and its consequence, e.g. "then: drops the clip", and an optional
  note) / edit (corrected question, options one per line, answer; a moved box);
* ``adjudication``: the same form plus the verdicts the reviewers disagreed on;
* ``human``: the blind form of the human baseline: only what the model under test sees (media,
  question, options); no gold, option types, category, split, item id or labels. The answer is
  an option letter, a free text or a drawn box.

Hotkeys are fixed, the same in every benchmark: accept ``a``, reject ``x``, edit ``e``, the
reasons ``1``-``9`` in the spec's order, the box label ``b``; the blind form's letters ``1``-``9``;
a unit's member blocks take none (``NO_HOTKEY``), however many members it has.
Label Studio 1.23.2's TextArea has no ``maxlength``: every typed field names its limit
(``ReviewSpec.limits``) in its placeholder, the tool counts the characters under it, and reading
the annotation refuses a longer value (``forge/review/verdicts.py``).
Tag and field names here are the contract with ``forge/review/verdicts.py``.
"""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

from forge.benchmarks.review_spec import Media, MemberAnswers, ReviewSpec

LETTERS = "ABCDEFGHIJ"
VERDICTS = ("accept", "reject", "edit")
# "r" would also pick Label Studio's rectangle tool on a box benchmark's image: reject is "x"
VERDICT_HOTKEYS = {"accept": "a", "reject": "x", "edit": "e"}
BOX_LABEL = "region"
BOX_HOTKEY = "b"
# Label Studio 1.23.2 gives every choice without a hotkey the next free key of
# "1234567890qwetasdfgzxcvbyiopjklnm" (Annotation.setupHotKeys): a unit's member blocks (9 members
# x 8 choices in a MAIA pool) would get scattered letters until they run out. Member blocks take no
# key: this one is truthy, so nothing is assigned, and no keyboard sends it (key code 8211).
NO_HOTKEY = "\u2013"
FIELD_TAGS = {"question": "corrected_question", "options": "corrected_options", "answer": "corrected_answer"}
REASON_NOTE = "reason_note"  # the optional note with a reject (read by forge/review/verdicts.py)
FIELD_ROWS = {"question": 3, "options": 6, "answer": 2}
# What each of the default reject reasons means (forge/benchmarks/review_spec.py DEFAULT_REASONS), shown as the
# choice's hint and as a line under the reasons; a benchmark's own reason shows its name only.
REASON_HELP = {
    "wrong_gold": "the marked answer is not the right one",
    "ambiguous": "more than one option (or none) is defensible",
    "no_implicit_meaning": "answerable from what is literally shown or said",
    "needs_outside_knowledge": "needs context the media does not give",
    "bad_media": "unreadable, wrong clip or image, cut at the wrong place",
    "offensive_or_private": "harmful content or personal information",
    "other": "none of these: say why in the note",
}


def _media(spec: ReviewSpec, boxes: bool) -> list[str]:
    out = []
    if spec.media == Media.VIDEO:
        out.append('  <Header value="Clip"/>')
        out.append('  <Video name="video" value="$video"/>')
        out.append('  <Header value="Frame the model sees"/>')
    out.append('  <Image name="image" value="$image" zoom="true" zoomControl="true" maxWidth="720px"/>')
    if boxes:
        out.append(
            f'  <RectangleLabels name="box" toName="image"><Label value="{BOX_LABEL}" hotkey="{BOX_HOTKEY}"/>'
            "</RectangleLabels>"
        )
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


def reason_help(reason: str) -> str:
    return REASON_HELP.get(reason, "")


def reason_hint(spec: ReviewSpec, reason: str) -> str:
    """What the reason means and what it does next (``ReviewSpec.consequences``), shown beside it."""
    c = spec.consequence(reason)
    then = f"then: {c.describe(spec.media)}" if c is not None else ""
    return "; ".join(p for p in (reason_help(reason), then) if p)


def _reasons(spec: ReviewSpec) -> list[str]:
    """The reject view: a required reason (hotkeys 1-9, a hint each), the help lines, a note."""
    out = ['  <View visibleWhen="choice-selected" whenTagName="verdict" whenChoiceValue="reject">']
    out.append('    <Header value="Reason (required with reject)" size="5"/>')
    out.append(
        '    <Choices name="reason" toName="question" choice="single" showInline="true" required="true" '
        'requiredMessage="A reject needs a reason: pick one (1-9)">'
    )
    for i, r in enumerate(spec.reasons):
        attrs = f"value={quoteattr(r)}"
        if i < 9:
            attrs += f' hotkey="{i + 1}"'
        if reason_hint(spec, r):
            attrs += f" hint={quoteattr(reason_hint(spec, r))}"
        out.append(f"      <Choice {attrs}/>")
    out.append("    </Choices>")
    lines = [f"{i + 1 if i < 9 else '-'}  {r}: {reason_hint(spec, r) or r}" for i, r in enumerate(spec.reasons)]
    out.append(f'    <Text name="reason_help" value={quoteattr(chr(10).join(lines), {chr(10): "&#10;"})}/>')
    out.append(
        f'    <TextArea name="{REASON_NOTE}" toName="question" maxSubmissions="1" editable="true" rows="2" '
        f'placeholder="note (optional; say why for other; at most {spec.limits.reason_note} characters)"/>'
    )
    out.append("  </View>")
    return out


def _corrections(spec: ReviewSpec) -> list[str]:
    """The edit view: one real multi-line field per editable text field, each with its limit."""
    fields = [f for f in spec.editable if f in FIELD_TAGS]
    if not fields:
        return []
    lim = spec.limits
    hint = {
        "question": f"corrected question (at most {lim.question} characters)",
        "options": f"corrected options, one per line, in order, A first (at most {lim.options} options of "
        f"{lim.option} characters each)",
        "answer": f"corrected answer: option letter(s) such as B, or the answer text (at most {lim.answer} characters)",
    }
    out = ['  <View visibleWhen="choice-selected" whenTagName="verdict" whenChoiceValue="edit">']
    out.append(
        '    <Header value="Corrections: leave a field empty to keep it. A new answer letter moves the '
        'correct mark (and its option type) to that option." size="5"/>'
    )
    for f in fields:
        out.append(
            f'    <TextArea name="{FIELD_TAGS[f]}" toName="question" maxSubmissions="1" editable="true" '
            f'rows="{FIELD_ROWS[f]}" placeholder={quoteattr(hint[f])}/>'
        )
    out.append("  </View>")
    return out


def _verdict_controls(spec: ReviewSpec) -> list[str]:
    keys = " · ".join(f"{k} {v}" for v, k in VERDICT_HOTKEYS.items())
    out = [f'  <Header value="Your verdict ({keys})"/>']
    out.append('  <Choices name="verdict" toName="question" choice="single" required="true" showInline="true">')
    out += [f'    <Choice value={quoteattr(v)} hotkey="{VERDICT_HOTKEYS[v]}"/>' for v in VERDICTS]
    out.append("  </Choices>")
    return out + _reasons(spec) + _corrections(spec)


def _unit_blocks(spec: ReviewSpec) -> list[str]:
    """A unit's members (``ReviewSpec.unit``, ``forge/review/units.py``): one block per item (its own
    reject with a reason, its own corrections: ``m_<control>_<i>``) and one per answer of an item
    built from several (``p_edit_<j>``), repeated over the task's ``members`` / ``parts`` (Label
    Studio's ``Repeater``). A unit of one item has neither: the form above is the item's. Where each
    member needs its own answer (``ReviewSpec.member_answers = required``) its block offers accept too,
    and the header says the unit's verdict does not stand for a member left unanswered."""
    lim = spec.limits
    required = spec.member_answers == MemberAnswers.REQUIRED
    covers = (
        "each member needs its own answer: accept or reject it here, or correct it in its own block (choose edit "
        "above); a member left unanswered is returned to you, the unit verdict does not stand for it "
        "(reject above rejects every member)"
        if required
        else "the unit verdict above applies to every member you leave unmarked; reject one member here, or "
        "correct it in place in its own block (choose edit above)"
    )
    marks = [("accept", "accept this member")] if required else []
    marks.append(("reject", "reject this member only (pick its reason)"))
    out = [
        f'  <Header value="Members (a task of several items): {covers}; the correction fields above are for a '
        'task of one item" size="4"/>',
        '  <Repeater on="$members" indexFlag="{{idx}}">',
        '    <Header value="$members[{{idx}}].title" size="5"/>',
        '    <Text name="m_text_{{idx}}" value="$members[{{idx}}].text"/>',
        '    <Choices name="m_verdict_{{idx}}" toName="m_text_{{idx}}" choice="single" showInline="true">'
        + "".join(f'<Choice value="{v}" hotkey="{NO_HOTKEY}" hint={quoteattr(h)}/>' for v, h in marks)
        + "</Choices>",
        '    <Choices name="m_reason_{{idx}}" toName="m_text_{{idx}}" choice="single" showInline="true">',
        *[
            f'      <Choice value={quoteattr(r)} hotkey="{NO_HOTKEY}" hint={quoteattr(reason_hint(spec, r) or r)}/>'
            for r in spec.reasons
        ],
        "    </Choices>",
    ]
    hint = {
        "question": f"corrected question of this member (at most {lim.question} characters)",
        "options": f"corrected options of this member, one per line, A first (at most {lim.options} of {lim.option})",
        "answer": f"corrected answer of this member: letter(s) or text (at most {lim.answer} characters)",
    }
    for f in (f for f in spec.editable if f in FIELD_TAGS):
        out.append(
            f'    <TextArea name="m_{f}_{{{{idx}}}}" toName="m_text_{{{{idx}}}}" maxSubmissions="1" editable="true" '
            f'rows="{FIELD_ROWS[f]}" placeholder={quoteattr(hint[f])}/>'
        )
    out += [
        "  </Repeater>",
        '  <Repeater on="$parts" indexFlag="{{idx}}">',
        '    <Header value="$parts[{{idx}}].title" size="5"/>',
        '    <Text name="p_text_{{idx}}" value="$parts[{{idx}}].text"/>',
        '    <TextArea name="p_edit_{{idx}}" toName="p_text_{{idx}}" maxSubmissions="1" editable="true" rows="2" '
        f'placeholder="corrected text of this answer only (at most {lim.answer} characters)"/>',
        "  </Repeater>",
    ]
    return out


def verdict_first(spec: ReviewSpec) -> bool:
    """A clip player or an image with boxes fills the screen: its verdict controls go above the
    media, where the reviewer finds them without scrolling past it (MAIA, ViMU, Hummus)."""
    return spec.media == Media.VIDEO or spec.boxes


def review_config(spec: ReviewSpec, adjudication: bool = False) -> str:
    first, item = verdict_first(spec), _item_text(spec.show_gold)
    if first:  # the task's heading (e.g. a returned verdict's reason) still opens the form
        lines = ["<View>", item[0], *_verdict_controls(spec), *_media(spec, spec.boxes), *item[1:]]
    else:
        lines = ["<View>", *_media(spec, spec.boxes), *item]
    if adjudication:
        lines += ['  <Header value="Verdicts so far (they disagree)"/>', '  <Text name="prior" value="$prior_text"/>']
    lines += [] if first else _verdict_controls(spec)
    if spec.unit:
        lines += _unit_blocks(spec)
    lines.append("</View>")
    return "\n".join(lines)


def human_config(spec: ReviewSpec, max_options: int = 6) -> str:
    """Blind answering: only what the model under test sees (media, question, options); a box
    benchmark's image takes a drawn box as the answer."""
    letters = LETTERS[: max(2, min(max_options, len(LETTERS)))]
    lines = ["<View>", *_media(spec, spec.boxes)]
    lines += [
        '  <Text name="question" value="$question"/>',
        '  <Header value="Options"/>',
        '  <Text name="options" value="$options_text"/>',
        '  <Header value="$instruction"/>',
        '  <Choices name="choice" toName="question" choice="multiple" showInline="true">',
        *[f'    <Choice value="{x}" hotkey="{i + 1}"/>' for i, x in enumerate(letters) if i < 9],
        *[f'    <Choice value="{x}"/>' for i, x in enumerate(letters) if i >= 9],
        "  </Choices>",
        f'  <TextArea name="answer_text" toName="question" maxSubmissions="1" editable="true" rows="3" '
        f'placeholder="your answer (at most {spec.limits.answer} characters)"/>',
        "</View>",
    ]
    return "\n".join(lines)
