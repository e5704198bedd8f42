"""The toy benchmark's spec: everything the shared stages need, nothing in a shared file.

* Option policy **balance**: four unordered options.
* Blind filter **drop**, unit **item**: a question answerable without the image is dropped.
* Splits 25 % dev / rest test (its recipe config).
"""

from __future__ import annotations

from pathlib import Path

from forge.benchmarks.spec import BenchmarkSpec, BlindAction, BlindPolicy, EvalSpec, OptionPolicy
from tests.benchmarks.toy.hooks import ToyHooks

HERE = Path(__file__).resolve().parent

SPEC = BenchmarkSpec(
    name="toy",
    title="Toy",
    group="toy",
    recipe_assets=("toy_items",),
    options=OptionPolicy.BALANCE,
    blind=BlindPolicy(action=BlindAction.DROP, trials=3),
    owners=("team:toys",),
    contracts_dir=HERE / "contracts",
    recipe_config=HERE / "toy.yaml",
    definitions_module="tests.benchmarks.toy.assets",
    card_sections=("## About the toy benchmark\n\nA worked example of docs/benchmarks.md; not a real dataset.",),
    hooks=ToyHooks(),  # its request and scoring (toy/hooks.py → toy/evaluation.py)
    eval=EvalSpec(
        kinds={"mcq": "mcq"},
        primary_metric="accuracy",
        prompts_dir=HERE / "prompts",
        defaults={"settings": [{"name": "vlm", "prompt": "toy_task.yaml", "input": "image"}]},
        circular=True,
        report_slices=(("accuracy", "category"),),
    ),
)
