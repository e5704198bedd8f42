"""MAIA is evaluated in its items' language: Italian items (all of MAIA's) get the official prompts
of eval_model.py (PROMPT_MC in Italian, PROMPT_GEN asking for an Italian answer), items in English
the recipe's English ones (the `@en` option)."""

from pathlib import Path

from assets.recipes.maia.logic.evaluation import item_language, task_prompt
from forge.benchmarks.registry import get
from forge.checks.language import detect
from forge.evals.config import benchmark_block, load_eval_config
from forge.llm.prompts import load_prompt

ROOT = Path(__file__).resolve().parents[3]
PROMPTS = ROOT / "assets" / "recipes" / "maia" / "eval_prompts"


def maia_prompts() -> dict:
    """``task:<task>`` keys as the evaluation pipeline builds them from config/evals.yaml."""
    cfg = benchmark_block(load_eval_config(), get("maia"))["prompts"]
    return {f"task:{task}": load_prompt(PROMPTS / name) for task, name in cfg.items()}


def text_of(prompt) -> str:
    return " ".join(m["content"] for m in prompt.render({v: "x" for v in prompt.variables}) if m["content"])


def test_italian_items_get_the_italian_prompts_by_default():
    prompts = maia_prompts()
    sv_it = ["Il cuoco mette la pizza nel forno a legna.", "Il cuoco mette la pizza nel frigorifero."]
    sv_en = ["The chef puts the pizza in the wood-fired oven.", "The chef puts the pizza in the fridge."]
    for task, opts, q in (
        ("statement_verification", sv_it, ""),
        ("open_ended", None, "Dove si trova il cuoco durante il video?"),
    ):
        p = task_prompt(prompts, task, opts, q)
        assert p.language == "it" and p.path.name.endswith("_it.yaml"), task
    for task, opts, q in (
        ("statement_verification", sv_en, ""),
        ("open_ended", None, "Where is the chef standing during the video?"),
    ):
        p = task_prompt(prompts, task, opts, q)
        assert p.language == "en" and detect(text_of(p)).language == "en", task
    # unclear or other languages: the paper's (Italian) prompt
    assert task_prompt(prompts, "open_ended", None, "").language == "it"
    assert item_language(sv_it, "") == "it" and item_language(None, sv_en[0]) == "en"


def test_the_default_task_prompts_are_the_italian_files():
    prompts = maia_prompts()
    assert prompts["task:statement_verification"].language == "it"
    assert prompts["task:open_ended"].language == "it"
    sv = text_of(prompts["task:statement_verification"])
    assert sv.startswith("Scegli la descrizione corretta:") and "Rispondi solo A o B" in sv
    assert detect(sv).language == "it"
    assert "in Italian" in text_of(prompts["task:open_ended"])
