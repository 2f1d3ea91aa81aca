"""`iolens mcp` over stdio, driven by the official SDK's own client as an agent's host would: tools listed with
their schemas, sql and diagnose giving the CLI's numbers, bad calls answered with an error result while the server
keeps serving, paths confined to --root."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from mcp import Client  # the SDK's own client (the mcp extra, in the test extra: a missing install fails, never skips)
from mcp.client.stdio import StdioServerParameters

from support.cli import IOLENS, run_iolens
from support.corpus import LOGS


READ_TOOLS = {"info", "files", "diagnose", "sql", "schema", "compare", "timeline", "jobs"}
LOG = "fill_rank0.darshan"


def server(*args) -> StdioServerParameters:
    env = {k: os.environ[k] for k in ("PYTHONPATH", "IOLENS_LOGS") if k in os.environ}
    return StdioServerParameters(command=IOLENS, args=["mcp", *map(str, args)], env=env)


def run(coro):
    """The client's session, in a thread of its own: a browser test's Playwright (sync API) may hold this thread's
    event loop for the rest of the session."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, asyncio.wait_for(coro, timeout=300)).result()


async def call(client, tool, **arguments):
    result = await client.call_tool(tool, arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    return result.is_error, (result.structured_content if not result.is_error else text)


def cli_json(*args):
    return json.loads(run_iolens(*args).stdout)


def test_an_agent_lists_the_tools_and_gets_the_cli_numbers(logs_dir, tmp_path):
    generated = LOGS / "generated"
    shutil.copy(generated / LOG, tmp_path / LOG)  # a copy in the test's own folder (never in the repo)
    (tmp_path / "cut.darshan").write_bytes((generated / LOG).read_bytes()[:2500])
    (tmp_path / "escape.darshan").symlink_to(LOGS / "pairs" / "aligned.darshan")
    query = ("SELECT rank, op, count(*) AS ops, sum(length) AS bytes FROM segments WHERE module = 'DXT_POSIX' "
             "GROUP BY ALL ORDER BY ALL")

    async def session():
        async with Client(server("--root", tmp_path, "--root", generated)) as client:
            listed = (await client.list_tools()).tools
            assert {t.name for t in listed} == READ_TOOLS  # no run/tune/knobs without --allow-run
            for t in listed:
                assert t.input_schema["type"] == "object" and t.description and t.output_schema
                assert t.annotations.read_only_hint is True
            sql_tool = next(t for t in listed if t.name == "sql")
            assert sql_tool.input_schema["required"] == ["paths", "query"]

            error, got = await call(client, "sql", paths=[LOG], query=query)
            assert not error
            want = cli_json("sql", tmp_path / LOG, query, "--format", "json")
            assert [dict(zip([c["name"] for c in got["columns"]], r)) for r in got["rows"]] == want
            assert got["source"] == {"targets": [str(tmp_path / LOG)], "tables": ["segments"], "query": query}
            assert got["truncated"] is False and got["total"] == len(want)

            error, got = await call(client, "diagnose", path=str(generated / LOG))
            assert not error
            want = cli_json("diagnose", generated / LOG, "--json")
            assert [(i["code"], i["severity"], i["evidence"]["metrics"]) for i in got["insights"]] == \
                   [(i["code"], i["severity"], i["evidence"]["metrics"]) for i in want["insights"]]
            first = got["insights"][0]
            assert first["numbers_from"].startswith(f"insight {first['code']} (number 0 of iolens diagnose --json)")
            error, behind = await call(client, "sql", paths=[LOG], query=first["numbers_from"].split("SQL: ")[1])
            assert dict(behind["rows"]) == first["evidence"]["metrics"]
            # the evidence query runs as given, through the sql tool
            error, evidence = await call(client, "sql", paths=[LOG], query=first["evidence_sql"])
            assert not error and evidence["rows"]

            # bad calls: an error result each, and the next call still works
            for tool, args, said in [
                ("info", {"path": str(LOGS / "pairs" / "aligned.darshan")}, "outside the directories"),
                ("info", {"path": "escape.darshan"}, "outside the directories"),
                ("sql", {"paths": ["/etc/passwd"], "query": "SELECT 1"}, "outside the directories"),
                ("diagnose", {"path": "cut.darshan"}, "cut.darshan"),
                ("sql", {"paths": [LOG], "query": "SELECT * FROM read_csv('/etc/passwd')"}, "refused by DuckDB"),
                ("sql", {"paths": [LOG], "query": "COPY (SELECT 1) TO 'x.csv'"}, "COPY is refused"),
                ("sql", {"paths": [LOG], "query": "SELEC 1"}, "Parser Error"),
                ("sql", {"paths": [LOG], "query": "SELECT 1", "limit": -1}, "limit"),
                ("info", {"path": "missing.darshan"}, "no such file"),
            ]:
                error, text = await call(client, tool, **args)
                assert error and said in text, (tool, args, text)
                error, again = await call(client, "sql", paths=[LOG], query="SELECT count(*) AS n FROM files")
                assert not error and again["rows"] == [[4]]
            assert not (tmp_path / "x.csv").exists()

            # bounded: the caller lowers the rows and the bytes, and is told what was left out
            error, cut = await call(client, "sql", paths=[LOG], query="SELECT * FROM segments", limit=5)
            assert cut["returned"] == 5 and cut["truncated"] and cut["total"] == 1024
            error, small = await call(client, "sql", paths=[LOG], query="SELECT * FROM segments", max_bytes=2000)
            assert len(json.dumps(small)) <= 2000 and small["truncated"] and small["returned"] < 100

            # the operations of a time and rank window, with the query that selects them
            error, window = await call(client, "timeline", path=LOG, start=2.88, end=2.89, rank_from=2, rank_to=3,
                                       limit=1000)
            assert not error and window["rows"]
            cols = [c["name"] for c in window["columns"]]
            for row in window["rows"]:
                r = dict(zip(cols, row))
                assert r["end"] >= 2.88 and r["start"] <= 2.89 and 2 <= r["rank"] <= 3
            error, again = await call(client, "sql", paths=[LOG], query=window["source"]["query"], limit=1000)
            assert again["rows"] == window["rows"]

            error, info = await call(client, "info", path=LOG)
            assert info["summary"] == cli_json("info", tmp_path / LOG, "--json")
            error, schema = await call(client, "schema", paths=[LOG], table="segments")
            assert [c["name"] for c in schema["tables"][0]["columns"]][:4] == ["module", "file_id", "rank",
                                                                               "hostname"]
            error, files = await call(client, "files", path=LOG, limit=1)
            assert files["files"][0]["name"] == "/tmp/ioscratch/fill_rank0.dat" and files["truncated"]
            error, compared = await call(client, "compare", paths=[LOG, "file_per_process.darshan"])
            assert not error, compared
            assert [r["verdict"]["verdict"] for r in compared["comparison"]["runs"]][0] == "baseline"
            error, jobs = await call(client, "jobs", paths=[str(generated)])
            assert not error and len(jobs["jobs"]) == 6 and jobs["source"]["command"] == "iolens jobs --json"
            error, text = await call(client, "jobs", paths=["."])  # the test's folder holds a link out
            assert error and "a link out of the directories" in text

    run(session())


@pytest.mark.smoke
def test_an_agent_reads_a_dftracer_traces_spans(logs_dir):
    """The trace's own tables through the tools: `schema` describes `spans`, `sql` counts them as the CLI does."""
    query = "SELECT cat, name, count(*) AS n FROM spans GROUP BY ALL ORDER BY ALL"

    async def session():
        async with Client(server("--root", LOGS / "dftracer")) as client:
            error, schema = await call(client, "schema", paths=["loader_gz"], table="spans")
            assert not error, schema
            assert [c["name"] for c in schema["tables"][0]["columns"]][:5] == ["span_id", "rank", "tid", "cat", "name"]
            error, got = await call(client, "sql", paths=["loader_gz"], query=query)
            assert not error, got
            want = cli_json("sql", LOGS / "dftracer/loader_gz", query, "--format", "json")
            assert [dict(zip([c["name"] for c in got["columns"]], r)) for r in got["rows"]] == want
            assert got["source"]["tables"] == ["spans"]
            error, everything = await call(client, "schema")
            assert "spans" in {e["table"] for e in everything["tables"]}

    run(session())


def test_allow_run_adds_the_tools_that_execute_commands(logs_dir, tmp_path):
    async def session():
        async with Client(server("--root", tmp_path, "--allow-run")) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert set(listed) == READ_TOOLS | {"run", "tune", "knobs"}
            assert "EXECUTES A COMMAND" in listed["run"].description
            assert listed["run"].annotations.read_only_hint is False
            error, knobs = await call(client, "knobs")
            assert not error and "hdf5.alignment" in {k["name"] for k in knobs["knobs"]}
            error, text = await call(client, "run", command=["true"], output="/tmp/elsewhere.darshan")
            assert error and "outside the directories" in text
            assert not os.path.exists("/tmp/elsewhere.darshan")

    run(session())


def test_a_server_refuses_a_root_that_is_not_a_directory(tmp_path):
    proc = run_iolens("mcp", "--root", tmp_path / "none", check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_http_serves_on_loopback_only(logs_dir, tmp_path):
    import socket
    import subprocess
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([IOLENS, "mcp", "--root", LOGS / "generated", "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        listening = None
        for _ in range(300):
            listening = _listening(port)
            if listening:
                break
            time.sleep(0.1)
        assert listening == ["127.0.0.1"], listening

        async def session():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                assert {t.name for t in (await client.list_tools()).tools} == READ_TOOLS
                error, got = await call(client, "sql", paths=[LOG], query="SELECT count(*) AS n FROM segments")
                assert not error and got["rows"] == [[1024]]

        run(session())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _listening(port: int) -> list:
    """The local addresses listening on a TCP port (from /proc/net/tcp and tcp6)."""
    import ipaddress

    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in fh.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hexport = local.split(":")
                if state == "0A" and int(hexport, 16) == port:  # 0A: LISTEN
                    raw = bytes.fromhex(address)
                    words = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                    found.append(str(ipaddress.ip_address(words)))
    return found


# NOT Darshan: a stand-in preloaded in place of its runtime (none can be installed here), which traces nothing
# and at exit copies the real log IOLENS_TEST_LOG to where Darshan would write it (tests/test_run.py has the
# fuller one).
STAND_IN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((destructor)) static void write_log_at_exit(void) {
    const char *dir = getenv("DARSHAN_LOG_DIR_PATH"), *src = getenv("IOLENS_TEST_LOG");
    if (!dir || !src) return;
    char path[4096], buf[65536];
    snprintf(path, sizeof path, "%s/tester_prog_id0-%d_11-23-4321-1234567890123456789.darshan", dir, (int)getpid());
    FILE *in = fopen(src, "rb"), *out = fopen(path, "wb");
    size_t n;
    if (!in || !out) return;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
}
"""


def test_run_executes_under_darshan_and_the_log_is_queryable(logs_dir, tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc) to build the Darshan stand-in")
    import subprocess

    (tmp_path / "standin.c").write_text(STAND_IN)
    lib = tmp_path / "libdarshan.so"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "standin.c")], check=True)
    root = tmp_path / "runs"
    root.mkdir()
    params = server("--root", root, "--allow-run")
    params.env.update(IOLENS_DARSHAN_LIB=str(lib), IOLENS_TEST_LOG=str(LOGS / "generated" / LOG))

    async def session():
        async with Client(params) as client:
            error, got = await call(client, "run", output="first.darshan",
                                    command=[sys.executable, "-c", "import sys; print('NOT-PROTOCOL'); "
                                                                   "print('to-stderr', file=sys.stderr)"])
            assert not error, got
            assert got["log"] == str(root / "first.darshan") and got["returncode"] == 0
            assert (root / "first.darshan").read_bytes() == (LOGS / "generated" / LOG).read_bytes()
            assert (root / "first.darshan.stdout.txt").read_text() == "NOT-PROTOCOL\n"
            assert got["stderr_tail"] == "to-stderr\n"
            error, again = await call(client, "sql", paths=["first.darshan"], query="SELECT count(*) FROM segments")
            assert not error and again["rows"] == [[1024]]

    run(session())
