"""Drives `carrel serve` (MCP over streamable HTTP) and `carrel mcp` (stdio)
holding several libraries, with the real Python MCP client.

Two libraries by two owners hold notes on the same five books from opposite
positions (fixtures/attribution). Checked as a client would notice: a token
opens only its libraries and anything else is a 401 with a sentence; every
hit names the library and owner that really hold it (each is cited back in
that library); a search scoped to one library never returns the other's; an
unknown library, a missing `kb` and a library deleted while the hub runs are
errors or `unavailable` with a sentence, never an empty result.
"""
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.error
import urllib.request
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ["CARREL_BIN"]
FIXTURES = ROOT / "fixtures/attribution"
OWNERS = {"admirers": "Ada Moreau", "skeptics": "Ben Okafor"}
# One question per book, each asked of both libraries.
QUESTIONS = [
    "Thoreau's cabin at Walden Pond and simple living",
    "Machiavelli on cruelty and whether a prince should be feared or loved",
    "Mill's harm principle and free speech",
    "who is responsible for the murders in Frankenstein",
    "the invisible hand in the Wealth of Nations",
]


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def run(env, *args):
    out = subprocess.run([BIN, *args], env=env, capture_output=True, text=True)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    return out.stdout


def hits(lane):
    """Every hit of a shared lane, with the group it is in."""
    for group in lane["groups"]:
        for hit in group["hits"]:
            yield group, hit


@contextmanager
def serving(env, *kbs):
    """`carrel serve` on a free loopback port; yields its URL."""
    proc = subprocess.Popen([BIN, "serve", *kbs, "--addr", "127.0.0.1:0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() is not None else "")
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def post_initialize(url, token=None):
    """A raw MCP initialize POST: the status and body a client would get."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, body, headers), timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class HubTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        tmp = Path(cls.tmp.name)
        # A shelf of its own, and a library in use that does not exist yet.
        cls.env = dict(os.environ, XDG_DATA_HOME=str(tmp / "data"), CARREL_LIBRARY=str(tmp / "in-use"))
        for kb, owner in OWNERS.items():
            run(cls.env, "kb", "create", kb, "--owner", owner, "--dir", str(tmp / kb))
            added = json.loads(run(cls.env, "--kb", kb, "add", "--json", str(FIXTURES / kb)))
            assert added["added"] == 5, added
        cls.both = run(cls.env, "kb", "token", "admirers", "skeptics", "--label", "both").strip()
        cls.admirers_only = run(cls.env, "kb", "token", "admirers").strip()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @asynccontextmanager
    async def http(self, url, token):
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                async with ClientSession(read, write) as s:
                    info = await s.initialize()
                    self.assertEqual(info.server_info.name, "carrel")
                    yield s

    def stdio(self):
        return self.stdio_on(self.env)

    async def call(self, s, tool, args):
        r = await s.call_tool(tool, args)
        self.assertFalse(r.is_error, text_of(r))
        return json.loads(text_of(r))

    async def error(self, s, tool, args):
        r = await s.call_tool(tool, args)
        self.assertTrue(r.is_error, f"{tool} {args} should fail: {text_of(r)[:300]}")
        return text_of(r)

    def test_a_missing_or_wrong_token_is_a_401_with_a_sentence(self):
        with serving(self.env) as (url, proc):
            status, body = post_initialize(url)
            self.assertEqual(status, 401)
            self.assertIn("no read token", body)
            self.assertIn("carrel kb token", body)
            status, body = post_initialize(url, "carrel_" + "0" * 64)
            self.assertEqual(status, 401)
            self.assertIn("opens no library", body)
            status, _ = post_initialize(url, self.both)
            self.assertEqual(status, 200)
            proc.terminate()
            log = proc.stderr.read()
        # Each refusal is logged with the peer, and no token ever is.
        self.assertEqual(log.count("refused POST /mcp from 127.0.0.1"), 2, log)
        self.assertNotIn(self.both, log)

    async def test_a_token_reads_only_its_libraries(self):
        with serving(self.env) as (url, _):
            async with self.http(url, self.admirers_only) as s:
                libs = await self.call(s, "libraries", {})
                self.assertEqual([(l["kb"], l["owner"], l["documents"]) for l in libs],
                                 [("admirers", "Ada Moreau", 5)])
                err = await self.error(s, "search", {"query": "Walden", "kb": ["skeptics"]})
                self.assertIn("no library `skeptics`", err)
                self.assertIn("`admirers`", err)
                self.assertNotIn("`skeptics`", err.split("ask are:")[1])
                # One library served to this token: `kb` may be left out.
                v = await self.call(s, "search", {"query": QUESTIONS[0]})
                self.assertEqual({h["kb"] for _, h in hits(v["topic"])}, {"admirers"})

    async def test_every_hit_is_attributed_to_the_library_that_holds_it(self):
        misattributed, checked = [], 0
        with serving(self.env) as (url, _):
            async with self.http(url, self.both) as s:
                libs = {l["kb"]: l for l in await self.call(s, "libraries", {})}
                self.assertEqual({k: l["owner"] for k, l in libs.items()}, OWNERS)
                for q in QUESTIONS:
                    v = await self.call(s, "search", {"query": q, "kb": "*"})
                    self.assertEqual([(r["kb"], r["state"]) for r in v["route"]],
                                     [("admirers", "answered"), ("skeptics", "answered")])
                    found = {h["kb"] for _, h in hits(v["topic"])}
                    self.assertEqual(found, set(OWNERS), f"{q}: both sides discuss it")
                    for lane in ("subject", "topic"):
                        # Local libraries share their scorers, so each standing is one list.
                        standings = [g["standing"] for g in v[lane]["groups"]]
                        self.assertEqual(len(standings), len(set(standings)), standings)
                        for _, h in hits(v[lane]):
                            checked += 1
                            if h["owner"] != OWNERS[h["kb"]]:
                                misattributed.append((q, h["kb"], h["owner"]))
                                continue
                            quote = h["passage"][:120] if lane == "topic" else h["title"]
                            c = await self.call(s, "cite", {"kb": h["kb"], "id": h["doc"], "quote": quote})
                            if lane == "topic" and c["status"] != "verified":
                                misattributed.append((q, h["kb"], h["doc"], quote))
                            if (c["kb"], c["owner"], c["title"]) != (h["kb"], h["owner"], h["title"]):
                                misattributed.append((q, h["kb"], h["doc"], c["title"]))
                    # Scoped: the other library is never asked, so never cited.
                    for kb in OWNERS:
                        scoped = await self.call(s, "search", {"query": q, "kb": [kb]})
                        self.assertEqual([r["kb"] for r in scoped["route"]], [kb])
                        for lane in ("subject", "topic"):
                            self.assertEqual({h["kb"] for _, h in hits(scoped[lane])} - {kb}, set(), q)
        print(f"\nattribution: {len(misattributed)} misattributed of {checked} hits over "
              f"{len(QUESTIONS)} questions in 2 libraries", file=sys.stderr)
        self.assertEqual(misattributed, [])
        self.assertGreater(checked, 2 * len(QUESTIONS))

    async def test_unknown_and_unnamed_libraries_are_errors_that_list_the_known(self):
        with serving(self.env) as (url, _):
            async with self.http(url, self.both) as s:
                err = await self.error(s, "search", {"query": "Walden", "kb": ["admirers", "nope"]})
                self.assertIn("no library `nope`", err)
                self.assertIn("`admirers`, `skeptics`", err)
                err = await self.error(s, "search", {"query": "Walden"})
                self.assertIn('"*"', err)
                self.assertIn("`admirers`, `skeptics`", err)
                err = await self.error(s, "search", {"query": "Walden", "kb": []})
                self.assertIn("name the library", err)
                err = await self.error(s, "read", {"id": 1})
                self.assertIn("name the library", err)

    async def test_a_library_deleted_while_the_hub_runs_is_unavailable_not_empty(self):
        tmp = Path(self.tmp.name)
        run(self.env, "kb", "create", "doomed", "--owner", "Cy", "--dir", str(tmp / "doomed"))
        run(self.env, "--kb", "doomed", "add", str(FIXTURES / "admirers/walden.md"))
        token = run(self.env, "kb", "token", "doomed", "admirers").strip()
        try:
            with serving(self.env, "doomed", "admirers") as (url, _):
                async with self.http(url, token) as s:
                    v = await self.call(s, "search", {"query": QUESTIONS[0], "kb": ["doomed"]})
                    self.assertEqual(v["route"][0]["state"], "answered")
                    shutil.rmtree(tmp / "doomed")
                    err = await self.error(s, "search", {"query": QUESTIONS[0], "kb": ["doomed"]})
                    self.assertIn("is gone", err)
                    v = await self.call(s, "search", {"query": QUESTIONS[0], "kb": ["doomed", "admirers"]})
                    self.assertEqual([(r["kb"], r["state"]) for r in v["route"]],
                                     [("doomed", "unavailable"), ("admirers", "answered")])
                    self.assertIn("is gone", v["route"][0]["reason"])
                    libs = {l["kb"]: l for l in await self.call(s, "libraries", {})}
                    self.assertEqual(libs["doomed"]["state"], "unavailable")
                    err = await self.error(s, "read", {"kb": "doomed", "id": 1})
                    self.assertIn("is gone", err)
        finally:
            run(self.env, "kb", "forget", str(tmp / "doomed"))

    async def test_stdio_serves_the_shelf_with_the_same_kb_parameter(self):
        async with self.stdio() as s:
            libs = await self.call(s, "libraries", {})
            ready = {l["kb"]: l["owner"] for l in libs if l["state"] == "ready"}
            self.assertEqual(ready, OWNERS)
            # The library in use was never created: listed, with why.
            missing = [l for l in libs if l["state"] == "unavailable"]
            self.assertEqual(len(missing), 1)
            self.assertIn("carrel add", missing[0]["reason"])
            v = await self.call(s, "search", {"query": QUESTIONS[3], "kb": ["skeptics", "admirers"]})
            self.assertEqual([r["kb"] for r in v["route"]], ["skeptics", "admirers"])
            err = await self.error(s, "search", {"query": "x", "kb": ["nope"]})
            self.assertIn("`admirers`, `skeptics`", err)

    async def test_a_library_on_another_hub_is_searched_there_and_its_scorer_kept_apart(self):
        # The reader's machine: its own library and, on its shelf, `skeptics`
        # served by the hub above with another cross-encoder (carrel-ce-v1).
        tmp = Path(self.tmp.name)
        reader = dict(os.environ, XDG_DATA_HOME=str(tmp / "reader-data"), CARREL_LIBRARY=str(tmp / "reader-in-use"))
        run(reader, "kb", "create", "admirers", "--owner", "Ada Moreau", "--dir", str(tmp / "reader-admirers"))
        run(reader, "--kb", "admirers", "add", str(FIXTURES / "admirers"))
        v1 = str(Path(os.environ["CARREL_MODELS"]) / "carrel-ce-v1")
        serve_env = dict(self.env, CARREL_RERANKER=v1)
        with serving(serve_env, "skeptics") as (url, proc):
            # A token that does not open the library is refused when added.
            bad = subprocess.run([BIN, "kb", "add-remote", url, "skeptics", "--token", self.admirers_only],
                                 env=reader, capture_output=True, text=True)
            self.assertEqual(bad.returncode, 1, bad.stdout)
            self.assertIn("refused the read token (HTTP 401)", bad.stderr)
            self.assertNotIn("ERROR", bad.stderr, "one sentence, no transport log")
            out = run(reader, "kb", "add-remote", url, "skeptics", "--token", self.both)
            self.assertIn("kept by Ben Okafor, 5 documents", out)
            shelf = json.loads(run(reader, "kb", "list", "--json"))
            there = next(l for l in shelf if l.get("url") == url)
            self.assertEqual((there["state"], there["identity"]["owner"]), ("ready", "Ben Okafor"))
            self.assertNotIn(self.both, json.dumps(shelf), "the token is never listed")
            # An @kb: question reads both, each quote checked where it lives
            # (quotes, not the built-in model: this is about where they come from).
            a = json.loads(run(reader, "ask", "--json", "--answerer", "extractive", f"@kb:admirers @kb:skeptics {QUESTIONS[2]}"))
            self.assertEqual([(r["kb"], r["state"]) for r in a["route"]],
                             [("admirers", "answered"), ("skeptics", "answered")])
            self.assertEqual(a["outcome"]["check"]["verified"], a["outcome"]["check"]["statements"], a["outcome"])
            cited = {p["kb"]: p["owner"] for p in a["context"]
                     if any(p["n"] in st["citations"] for st in a["outcome"]["statements"])}
            self.assertEqual(cited, OWNERS, "both libraries quoted, each under its owner")
            async with self.stdio_on(reader) as s:
                libs = {l["kb"]: l for l in await self.call(s, "libraries", {})}
                self.assertEqual((libs["skeptics"]["owner"], libs["skeptics"]["documents"]), ("Ben Okafor", 5))
                self.assertIn("carrel-ce-v1@", libs["skeptics"]["scorers"]["cross_encoder"]["id"])
                v = await self.call(s, "search", {"query": QUESTIONS[2], "kb": ["admirers", "skeptics"]})
                self.assertEqual([(r["kb"], r["state"]) for r in v["route"]],
                                 [("admirers", "answered"), ("skeptics", "answered")])
                # One embedder on both machines: the topic lane's hits share a list.
                topic = [g for g in v["topic"]["groups"] if g["standing"] == "hit"]
                self.assertEqual(len(topic), 1, topic)
                self.assertEqual({h["kb"] for h in topic[0]["hits"]}, {"admirers", "skeptics"})
                # Two cross-encoders: their hits are never in one list.
                for g in v["subject"]["groups"]:
                    self.assertEqual({h["scorer"] for h in g["hits"]}, {g["scorer"]}, g)
                    if "carrel-ce-v1" in g["scorer"]:
                        self.assertEqual({h["kb"] for h in g["hits"]}, {"skeptics"})
                scorers = {g["scorer"].split("@")[0] for g in v["subject"]["groups"] if g["standing"] == "hit"}
                self.assertEqual(scorers, {"cross-encoder:carrel-ce-v2", "cross-encoder:carrel-ce-v1"}, v["subject"])
                # Reading and citing pass through to the hub that holds it.
                hit = next(h for _, h in hits(v["topic"]) if h["kb"] == "skeptics")
                c = await self.call(s, "cite", {"kb": "skeptics", "id": hit["doc"], "quote": hit["passage"][:80]})
                self.assertEqual((c["status"], c["kb"], c["owner"]), ("verified", "skeptics", "Ben Okafor"))
                proc.terminate()
                proc.wait(timeout=30)
                # The hub is down: said so, never an empty result.
                err = await self.error(s, "search", {"query": QUESTIONS[2], "kb": ["skeptics"]})
                self.assertIn("could not be reached", err)
                v = await self.call(s, "search", {"query": QUESTIONS[2], "kb": ["admirers", "skeptics"]})
                self.assertEqual([(r["kb"], r["state"]) for r in v["route"]],
                                 [("admirers", "answered"), ("skeptics", "unavailable")])
                self.assertIn("could not be reached", v["route"][1]["reason"])
                self.assertEqual({h["kb"] for _, h in hits(v["topic"])}, {"admirers"})
            a = json.loads(run(reader, "ask", "--json", "--answerer", "extractive", f"@kb:admirers @kb:skeptics {QUESTIONS[2]}"))
            self.assertEqual(a["route"][1]["state"], "unavailable")
            self.assertIn("could not be reached", a["route"][1]["reason"])
            self.assertEqual({p["kb"] for p in a["context"]}, {"admirers"})
        shelf = json.loads(run(reader, "kb", "list", "--json"))
        there = next(l for l in shelf if l.get("url") == url)
        self.assertEqual(there["state"], "unreachable")
        self.assertIn("could not be reached", there["reason"])
        self.assertIsNotNone(there["last_ok"], "when it last answered")

    @asynccontextmanager
    async def stdio_on(self, env):
        params = StdioServerParameters(command=BIN, args=["mcp"], env=env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                yield s


if __name__ == "__main__":
    unittest.main(verbosity=2)
