"""Drives `carrel mcp` with the real Python MCP client over stdio.

Run by `make test` (tools/mcp-client-test.sh) with CARREL_BIN pointing at the
built binary and CARREL_MODELS at the models. Builds its own library from
fixtures/labelled/corpus with `carrel add` first. Every check is an assert
a client would notice: results, errors reaching the client as errors.
"""
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ["CARREL_BIN"]


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


class McpTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        # A shelf of its own: the server holds this one library.
        cls.env = dict(os.environ, CARREL_LIBRARY=str(Path(cls.tmp.name) / "lib"),
                       XDG_DATA_HOME=str(Path(cls.tmp.name) / "data"))
        out = subprocess.run([BIN, "add", "--json", str(ROOT / "fixtures/labelled/corpus")],
                             env=cls.env, capture_output=True, text=True, check=True)
        assert json.loads(out.stdout)["added"] == 13, out.stdout

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @asynccontextmanager
    async def session(self):
        params = StdioServerParameters(command=BIN, args=["mcp"], env=self.env)
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                info = await s.initialize()
                self.assertEqual(info.server_info.name, "carrel")
                yield s

    async def test_tools_are_listed_with_their_id_forms(self):
        async with self.session() as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            self.assertEqual(set(tools), {"libraries", "search", "read", "cite", "verify", "list", "sources"})
            # An agent is told that a lane's tail is not an answer.
            self.assertIn("`below_floor`", tools["search"].description)
            self.assertIn("not an answer", tools["search"].description)
            # Read only, as documented: no tool changes the library.
            for t in tools.values():
                self.assertTrue(t.annotations and t.annotations.read_only_hint, t.name)
            id_schema = json.dumps(tools["read"].input_schema)
            self.assertIn("integer", id_schema)
            self.assertIn("^[0-9]+$", id_schema)

    async def test_sources_say_whether_each_is_read(self):
        # This library has no foreign source: an empty list, said as one,
        # with the library it belongs to (not an error).
        async with self.session() as s:
            r = await s.call_tool("sources", {})
            self.assertFalse(r.is_error, text_of(r))
            v = json.loads(text_of(r))
            self.assertEqual((v["kb"], v["sources"]), ("default", []))
            tools = {t.name: t for t in (await s.list_tools()).tools}
            self.assertIn("Enabled is not the same as read", tools["sources"].description)
        # A source declared with the CLI (its server is down, so its schema
        # was never read): MCP shows the very value the CLI lists, skip
        # reason and sentence, never its own reading of the gates.
        subprocess.run([BIN, "source", "add", "crm", "--pgvector", "postgresql://reader@127.0.0.1:1/crm",
                        "--table", "notes", "--vector-column", "embedding", "--text-key", "body",
                        "--scope", "client=acme"], env=self.env, capture_output=True, text=True, check=True)
        try:
            listed = json.loads(subprocess.run([BIN, "source", "list", "--json"], env=self.env,
                                               capture_output=True, text=True, check=True).stdout)
            async with self.session() as s:
                r = await s.call_tool("sources", {})
                self.assertFalse(r.is_error, text_of(r))
                shown = json.loads(text_of(r))["sources"]
            self.assertEqual(len(shown), 1)
            for key in ("skip_reason", "status", "change", "limit_label"):
                self.assertEqual(shown[0][key], listed[0][key], key)
            self.assertEqual(shown[0]["skip_reason"], {"gate": "not_enabled"})
            self.assertEqual(shown[0]["at"]["kind"], "pgvector")
        finally:
            subprocess.run([BIN, "source", "rm", "crm"], env=self.env, check=True, capture_output=True)

    async def test_search_keeps_lanes_apart_with_attribution(self):
        async with self.session() as s:
            started = time.perf_counter()
            r = await s.call_tool("search", {"query": "how to lubricate a bike chain"})
            elapsed = (time.perf_counter() - started) * 1000
            self.assertFalse(r.is_error)
            v = json.loads(text_of(r))
            self.assertEqual([(s["kb"], s["state"]) for s in v["route"]], [("default", "answered")])
            self.assertEqual(v["subject"]["libraries"][0]["state"], "ready")
            first = v["subject"]["groups"][0]
            self.assertEqual(first["standing"], "hit")
            subject = first["hits"][0]
            self.assertEqual(subject["title"], "Bicycle Chain Maintenance")
            self.assertEqual((subject["kb"], subject["owner"]), ("default", None))
            self.assertTrue(subject["scorer"].startswith("cross-encoder:carrel-ce-v2@"))
            self.assertEqual(first["scorer"], subject["scorer"])
            self.assertTrue(subject["locations"][0]["source"].endswith("bicycle-chain.md"))
            hit = v["topic"]["groups"][0]["hits"][0]
            self.assertEqual(hit["title"], "Bicycle Chain Maintenance")
            self.assertTrue(hit["locations"][0]["source"].endswith("bicycle-chain.md"))
            # Each lane's sub-floor tail comes apart from its hits, never repeating one.
            for lane in ("subject", "topic"):
                groups = {g["standing"]: {h["doc"] for h in g["hits"]} for g in v[lane]["groups"]}
                self.assertFalse(groups.get("hit", set()) & groups.get("below_floor", set()), lane)
            self.assertTrue(hit["heading_path"])
            self.assertTrue(hit["scorer"].startswith("cosine:"))
            # Warm round trip (the first call above loaded the model).
            times = []
            for _ in range(20):
                t = time.perf_counter()
                await s.call_tool("search", {"query": "greens and browns in compost"})
                times.append((time.perf_counter() - t) * 1000)
            times.sort()
            print(f"\nmcp search round trip: first {elapsed:.0f} ms, warm p50 {times[10]:.1f} ms, max {times[-1]:.1f} ms",
                  file=sys.stderr)

    async def test_a_held_back_topic_lane_says_why_and_keeps_its_passage_below_the_floor(self):
        async with self.session() as s:
            r = await s.call_tool("search", {"query": "varroa mites in Martian beehives"})
            self.assertFalse(r.is_error)
            v = json.loads(text_of(r))
            self.assertEqual([h["kb"] for h in v["topic_held_back"]], ["default"])
            self.assertIn("“martian” or “beehives”, 2 of the query's 4 words", v["topic_held_back"][0]["why"])
            standing = {h["title"]: g["standing"] for g in v["topic"]["groups"] for h in g["hits"]}
            self.assertIn(standing.get("Keeping Bees Through Winter"), ("below_floor", "weak"), standing)
            r = await s.call_tool("search", {"query": "varroa mites in winter beehives"})
            v = json.loads(text_of(r))
            self.assertEqual(v["topic_held_back"], [])
            self.assertEqual(v["topic"]["groups"][0]["standing"], "hit")

    async def test_read_accepts_integer_and_digit_ids_and_refuses_unknown(self):
        async with self.session() as s:
            docs = json.loads(text_of(await s.call_tool("list", {})))["documents"]
            chain = next(d for d in docs if d["source"].endswith("bicycle-chain.md"))
            for id_form in (chain["id"], str(chain["id"])):
                r = await s.call_tool("read", {"id": id_form})
                self.assertFalse(r.is_error, text_of(r))
                self.assertIn("wear gauge", text_of(r))
            card = json.loads(text_of(await s.call_tool("read", {"id": chain["id"], "part": "card"})))
            self.assertTrue(card["card"]["what"].startswith("A clean, lubricated chain"))
            bad = await s.call_tool("read", {"id": 999})
            self.assertTrue(bad.is_error)
            self.assertIn("no document with id 999", text_of(bad))
            words = await s.call_tool("read", {"id": "chain"})
            self.assertTrue(words.is_error, "a non-numeric id is refused, not read as empty")

    async def test_passages_and_citations_are_checked(self):
        async with self.session() as s:
            v = json.loads(text_of(await s.call_tool("search", {"query": "when to replace a worn bicycle chain"})))
            hit = v["topic"]["groups"][0]["hits"][0]
            p = json.loads(text_of(await s.call_tool("read", {"id": hit["doc"], "part": "passage", "chunk": hit["chunk"]})))
            self.assertEqual(p["passage"], hit["passage"])
            ok = json.loads(text_of(await s.call_tool("cite", {"id": hit["doc"], "quote": "Replace it when a  wear gauge\nreads 0.5%"})))
            self.assertEqual(ok["status"], "verified")
            self.assertEqual(ok["heading_path"][-1], "Measuring wear")
            missing = json.loads(text_of(await s.call_tool("cite", {"id": hit["doc"], "quote": "replace the chain every 100 km"})))
            self.assertEqual(missing["status"], "not_found")
            self.assertTrue(missing["nearest_passage"])
            other = await s.call_tool("read", {"id": hit["doc"], "part": "passage", "chunk": 999999})
            self.assertTrue(other.is_error)
            unknown = await s.call_tool("cite", {"id": 4242, "quote": "anything"})
            self.assertTrue(unknown.is_error)

    async def test_a_line_is_checked_against_the_whole_library(self):
        async with self.session() as s:
            found = json.loads(text_of(await s.call_tool("verify", {"line": "Replace it when a  wear gauge\nreads 0.5%"})))
            self.assertEqual(found["state"], "found")
            self.assertTrue(found["kb"], "the check says which library it read")
            place = found["places"][0]
            self.assertEqual(place["heading_path"][-1], "Measuring wear")
            self.assertIn("wear gauge", place["passage"])
            # A line the library does not hold is not there, with the nearest passage.
            absent = json.loads(text_of(await s.call_tool("verify", {"line": "replace the chain every 100 km"})))
            self.assertEqual(absent["state"], "not_in_library")
            self.assertTrue(absent["nearest"]["passage"])
            empty = await s.call_tool("verify", {"line": "   "})
            self.assertTrue(empty.is_error)


if __name__ == "__main__":
    unittest.main(verbosity=2)
