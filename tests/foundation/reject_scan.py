"""Static scan of the reject reasons the code can write (used by test_reject_registry.py).

A reason reaches the ``rejects`` table through a *reject site*: ``log.add(item, reason, ...)``,
``add_exception``, a release's ``out.reject(record, reason, ...)``, the media layer's
``SourceReject`` / ``Rejected`` / reason-carrying exceptions, a ``{"reason": ..., "detail": ...}``
row, or a refine outcome (``finish(..., reason=...)``). A literal (or a module constant) there is
an emitted reason. A computed one must be listed in ``FORWARDED`` with the functions that mint
its codes; the scan then reads the codes those functions append, return or assign. A new
computed site the scan does not know fails the test until it is listed here.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("assets", "forge", "jobs", "resources")
# call name -> positional index of the reason (a ``reason=`` keyword always counts)
REASON_ARG = {
    "add_exception": 1,
    "reject": 1,
    "reject_pool": 0,  # MAIA's PoolOutcome (assets/recipes/maia/logic/pool_flow.py)
    "member_reject": 1,
    "_file_reject": 1,
    "SourceReject": 2,
    "Rejected": 1,
    "ProbeError": 0,
    "PolicyViolation": 0,
    "ImageReject": 0,
    "AnnotationError": 0,
}
ADD_RECEIVERS = {"log", "rej", "rejects"}  # RejectLog variables: ``<name>.add(item_id, reason, ...)``

# Computed reasons at reject sites: (file, expression) -> functions ("file:function") minting the codes
# ("forwards" = the value is a code minted at another reject site the scan already reads).
FORWARDS = "forwards"
FORWARDED: dict[tuple[str, str], list[str] | str] = {
    ("assets/recipes/maia/assets.py", "reason"): [
        "assets/recipes/maia/logic/questions.py:load_import",
        "assets/recipes/maia/logic/pool_flow.py:refine_reason",  # maia_foils: a discarded foil draw
    ],
    ("assets/recipes/maia/logic/stages.py", "problems[0]"): [
        "assets/recipes/maia/logic/questions.py:question_problems"
    ],
    ("assets/recipes/maia/assets.py", "code"): FORWARDS,  # PoolOutcome.member_reject sites
    ("assets/recipes/maia/assets.py", "str(out.reason)"): FORWARDS,  # PoolOutcome.reject_pool sites
    ("assets/recipes/maia/logic/pool_flow.py", "reason"): ["assets/recipes/maia/logic/pool_flow.py:member_reason"],
    ("assets/recipes/iibench/assets.py", "reason"): FORWARDS,  # invalid_labels or a refine outcome
    ("assets/recipes/iibench/assets.py", "o.reason"): FORWARDS,  # refine outcomes
    ("assets/recipes/iibench/assets.py", "code"): ["assets/recipes/iibench/logic/items.py:primary_reason"],
    ("assets/recipes/vimu/assets.py", "exc.reason"): FORWARDS,  # AnnotationError
    ("assets/recipes/vimu/assets.py", "reason"): ["assets/recipes/vimu/logic/items.py:build_items"],  # <task>_no_macro
    ("assets/recipes/vague/assets.py", "r['reason']"): FORWARDS,  # logic.candidates' reject rows
    ("assets/recipes/vague/logic/stages.py", "problems[0][0]"): ["assets/recipes/vague/logic/logic.py:triple_problems"],
    ("assets/recipes/vague/logic/stages.py", "reason"): [
        "assets/recipes/vague/logic/logic.py:ne_problems",
        "assets/recipes/vague/logic/stages.py:run_options",
    ],
    ("assets/recipes/hummus/assets.py", "reason"): FORWARDS,  # a refine outcome or Problems.primary()
    ("assets/recipes/hummus/assets.py", "probs.primary() or 'invalid_annotation'"): [
        "assets/recipes/hummus/logic/annotations.py:validate_annotation"
    ],
    ("assets/recipes/hummus/assets.py", "r['reason']"): FORWARDS,  # hummus.items.select_annotations
    ("assets/recipes/hummus/logic/items.py", "detail_reject(a)"): [
        "assets/recipes/hummus/logic/annotations.py:validate_annotation"
    ],
    ("assets/recipes/hummus/logic/release.py", "probs.primary()"): [
        "assets/recipes/hummus/logic/annotations.py:validate_annotation"
    ],
    ("assets/recipes/vague/logic/logic.py", "reason"): FORWARDS,  # the local reject() helper
    ("forge/gates/stages.py", "reason"): [
        "forge/items/fields.py:field_problem",
        "forge/items/fields.py:media_problem",
        "forge/gates/steps.py:field_and_duplicates",
        "forge/gates/steps.py:blind_drops",
    ],
    ("forge/gates/steps.py", "st[0] if st else None"): FORWARDS,
    ("forge/media/batch.py", "reason"): FORWARDS,  # a source image the driver refused (its ImageReject)
    ("assets/releases/factory.py", "r.reason"): FORWARDS,  # ParsedRelease.reject
    ("assets/vision/assets.py", "r"): FORWARDS,  # vision pipeline results
    ("forge/vision/pipeline.py", "p.result.reason"): FORWARDS,
    ("forge/vision/pipeline.py", "d.reason"): FORWARDS,  # a LoadError from the device decoder's CPU fallback
    ("forge/media/batch.py", "r.reason"): FORWARDS,  # SourceReject
    ("forge/media/batch.py", "res.reason"): FORWARDS,  # Rejected
    ("forge/media/batch.py", "exc.reason"): FORWARDS,  # ImageReject
    ("forge/media/inbox.py", "entry.reason"): FORWARDS,  # PolicyViolation
    ("forge/media/download.py", "exc.reason"): FORWARDS,
    ("forge/media/download.py", "reason"): ["forge/media/sources.py:classify_error"],
    ("forge/media/images.py", "exc.reason"): FORWARDS,
    ("forge/media/images.py", "reason"): FORWARDS,
    ("forge/media/images.py", "code"): ["forge/media/sources.py:classify_error"],
    ("forge/media/sources.py", "exc.reason"): FORWARDS,
    ("forge/media/sources.py", "reason"): ["forge/media/sources.py:classify_error"],
    ("forge/storage/rejects.py", "reason"): FORWARDS,  # add_exception -> add
}


REFINE_OUTCOMES = ("generation_failed", "judge_failed", "verdict_reject", "max_rounds")  # forge/llm/refine.py
# Codes built by an f-string: its source -> the values it can take.
COMPOSED: dict[str, tuple[str, ...]] = {
    "f'refine_{o.reason}'": tuple(f"refine_{r}" for r in REFINE_OUTCOMES),
    # vague_options' NE loop has checks and no judge; a failing check names itself (ne_object_present...)
    "f'ne_{ne.reason}'": ("ne_generation_failed", "ne_max_rounds"),
    "f'empty_{key}'": ("empty_direct_expression", "empty_intention"),  # vague.logic.triple_problems
    "f'{task.lower()}_no_macro'": ("eg_no_macro", "rm_no_macro", "sv_no_macro"),  # vimu.items.MCQ_TASKS
}


def _files() -> dict[str, ast.Module]:
    return {
        str(p.relative_to(ROOT)): ast.parse(p.read_text(), str(p))
        for d in SCANNED
        for p in sorted((ROOT / d).rglob("*.py"))
    }


def _constants(trees: dict[str, ast.Module]) -> dict[str, str]:
    out: dict[str, str] = {}
    for tree in trees.values():
        for n in tree.body:
            if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
                out |= {t.id: n.value.value for t in n.targets if isinstance(t, ast.Name) and t.id.isupper()}
    return out


def _tables(trees: dict[str, ast.Module]) -> dict[str, list[ast.AST]]:
    """Module-level lists/tuples (``_ERROR_PATTERNS = [(code, pattern), ...]``) by name."""
    out: dict[str, list[ast.AST]] = {}
    for tree in trees.values():
        for n in tree.body:
            target = n.target if isinstance(n, ast.AnnAssign) else n.targets[0] if isinstance(n, ast.Assign) else None
            if isinstance(target, ast.Name) and isinstance(n.value, (ast.List, ast.Tuple)):
                out[target.id] = list(n.value.elts)
    return out


def _value(node: ast.AST, consts: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return consts.get(name) if name and name.isupper() else None


def _codes(node: ast.AST, consts: dict[str, str]) -> set[str]:
    """Codes a minted value can be: a literal, a constant, a tuple's first element, either arm of ``a if c else b``."""
    if isinstance(node, ast.Tuple) and node.elts:  # (code, detail) or (item_id, code)
        return _codes(node.elts[0], consts) or (_codes(node.elts[1], consts) if len(node.elts) > 1 else set())
    if isinstance(node, ast.IfExp):
        return _codes(node.body, consts) | _codes(node.orelse, consts)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_codes(v, consts) for v in node.values))
    if isinstance(node, ast.JoinedStr):  # a composed code, or (in a minter) a message
        return set(COMPOSED.get(ast.unparse(node), ()))
    v = _value(node, consts)
    return {v} if v else set()


def _minted(fn: ast.AST, consts: dict[str, str], tables: dict[str, list[ast.AST]]) -> set[str]:
    """Codes a minting function appends, adds (``problems.add(CODE, msg)``), returns, tries in
    order (``for code in (A, B)``) or assigns to ``dropped[i]`` / ``status[i]`` / a ``*reason*`` or
    ``drop*`` variable."""
    out: set[str] = set()

    def named(t: ast.AST) -> bool:
        return isinstance(t, ast.Name) and ("reason" in t.id or t.id.endswith("_reject"))

    for n in ast.walk(fn):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr in ("append", "add")
            and n.args
        ):
            out |= _codes(n.args[0], consts)
        elif isinstance(n, ast.Return) and n.value is not None:
            out |= set().union(*(_codes(v, consts) for v in getattr(n.value, "elts", [n.value])))
        elif isinstance(n, ast.For) and (named(n.target) or getattr(n.target, "id", "") == "code"):
            elts = n.iter.elts if isinstance(n.iter, ast.Tuple) else tables.get(getattr(n.iter, "id", ""), [])
            out |= set().union(*(_codes(v, consts) for v in elts))
        elif isinstance(n, ast.For) and isinstance(n.target, ast.Tuple) and named(n.target.elts[0]):
            out |= set().union(*(_codes(v, consts) for v in tables.get(getattr(n.iter, "id", ""), [])))
        elif isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Subscript) and getattr(t.value, "attr", getattr(t.value, "id", "")) in (
                    "dropped",
                    "status",
                ):
                    out |= _codes(n.value, consts)
                elif named(t):
                    out |= _codes(n.value, consts)
                elif isinstance(t, ast.Tuple) and isinstance(n.value, ast.Tuple):
                    out |= set().union(*(_codes(v, consts) for te, v in zip(t.elts, n.value.elts) if named(te)))
    return {c for c in out if c.replace("_", "").isalnum() and c.islower()}


def scan(sources: dict[str, str] | None = None) -> tuple[dict[str, set[str]], list[str]]:
    """(code -> files where it is emitted or minted, unknown computed sites as 'file: expr').
    ``sources`` (path -> text) replaces the project's files (the scan's own tests)."""
    trees = {k: ast.parse(v) for k, v in sources.items()} if sources is not None else _files()
    consts, tables = _constants(trees), _tables(trees)
    emitted: dict[str, set[str]] = defaultdict(set)
    unknown: list[str] = []
    funcs = {
        f"{path}:{n.name}": n
        for path, tree in trees.items()
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    for path, tree in trees.items():
        for n in ast.walk(tree):
            args: list[ast.AST] = []
            if isinstance(n, ast.Call):
                f = n.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                idx = None
                if name == "add" and isinstance(f, ast.Attribute) and getattr(f.value, "id", None) in ADD_RECEIVERS:
                    idx = 1
                elif name in REASON_ARG:
                    idx = REASON_ARG[name]
                if idx is not None and len(n.args) > idx:
                    args.append(n.args[idx])
                if idx is not None or name == "finish":
                    args += [k.value for k in n.keywords if k.arg == "reason"]
            elif isinstance(n, ast.Dict):
                keys = {k.value for k in n.keys if isinstance(k, ast.Constant)}
                if {"reason", "detail"} <= keys:  # a reject row built as a dict
                    args += [v for k, v in zip(n.keys, n.values) if isinstance(k, ast.Constant) and k.value == "reason"]
            for a in args:
                v = _value(a, consts)
                if isinstance(a, ast.JoinedStr) and ast.unparse(a) not in COMPOSED:
                    unknown.append(f"{path}: {ast.unparse(a)} (add it to COMPOSED)")
                elif v is not None or isinstance(a, ast.JoinedStr):
                    for code in [v] if v is not None else _codes(a, consts):
                        emitted[code].add(path)
                    continue
                minters = FORWARDED.get((path, ast.unparse(a)))
                for code in _codes(a, consts):  # literals inside it: ``x or 'fallback'``, ``'a' if c else 'b'``
                    emitted[code].add(path)
                if minters is None:
                    unknown.append(f"{path}: {ast.unparse(a)}")
                elif minters != FORWARDS:
                    for m in minters:
                        for code in _minted(funcs[m], consts, tables):
                            emitted[code].add(m)
    return dict(emitted), unknown
