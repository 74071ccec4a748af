"""Writes the tiny BERT the parity test reads: random weights of a real
BERT's layout (2 layers, 8 dimensions), a small vocabulary, and the vectors
an independent forward pass in numpy gives for a few texts, tokenized by
Hugging Face's `tokenizers` (its BertWordPiece, as sentence-transformers
tokenizes). Needs numpy and tokenizers; run it from this folder."""

import json
import struct

import numpy as np
from tokenizers import BertWordPieceTokenizer

HIDDEN, LAYERS, HEADS, INTER, POSITIONS = 8, 2, 2, 16, 32
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "i", "'", "m", "off", "to", "go",
         "swim", "##ming", "with", "the", "kids", ".", "!", ":", "melanie", "cafe", "naive",
         "what", "does", "do", "for", "fun", "?", "un", "##do", "##able"]
TEXTS = ["Melanie: I'm off to go swimming with the kids.", "What does Melanie do for fun?",
         "Café naïve! Undoable?", "zebra"]

rng = np.random.default_rng(7)
weights = {}
def tensor(name, *shape, scale=0.5):
    weights[name] = (rng.standard_normal(shape) * scale).astype(np.float32)
tensor("embeddings.word_embeddings.weight", len(VOCAB), HIDDEN)
tensor("embeddings.position_embeddings.weight", POSITIONS, HIDDEN)
tensor("embeddings.token_type_embeddings.weight", 2, HIDDEN)
tensor("embeddings.LayerNorm.weight", HIDDEN, scale=0.1); weights["embeddings.LayerNorm.weight"] += 1
tensor("embeddings.LayerNorm.bias", HIDDEN, scale=0.1)
for l in range(LAYERS):
    p = f"encoder.layer.{l}."
    for name, out, inp in [("attention.self.query", HIDDEN, HIDDEN), ("attention.self.key", HIDDEN, HIDDEN),
                           ("attention.self.value", HIDDEN, HIDDEN), ("attention.output.dense", HIDDEN, HIDDEN),
                           ("intermediate.dense", INTER, HIDDEN), ("output.dense", HIDDEN, INTER)]:
        tensor(p + name + ".weight", out, inp)
        tensor(p + name + ".bias", out, scale=0.1)
    for norm in ["attention.output.LayerNorm", "output.LayerNorm"]:
        tensor(p + norm + ".weight", HIDDEN, scale=0.1); weights[p + norm + ".weight"] += 1
        tensor(p + norm + ".bias", HIDDEN, scale=0.1)

def ln(x, p):
    m = x.mean(-1, keepdims=True); v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + 1e-12) * weights[p + ".weight"] + weights[p + ".bias"]
def lin(x, p):
    return x @ weights[p + ".weight"].T + weights[p + ".bias"]
def gelu(x):
    from math import erf
    return np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))(x)
def forward(ids):
    n = len(ids); d = HIDDEN // HEADS
    x = weights["embeddings.word_embeddings.weight"][ids] + weights["embeddings.position_embeddings.weight"][:n] \
        + weights["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "embeddings.LayerNorm")
    for l in range(LAYERS):
        p = f"encoder.layer.{l}."
        q, k, v = (lin(x, p + "attention.self." + s).reshape(n, HEADS, d).transpose(1, 0, 2) for s in ("query", "key", "value"))
        a = q @ k.transpose(0, 2, 1) / np.sqrt(d)
        a = np.exp(a - a.max(-1, keepdims=True)); a /= a.sum(-1, keepdims=True)
        c = (a @ v).transpose(1, 0, 2).reshape(n, HIDDEN)
        x = ln(lin(c, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        x = ln(lin(gelu(lin(x, p + "intermediate.dense")), p + "output.dense") + x, p + "output.LayerNorm")
    e = x.mean(0)
    return e / np.linalg.norm(e)

with open("vocab.txt", "w") as f:
    f.write("\n".join(VOCAB) + "\n")
tokenizer = BertWordPieceTokenizer("vocab.txt", lowercase=True, strip_accents=True)
expected = []
for text in TEXTS:
    ids = tokenizer.encode(text).ids
    expected.append({"text": text, "ids": ids, "vector": [float(v) for v in forward(np.array(ids))]})

header, offset, blobs = {}, 0, []
for name, array in weights.items():
    blob = array.tobytes(); blobs.append(blob)
    header[name] = {"dtype": "F32", "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
    offset += len(blob)
head = json.dumps(header).encode(); head += b" " * (-len(head) % 8)
with open("model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
json.dump({"architectures": ["BertModel"], "hidden_act": "gelu", "hidden_size": HIDDEN, "intermediate_size": INTER,
           "layer_norm_eps": 1e-12, "max_position_embeddings": POSITIONS, "model_type": "bert",
           "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "type_vocab_size": 2,
           "vocab_size": len(VOCAB)}, open("config.json", "w"), indent=1)
json.dump(expected, open("expected.json", "w"), indent=1)
