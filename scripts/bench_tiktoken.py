#!/usr/bin/env python3
"""Python tiktoken's counting speed on the same lines `agentmem bench --tokens` counts.

Python tiktoken downloads its rank files at first use; offline, point it at the
copies the tiktoken-rs crate ships (cargo fetched them for the tests):

    python3 scripts/bench_tiktoken.py LINES.txt

looks for the crate under ~/.cargo/registry and fills TIKTOKEN_CACHE_DIR itself.
"""
import glob
import os
import shutil
import sys
import tempfile
import time

# tiktoken's cache names the files by the sha1 of their download URL.
CACHE_NAMES = {
    "o200k_base.tiktoken": "fb374d419588a4632f3f557e76b4b70aebbca790",
    "cl100k_base.tiktoken": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
}


def offline_cache() -> str:
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    pattern = os.path.expanduser("~/.cargo/registry/src/*/tiktoken-rs-*/assets")
    assets = sorted(glob.glob(pattern))
    if not assets:
        sys.exit("no tiktoken-rs assets under ~/.cargo/registry: run `cargo test -p agentmem --test tokens` once")
    for name, cached in CACHE_NAMES.items():
        shutil.copy(os.path.join(assets[-1], name), os.path.join(cache, cached))
    return cache


def main() -> None:
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", offline_cache())
    import tiktoken

    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    lines = text.splitlines()
    for name in ("o200k_base", "cl100k_base"):
        encoding = tiktoken.get_encoding(name)
        encoding.encode_ordinary("warm up")
        started = time.perf_counter()
        tokens = sum(len(encoding.encode_ordinary(line)) for line in lines)
        seconds = time.perf_counter() - started
        print(f"python tiktoken {name}: {len(text.encode()) / 1e6 / seconds:.1f} MB/s, {tokens} tokens in {len(lines)} lines")


if __name__ == "__main__":
    main()
