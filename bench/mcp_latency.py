"""MCP round trip for `search` on a 1,000-document library, measured the way
an agent pays it: the real Python MCP client calling `carrel mcp` over stdio.

Usage: mcp_latency.py CARREL_BIN BEIR_DIR [--docs 1000] [--queries 200]
Writes BEIR_DIR's first N documents as text files, `carrel add`s them into a
scratch library, then times `search` (both lanes, top 10) over the queries
after 5 warm-up calls. Prints a markdown line and JSON.
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

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def pct(xs, p):
    xs = sorted(xs)
    return xs[round((len(xs) - 1) * p)]


async def measure(bin_, env, queries):
    params = StdioServerParameters(command=bin_, args=["mcp"], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            t = time.perf_counter()
            await s.initialize()
            init_ms = (time.perf_counter() - t) * 1000
            t = time.perf_counter()
            r = await s.call_tool("search", {"query": queries[0]})
            first_ms = (time.perf_counter() - t) * 1000
            assert not r.is_error, r
            for q in queries[1:6]:
                await s.call_tool("search", {"query": q})
            times = []
            for q in queries:
                t = time.perf_counter()
                r = await s.call_tool("search", {"query": q + " "})  # not a cache hit
                times.append((time.perf_counter() - t) * 1000)
                assert not r.is_error, r
            return init_ms, first_ms, times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bin")
    ap.add_argument("beir")
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--queries", type=int, default=200)
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
        env = dict(os.environ, CARREL_LIBRARY=str(Path(tmp) / "lib"))
        t = time.perf_counter()
        out = subprocess.run([args.bin, "add", "--json", str(folder)], env=env,
                             capture_output=True, text=True)
        ingest_s = time.perf_counter() - t
        added = json.loads(out.stdout)["added"]
        init_ms, first_ms, times = asyncio.run(measure(args.bin, env, queries))
    fig = {
        "documents": added,
        "ingest_s": round(ingest_s, 1),
        "initialize_ms": round(init_ms, 1),
        "first_search_ms": round(first_ms, 1),
        "search_calls": len(times),
        "search_p50_ms": round(pct(times, 0.5), 2),
        "search_p95_ms": round(pct(times, 0.95), 2),
        "search_mean_ms": round(statistics.mean(times), 2),
    }
    print(f"| MCP search, {added} docs | p50 {fig['search_p50_ms']} ms | p95 {fig['search_p95_ms']} ms "
          f"| first call {fig['first_search_ms']} ms (model load) |")
    print(json.dumps(fig, indent=2))


if __name__ == "__main__":
    main()
