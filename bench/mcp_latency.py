"""MCP round trip for `search` on a 1,000-document library, measured the way
an agent pays it: the real Python MCP client calling `carrel mcp` over stdio
and `carrel serve` over streamable HTTP, in one run.

Usage: mcp_latency.py CARREL_BIN BEIR_DIR [--docs 1000] [--queries 200] [--libraries 3]
Writes BEIR_DIR's first N documents as text files, `carrel add`s them into a
scratch library, then times `search` (both lanes, top 10) over the queries
after 5 warm-up calls, on stdio and on HTTP. Copies of the library (renamed,
on the same scratch shelf) then give the cost of each extra library a search
names. Prints markdown lines and JSON.
"""
import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import shutil

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def pct(xs, p):
    xs = sorted(xs)
    return xs[round((len(xs) - 1) * p)]


async def timed(s, queries, kb):
    """Initialize, a first search (model load), 5 warm-ups, then each query."""
    t = time.perf_counter()
    await s.initialize()
    init_ms = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    r = await s.call_tool("search", {"query": queries[0], "kb": kb})
    first_ms = (time.perf_counter() - t) * 1000
    assert not r.is_error, r
    for q in queries[1:6]:
        await s.call_tool("search", {"query": q, "kb": kb})
    times = []
    for q in queries:
        t = time.perf_counter()
        r = await s.call_tool("search", {"query": q + " ", "kb": kb})  # not a cache hit
        times.append((time.perf_counter() - t) * 1000)
        assert not r.is_error, r
    return init_ms, first_ms, times


async def over_stdio(bin_, env, queries, kb):
    params = StdioServerParameters(command=bin_, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            return await timed(s, queries, kb)


async def over_http(url, token, queries, kb):
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as s:
                return await timed(s, queries, kb)


def figures(init_ms, first_ms, times):
    return {
        "initialize_ms": round(init_ms, 1),
        "first_search_ms": round(first_ms, 1),
        "search_calls": len(times),
        "search_p50_ms": round(pct(times, 0.5), 2),
        "search_p95_ms": round(pct(times, 0.95), 2),
        "search_mean_ms": round(statistics.mean(times), 2),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("beir")
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--libraries", type=int, default=3)
    args = ap.parse_args()
    beir = Path(args.beir)
    docs = [json.loads(l) for l in open(beir / "corpus.jsonl")][: args.docs]
    queries = [json.loads(l)["text"] for l in open(beir / "queries.jsonl")]
    queries = (queries * (args.queries // len(queries) + 1))[: args.queries]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        folder.mkdir()
        for d in docs:
            title = d.get("title") or d["_id"]
            (folder / f"{d['_id']}.txt").write_text(f"{title}\n\n{d['text']}\n")
        lib = Path(tmp) / "lib"
        # A shelf of its own, so the server holds only the bench's libraries.
        env = dict(os.environ, CARREL_LIBRARY=str(lib), XDG_DATA_HOME=str(Path(tmp) / "data"))
        t = time.perf_counter()
        out = subprocess.run([args.bin, "add", "--json", str(folder)], env=env,
                             capture_output=True, text=True)
        ingest_s = time.perf_counter() - t
        added = json.loads(out.stdout)["added"]
        # Copies of the library under other names, put on the shelf with
        # `carrel kb add`: the same documents, so each extra library costs
        # what a library of this size costs.
        kbs = ["default"]
        for i in range(1, args.libraries):
            kb, copy = f"copy-{i}", Path(tmp) / f"copy-{i}"
            shutil.copytree(lib, copy)
            subprocess.run([args.bin, "kb", "add", str(copy), "--as", kb], env=env,
                           capture_output=True, check=True)
            kbs.append(kb)
        token = subprocess.run([args.bin, "kb", "token", *kbs], env=env, capture_output=True,
                               text=True, check=True).stdout.strip()
        stdio = figures(*asyncio.run(over_stdio(args.bin, env, queries, ["default"])))
        serve = subprocess.Popen([args.bin, "serve", "--addr", "127.0.0.1:0"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            url = serve.stdout.readline().strip()
            http = figures(*asyncio.run(over_http(url, token, queries, ["default"])))
            per_count = {}
            for n in range(2, len(kbs) + 1):
                per_count[n] = figures(*asyncio.run(over_http(url, token, queries[:50], kbs[:n])))
        finally:
            serve.terminate()
            serve.wait()
    fig = {
        "documents": added,
        "ingest_s": round(ingest_s, 1),
        "stdio": stdio,
        "http": http,
        "http_libraries": {1: {k: http[k] for k in ("search_p50_ms", "search_p95_ms")},
                           **{n: {k: f[k] for k in ("search_p50_ms", "search_p95_ms", "search_calls")}
                              for n, f in per_count.items()}},
    }
    for name, f in (("stdio", stdio), ("HTTP", http)):
        print(f"| MCP search over {name}, {added} docs | p50 {f['search_p50_ms']} ms | p95 {f['search_p95_ms']} ms "
              f"| first call {f['first_search_ms']} ms (model load) |")
    for n, f in per_count.items():
        print(f"| HTTP search naming {n} libraries of {added} docs | p50 {f['search_p50_ms']} ms | "
              f"p95 {f['search_p95_ms']} ms | {f['search_calls']} calls |")
    print(json.dumps(fig, indent=2))


if __name__ == "__main__":
    main()
