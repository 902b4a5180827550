"""The bi-encoder Carrel serves (all-MiniLM-L6-v2, mean-pooled, normalised),
for the pair miner and the training baseline."""

import torch
from transformers import AutoModel, AutoTokenizer


@torch.no_grad()
def embed(base_dir, texts, size=64, max_length=256):
    tok = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModel.from_pretrained(base_dir).eval()
    out = []
    for b in range(0, len(texts), size):
        e = tok(texts[b : b + size], truncation=True, max_length=max_length, padding=True, return_tensors="pt")
        h = model(**e).last_hidden_state
        m = e["attention_mask"].unsqueeze(-1).float()
        v = (h * m).sum(1) / m.sum(1)
        out.append(torch.nn.functional.normalize(v, dim=-1))
    return torch.cat(out)
