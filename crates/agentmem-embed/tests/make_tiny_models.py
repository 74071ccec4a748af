"""Writes the tiny models the parity test reads: random weights in the
layouts of a real BERT (`tiny-bert`) and a real MPNet (`tiny-mpnet`),
2 layers of 8 dimensions, a small vocabulary, and the vectors an
independent forward pass in numpy gives for a few texts, tokenized by
Hugging Face's `tokenizers` (its BertWordPiece, as sentence-transformers
tokenizes; MPNet frames texts with <s> and </s>). The MPNet pass follows
Hugging Face's modeling_mpnet, relative-position buckets computed in
float32 as PyTorch computes them. Needs numpy and tokenizers; run it from
this folder."""

import json
import math
import os
import struct

import numpy as np
from tokenizers import BertWordPieceTokenizer

HIDDEN, LAYERS, HEADS, INTER, POSITIONS = 8, 2, 2, 16, 32
WORDS = ["i", "'", "m", "off", "to", "go", "swim", "##ming", "with", "the", "kids", ".", "!", ":",
         "melanie", "cafe", "naive", "what", "does", "do", "for", "fun", "?", "un", "##do", "##able"]
TEXTS = ["Melanie: I'm off to go swimming with the kids.", "What does Melanie do for fun?",
         "Café naïve! Undoable?", "zebra"]
# Long enough that MPNet's relative distances reach its logarithmic buckets.
LONG_TEXT = " ".join(["Melanie does swimming with the kids for fun."] * 5)
FAMILIES = {
    "bert": {"folder": "tiny-bert", "seed": 7, "positions": POSITIONS,
             "vocab": ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS, "texts": TEXTS},
    "mpnet": {"folder": "tiny-mpnet", "seed": 11, "positions": 64,
              "vocab": ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>"] + WORDS,
              "texts": TEXTS + [LONG_TEXT]},
}
MPNET_PAD, MPNET_BUCKETS, MPNET_MAX_DISTANCE = 1, 32, 128


def make(family):
    spec = FAMILIES[family]
    rng = np.random.default_rng(spec["seed"])
    weights = {}

    def tensor(name, *shape, scale=0.5):
        weights[name] = (rng.standard_normal(shape) * scale).astype(np.float32)

    def norm(name):
        tensor(name + ".weight", HIDDEN, scale=0.1); weights[name + ".weight"] += 1
        tensor(name + ".bias", HIDDEN, scale=0.1)

    if family == "bert":
        attention = ["attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"]
        attention_norm = "attention.output.LayerNorm"
    else:
        attention = ["attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o"]
        attention_norm = "attention.LayerNorm"
    tensor("embeddings.word_embeddings.weight", len(spec["vocab"]), HIDDEN)
    tensor("embeddings.position_embeddings.weight", spec["positions"], HIDDEN)
    if family == "bert":
        tensor("embeddings.token_type_embeddings.weight", 2, HIDDEN)
    norm("embeddings.LayerNorm")
    for l in range(LAYERS):
        p = f"encoder.layer.{l}."
        for name, out, inp in [(a, HIDDEN, HIDDEN) for a in attention] + [
                ("intermediate.dense", INTER, HIDDEN), ("output.dense", HIDDEN, INTER)]:
            tensor(p + name + ".weight", out, inp)
            tensor(p + name + ".bias", out, scale=0.1)
        for name in [attention_norm, "output.LayerNorm"]:
            norm(p + name)
    if family == "mpnet":
        tensor("encoder.relative_attention_bias.weight", MPNET_BUCKETS, HEADS)
    eps = 1e-12 if family == "bert" else 1e-5

    def ln(x, p):
        m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps) * weights[p + ".weight"] + weights[p + ".bias"]

    def lin(x, p):
        return x @ weights[p + ".weight"].T + weights[p + ".bias"]

    def gelu(x):
        return np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / np.sqrt(2))))(x)

    def bucket(relative):
        # modeling_mpnet.relative_position_bucket, in PyTorch's float32.
        n = -relative; half = MPNET_BUCKETS // 2
        ret = (n < 0).astype(np.int64) * half
        n = np.abs(n); exact = half // 2
        scale = np.float32(math.log(MPNET_MAX_DISTANCE / exact))
        with np.errstate(divide="ignore", invalid="ignore"):
            large = exact + (np.log(n.astype(np.float32) / np.float32(exact)) / scale
                             * np.float32(half - exact)).astype(np.int64)
        return ret + np.where(n < exact, n, np.minimum(large, half - 1))

    def forward(ids):
        n = len(ids); d = HIDDEN // HEADS
        first = 0 if family == "bert" else MPNET_PAD + 1
        x = weights["embeddings.word_embeddings.weight"][ids] \
            + weights["embeddings.position_embeddings.weight"][first:first + n]
        if family == "bert":
            x = x + weights["embeddings.token_type_embeddings.weight"][0]
        x = ln(x, "embeddings.LayerNorm")
        bias = 0
        if family == "mpnet":
            r = np.arange(n)
            bias = weights["encoder.relative_attention_bias.weight"][bucket(r[None, :] - r[:, None])].transpose(2, 0, 1)
        for l in range(LAYERS):
            p = f"encoder.layer.{l}."
            q, k, v = (lin(x, p + a).reshape(n, HEADS, d).transpose(1, 0, 2) for a in attention[:3])
            a = q @ k.transpose(0, 2, 1) / np.sqrt(d) + bias
            a = np.exp(a - a.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
            x = ln(lin(c, p + attention[3]) + x, p + attention_norm)
            x = ln(lin(gelu(lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
        e = x.mean(0)
        return e / np.linalg.norm(e)

    folder = spec["folder"]
    os.makedirs(folder, exist_ok=True)
    with open(f"{folder}/vocab.txt", "w") as f:
        f.write("\n".join(spec["vocab"]) + "\n")
    framing = {} if family == "bert" else {"cls_token": "<s>", "sep_token": "</s>"}
    tokenizer = BertWordPieceTokenizer(f"{folder}/vocab.txt", lowercase=True, strip_accents=True, **framing)
    expected = []
    for text in spec["texts"]:
        ids = tokenizer.encode(text).ids
        expected.append({"text": text, "ids": ids, "vector": [float(v) for v in forward(np.array(ids))]})

    header, offset, blobs = {}, 0, []
    for name, array in weights.items():
        blob = array.tobytes(); blobs.append(blob)
        header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
    head = json.dumps(header).encode(); head += b" " * (-len(head) % 8)
    with open(f"{folder}/model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    config = {"hidden_act": "gelu", "hidden_size": HIDDEN, "intermediate_size": INTER,
              "layer_norm_eps": eps, "max_position_embeddings": spec["positions"], "model_type": family,
              "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "vocab_size": len(spec["vocab"])}
    if family == "bert":
        config.update({"architectures": ["BertModel"], "type_vocab_size": 2})
    else:
        config.update({"architectures": ["MPNetModel"], "pad_token_id": MPNET_PAD,
                       "relative_attention_num_buckets": MPNET_BUCKETS})
        json.dump({"cls_token": "<s>", "sep_token": "</s>", "unk_token": "[UNK]", "pad_token": "<pad>",
                   "mask_token": {"content": "<mask>", "lstrip": True}},
                  open(f"{folder}/special_tokens_map.json", "w"), indent=1)
    json.dump(dict(sorted(config.items())), open(f"{folder}/config.json", "w"), indent=1)
    json.dump(expected, open(f"{folder}/expected.json", "w"), indent=1)


for family in FAMILIES:
    make(family)
