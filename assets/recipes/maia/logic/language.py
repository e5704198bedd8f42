"""MAIA's language setting (``language`` in assets/recipes/maia/config.yaml): which prompt set the
recipe sends and which tokenisation / function words its text checks use.

MAIA is a native-Italian benchmark (§1, §3, App. A.3: questions written by Italian linguists,
answers by Italian natives), so ``it`` is the paper's value; ``en`` is the named option.
English prompts live in ``assets/recipes/maia/prompts/``, Italian ones in ``prompts/it/`` under
the same file names, variables and schema. A prompt missing in the chosen language is an
error: a silent fall-back would send English instructions into an Italian build.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from forge.checks.text import check_language
from forge.llm.prompts import PromptError

PAPER_LANGUAGE = "it"
# language → sub-folder of the recipe's prompt folder ("" = the folder itself)
PROMPT_SUBDIRS: dict[str, str] = {"en": "", "it": "it"}


def recipe_language(cfg: Mapping[str, Any]) -> str:
    """The ``language`` of the recipe settings (the paper's ``it`` when absent), validated."""
    lang = check_language(str(cfg.get("language") or PAPER_LANGUAGE))
    if lang not in PROMPT_SUBDIRS:
        raise ValueError(f"MAIA has no prompt set for language {lang!r}; known: {sorted(PROMPT_SUBDIRS)}")
    return lang


def prompts_dir(root: Path, lang: str) -> Path:
    """The prompt folder of ``lang`` under the recipe's prompt root."""
    lang = check_language(lang)
    if lang not in PROMPT_SUBDIRS:
        raise ValueError(f"MAIA has no prompt set for language {lang!r}; known: {sorted(PROMPT_SUBDIRS)}")
    return root / PROMPT_SUBDIRS[lang] if PROMPT_SUBDIRS[lang] else root


def prompt_file(root: Path, lang: str, name: str) -> Path:
    """``<name>.yaml`` in the ``lang`` prompt set; missing = ``PromptError`` (never the English one)."""
    path = prompts_dir(root, lang) / f"{name}.yaml"
    if not path.is_file():
        raise PromptError(
            f"MAIA prompt {name!r} has no {lang!r} version (expected {path}); "
            "add it (same variables and schema as the English file) or set language: en"
        )
    return path


class LanguagePrompts(Mapping[str, Path]):
    """``P[name]`` → the prompt file of the *current* language (read per use, like the settings)."""

    def __init__(self, root: Path, names: tuple[str, ...], language: Callable[[], str]):
        self.root, self.names, self.language = root, names, language

    def __getitem__(self, name: str) -> Path:
        if name not in self.names:
            raise KeyError(name)
        return prompt_file(self.root, self.language(), name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)
