"""Foreign sources, measured with a real Chroma server (`make bench-foreign`).

1. A labelled set split in two: every other document goes into a local
   library, the rest into a Chroma collection (their chunks, with the very
   vectors Carrel made for them, read from a full library: sqlite-vec's
   vec0 keeps them 64 to a blob in `chunk_vectors_vector_chunks00`, each at
   its `chunk_offset`, which plain sqlite3 reads without the extension). Each query is asked with `carrel match --json`; nDCG@10 of
   the local topic lane alone, against the local topic lane followed by the
   Elsewhere list (never interleaved: the foreign hits come after). Noise
   queries: foreign points admitted past the floor (goal 0).
2. Added query latency with 1, 2 and 4 sources (the same collection under
   several names): `elsewhere.ms` of each `carrel match`, p50 and p95.

3. The same split, its foreign half in a PostgreSQL table with a pgvector
   column (PyPI pgserver; run as `nobody` when this runs as root): nDCG@10,
   noise, and one pgvector source's added latency.

Usage: foreign.py CARREL_BIN CHROMA_BIN SET_DIR WORK_DIR PGSERVER_SITE
"""

import json
import math
import os
import shutil
import socket
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

carrel, chroma_bin, set_dir, work, pgserver_site = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, CARREL_LOG="error")


def run(lib, *args):
    out = subprocess.run([carrel, "--library", lib, *args], env=env, capture_output=True, text=True)
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def http(method, url, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"content-type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


servers = []


def start_postgres(points):
    """A PostgreSQL with pgvector holding `points` in table `half`; its URL."""
    root = os.geteuid() == 0
    # Where its user can reach (a work dir under root's home is not).
    pg = tempfile.mkdtemp(prefix="carrel-bench-pg-")
    os.chmod(pg, 0o755)
    os.makedirs(os.path.join(pg, "sock"))
    if root:
        for d in ("pgserver", "pgserver.libs"):
            shutil.copytree(os.path.join(pgserver_site, d), os.path.join(pg, d), symlinks=True)
        subprocess.run(["chown", "-R", "nobody:nogroup", pg], check=True)
    bin_dir = os.path.join(pg if root else pgserver_site, "pgserver/pginstall/bin")
    as_user = {"user": "nobody", "group": "nogroup"} if root else {}
    subprocess.run([f"{bin_dir}/initdb", "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C",
                    "-D", f"{pg}/data"], check=True, capture_output=True, cwd=pg, **as_user)
    port = free_port()
    servers.append(subprocess.Popen([f"{bin_dir}/postgres", "-D", f"{pg}/data", "-p", str(port),
                                     "-c", "listen_addresses=127.0.0.1", "-k", f"{pg}/sock"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=pg, **as_user))
    servers.append(pg)
    pg_url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
    sql = ["CREATE EXTENSION vector;",
           "CREATE TABLE half (id text PRIMARY KEY, body text, doc text, embedding vector(384));"]
    quote = lambda t: "'" + t.replace("'", "''") + "'"
    for pid, text, doc, vec in points:
        sql.append(f"INSERT INTO half VALUES ({quote(pid)}, {quote(text)}, {quote(doc)}, '[{','.join(map(str, vec))}]');")
    sql.append("CREATE INDEX ON half USING hnsw (embedding vector_cosine_ops);")
    for _ in range(600):
        if subprocess.run([f"{bin_dir}/pg_isready", "-d", pg_url], capture_output=True).returncode == 0:
            break
        time.sleep(0.1)
    subprocess.run([f"{bin_dir}/psql", "-q", "-v", "ON_ERROR_STOP=1", pg_url], input="\n".join(sql),
                   text=True, check=True, capture_output=True)
    return pg_url


port = free_port()
server = subprocess.Popen([chroma_bin, "run", "--host", "127.0.0.1", "--port", str(port), "--path", os.path.join(work, "chroma")],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
url = f"http://127.0.0.1:{port}"
try:
    for _ in range(600):
        try:
            http("GET", f"{url}/api/v2/heartbeat")
            break
        except OSError:
            time.sleep(0.1)
    base = f"{url}/api/v2/tenants/default_tenant/databases/default_database/collections"

    queries = [json.loads(l) for l in open(os.path.join(set_dir, "queries.jsonl"))]
    qrels = {}
    for line in list(open(os.path.join(set_dir, "qrels.tsv")))[1:]:
        q, d, g = line.split("\t")
        if float(g) > 0:
            qrels.setdefault(q, set()).add(d)
    docs = sorted(os.listdir(os.path.join(set_dir, "corpus")))
    local_docs, foreign_docs = docs[0::2], docs[1::2]

    # Every document in one library, to read its chunks and vectors.
    full = os.path.join(work, "full")
    r = run(full, "add", os.path.join(set_dir, "corpus"))
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(os.path.join(full, "library.sqlite3"))
    dims = 384
    rows = db.execute(
        """SELECT c.id, c.text, d.source, v.vectors, r.chunk_offset FROM chunks c
           JOIN documents d ON d.content_id = c.content_id
           JOIN chunk_vectors_rowids r ON r.rowid = c.id
           JOIN chunk_vectors_vector_chunks00 v ON v.rowid = r.chunk_id"""
    ).fetchall()
    rows = [(cid, text, src, blob[off * dims * 4:(off + 1) * dims * 4]) for cid, text, src, blob, off in rows]
    points = [(str(cid), text, os.path.basename(src), list(struct.unpack(f"{len(e) // 4}f", e)))
              for cid, text, src, e in rows if os.path.basename(src) in foreign_docs]
    made = http("POST", base, {"name": "half", "configuration": {"hnsw": {"space": "cosine"}}})
    http("POST", f"{base}/{made['id']}/add", {
        "ids": [p[0] for p in points], "documents": [p[1] for p in points],
        "metadatas": [{"doc": p[2]} for p in points], "embeddings": [p[3] for p in points],
    })
    point_doc = {p[0]: p[2] for p in points}

    local = os.path.join(work, "local")
    r = run(local, "add", *[os.path.join(set_dir, "corpus", d) for d in local_docs])
    assert r.returncode == 0, r.stderr

    def add_source(name, at=None):
        at = at or ["--chroma", url, "--collection", "half", "--text-key", "#document"]
        for args in (["source", "add", name, *at],
                     ["source", "acknowledge", name, "--by", "bench"], ["source", "enable", name]):
            r = run(local, *args)
            assert r.returncode == 0, r.stdout + r.stderr

    def ndcg(ranked, relevant):
        dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
        ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
        return dcg / ideal if ideal else 0.0

    def judge(label):
        local_only, with_elsewhere, noise_leaks, noise = [], [], 0, 0
        for q in queries:
            m = json.loads(run(local, "match", q["text"], "--json").stdout)
            topic = [os.path.basename(h["locations"][0]["source"]) for h in m["topic"]["hits"]]
            elsewhere = []
            for h in m["elsewhere"]["hits"]:
                d = point_doc[h["point"]]
                if d not in elsewhere and d not in topic:
                    elsewhere.append(d)
            if q["_id"] in qrels:
                local_only.append(ndcg(topic, qrels[q["_id"]]))
                with_elsewhere.append(ndcg(topic + elsewhere, qrels[q["_id"]]))
            else:
                noise += 1
                noise_leaks += bool(m["elsewhere"]["hits"])
        n = len(local_only)
        print(f"[{label}] split {len(local_docs)} local / {len(foreign_docs)} foreign documents ({len(points)} points), {n} relevant and {noise} noise queries")
        print(f"[{label}] nDCG@10 local topic lane only: {sum(local_only) / n:.3f}; local topic lane, then Elsewhere: {sum(with_elsewhere) / n:.3f}")
        print(f"[{label}] noise queries with a foreign point admitted: {noise_leaks} of {noise}")

    def latency(label, sources):
        ms = []
        for q in queries[:20]:
            m = json.loads(run(local, "match", q["text"], "--json").stdout)
            states = {s["outcome"]["state"] for s in m["elsewhere"]["sources"]}
            assert states == {"read"}, m["elsewhere"]["sources"]
            ms.append(m["elsewhere"]["ms"])
        print(f"[{label}] {sources} source(s): added latency p50 {pct(ms, 0.5):.1f} ms, p95 {pct(ms, 0.95):.1f} ms (20 queries)")

    add_source("half")
    judge("chroma")

    def pct(v, p):
        v = sorted(v)
        return v[min(len(v) - 1, int(round(p * (len(v) - 1))))]

    names = ["half"]
    for k in (1, 2, 4):
        while len(names) < k:
            names.append(f"half{len(names)}")
            add_source(names[-1])
        latency("chroma", k)
    for name in names:
        run(local, "source", "rm", name)

    pg_url = start_postgres(points)
    add_source("half", ["--pgvector", pg_url, "--table", "half", "--vector-column", "embedding", "--text-key", "body"])
    judge("pgvector")
    latency("pgvector", 1)
finally:
    server.kill()
    for pg in servers:
        if isinstance(pg, str):
            shutil.rmtree(pg, ignore_errors=True)
        else:
            pg.send_signal(3)  # SIGQUIT: PostgreSQL's immediate shutdown, its backends too
            pg.wait()
