"""Objects from provider SDKs and frameworks as the plain values agentmem reads.

OpenAI's and Anthropic's SDKs (and pydantic-based frameworks) hand out
pydantic models; other libraries have ``to_dict()``. agentmem reads JSON, so
every such object is turned into its dict first.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

__all__ = ["as_plain", "json_default"]


def as_plain(value: Any) -> Any:
    """``value`` as dicts, lists and scalars, when it is an SDK or pydantic object; otherwise itself."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json", exclude_none=True)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping) and not isinstance(value, dict):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def json_default(value: Any) -> Any:
    """``json.dumps``'s ``default``: SDK objects as their dicts; anything else is refused."""
    plain = as_plain(value)
    if plain is value:
        raise TypeError(f"{type(value).__name__} is not JSON: pass dicts, lists, str, int, float, bool or None")
    return plain
