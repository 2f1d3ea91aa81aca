"""`iolens sql` as a user runs it on the shared logs: refusals that read and write nothing, output formats,
several logs, a job, a Recorder trace, a fleet store, the prompt, and tables built only when a query names them."""
from __future__ import annotations

import json
import os
import subprocess
import time

import polars as pl
import pytest

from iolens.pipeline.sources import READ_LIGHT, READ_WHOLE, open_target
from iolens.views import tables as cat
from iolens.views.sql import Engine

from support.cli import IOLENS, run_iolens, run_main
from support.corpus import LOGS

SMALL = "generated/fill_rank0.darshan"


def iolens_in(cwd, *args, stdin=None):
    return subprocess.run([IOLENS, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd,
                          input=stdin)


def assert_one_line_exit_2(proc, *words):
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolens: error: "), proc.stderr
    for w in words:
        assert w in lines[0]


# --- refused, and nothing read or written ----------------------------------------------------------------
REFUSED = [
    ("SELECT * FROM read_csv('/etc/passwd')", "refused by DuckDB"),
    ("SELECT * FROM read_csv('{fifo}')", "refused by DuckDB"),
    ("SELECT * FROM read_text('{fifo}')", "refused by DuckDB"),
    ("SELECT * FROM '{fifo}'", "refused by DuckDB"),
    ("SELECT * FROM read_csv('http://127.0.0.1:{port}/x.csv')", "refused by DuckDB"),
    ("SELECT * FROM read_parquet('https://127.0.0.1:{port}/x.parquet')", "refused by DuckDB"),
    ("COPY (SELECT * FROM files) TO '{tmp}/out.csv'", "COPY is refused"),
    ("COPY (SELECT 1) TO ':memory:.wal'", "COPY is refused"),
    ("EXPORT DATABASE '{tmp}/dump'", "EXPORT is refused"),
    ("ATTACH '{tmp}/new.db' AS other", "ATTACH is refused"),
    ("INSTALL httpfs", "INSTALL/LOAD is refused"),
    ("LOAD httpfs", "INSTALL/LOAD is refused"),
    ("SET enable_external_access = true", "SET is refused"),
    ("CREATE SECRET s (TYPE http)", "CREATE is refused"),
]


@pytest.mark.parametrize("query, said", REFUSED)
def test_forbidden_statements_are_refused_reading_and_writing_nothing(logs_dir, tmp_path, probes, query, said):
    log = LOGS / SMALL
    before = sorted(os.listdir(tmp_path))
    proc = iolens_in(tmp_path, "sql", log, query.format(fifo=probes["fifo"], port=probes["port"], tmp=tmp_path))
    assert_one_line_exit_2(proc, said, "queries read only the log's tables")
    time.sleep(0.05)
    assert sorted(os.listdir(tmp_path)) == before  # nothing written, here (the working directory) or elsewhere
    assert probes["opened"] == [] and probes["connected"] == []  # nothing opened, no connection made
    assert "SECRET" not in proc.stderr and "root:" not in proc.stderr


@pytest.mark.parametrize("args, words", [
    (("SELEC count(*) FROM files",), ("Parser Error", "SELEC")),
    (("SELECT * FROM segmnts",), ("segmnts does not exist", "tables here: job, modules, files")),
    (("SELECT 1; SELECT 2",), ("one statement at a time",)),
    (("SELECT 1", "--format", "parquet"), ("--format parquet writes a file",)),
])
def test_a_bad_query_is_one_line_and_exit_2(logs_dir, args, words):
    proc = run_main("sql", LOGS / SMALL, *args, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert all(w in proc.stderr for w in words), proc.stderr


def test_a_missing_or_corrupt_log_is_one_line(logs_dir, tmp_path):
    assert_one_line_exit_2(run_main("sql", tmp_path / "none.darshan", "SELECT 1", check=False), "none.darshan")
    bad = tmp_path / "cut.darshan"
    bad.write_bytes((LOGS / SMALL).read_bytes()[:3000])
    assert_one_line_exit_2(run_main("sql", bad, "SELECT count(*) FROM segments", check=False), "cut.darshan")


# --- what a query reads ----------------------------------------------------------------------------------
LAZY = """
import json, sys
from iolens.pipeline.sources import open_target
from iolens.views.sql import Engine
source = open_target([sys.argv[1]])
engine = Engine(source)
out = {"files": engine.query("SELECT count(*) FROM files").frame.item(),
       "written": int(engine.query("SELECT sum(bytes_written) FROM ranks").frame.item())}
out.update(reads=list(source.reads), dxt_decoded=bool(source._light.raw.dxt), built=sorted(source.built()))
out["segments"] = engine.query("SELECT count(*) FROM segments").frame.item()
out["reads_after"] = list(source.reads)
print(json.dumps(out))
"""


@pytest.mark.slow
def test_a_query_on_files_never_decodes_the_trace(generated):
    # in a process of its own: the 1.6 M-segment table would stay in this one's memory
    proc = subprocess.run([os.sys.executable, "-c", LAZY, str(generated / "scale_1p6M.darshan")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["files"] == 4 and got["written"] > 0
    assert got["reads"] == [READ_LIGHT] and got["dxt_decoded"] is False and got["built"] == ["files", "ranks"]
    assert got["segments"] == 1_600_000 and got["reads_after"] == [READ_LIGHT, READ_WHOLE]


def test_the_catalogue_says_the_types_duckdb_sees(logs_dir, tmp_path):
    """Every table of every kind of target: its columns and types as DuckDB describes the built table."""
    targets = [[LOGS / SMALL], [LOGS / "public/darshan-logs/e3sm_io_heatmaps_and_dxt/e3sm_io_heatmap_only.darshan"],
               [LOGS / "recorder/shared_header"], [LOGS / "workflows/pipeline"], [LOGS / "dftracer/loader_gz"],
               [LOGS / SMALL, LOGS / "generated/file_per_process.darshan"]]
    seen = set()
    for paths in targets:
        engine = Engine(open_target(paths))
        for name in engine.source.names():
            engine.register([name])
            described = engine.con.sql('DESCRIBE "' + name + '"').fetchall()
            entry = cat.describe(name)
            for column, kind, *_ in described:
                if column == "log" and all(c.name != "log" for c in entry.columns):  # the column of several logs
                    assert len(paths) > 1 and kind == "VARCHAR"
                    continue
                said = entry.column(column)
                assert said is not None, (name, column)
                assert kind in said.type.split(" or "), (name, column, kind)
            if name in cat.FIXED:
                assert [c.name for c in engine.describe(name)] == [r[0] for r in described]
            seen.add(entry.name)
        engine.close()
    assert seen >= {"job", "modules", "files", "counters_<MODULE>", "dxt_records", "segments", "conflicts", "lustre",
                    "heatmap", "calls", "spans", "ranks", "insights", "insight_metrics", "processes", "steps"}


# --- output, several logs, kinds of target -------------------------------------------------------------
@pytest.mark.smoke
def test_formats_and_files(logs_dir, tmp_path):
    query = "SELECT rank, op, count(*) AS ops, sum(length) AS bytes FROM segments GROUP BY ALL ORDER BY ALL"
    rows = json.loads(run_iolens("sql", LOGS / SMALL, query, "--format", "json").stdout)
    csv = run_iolens("sql", LOGS / SMALL, query).stdout  # piped: CSV
    assert csv.splitlines()[0] == "rank,op,ops,bytes" and len(csv.splitlines()) == len(rows) + 1
    assert sum(r["bytes"] for r in rows) == 1 << 30  # fill_rank0: 256 MiB filled, then written, at two layers
    for suffix in ("parquet", "csv", "json"):
        out = tmp_path / f"answer.{suffix}"
        assert run_iolens("sql", LOGS / SMALL, query, "-o", out).stdout.strip() == str(out)
    assert pl.read_parquet(tmp_path / "answer.parquet").to_dicts() == rows
    assert json.loads((tmp_path / "answer.json").read_text()) == rows
    assert (tmp_path / "answer.csv").read_text() == csv
    limited = run_iolens("sql", LOGS / SMALL, query, "--limit", "2")
    assert len(limited.stdout.splitlines()) == 3 and f"2 of {len(rows)} rows" in limited.stderr
    piped = iolens_in(tmp_path, "sql", LOGS / SMALL, stdin="SELECT count(*) AS n FROM files")
    assert piped.returncode == 0 and piped.stdout.splitlines() == ["n", "4"]


def test_several_logs_carry_the_log_and_a_job_its_processes(logs_dir):
    logs = [LOGS / SMALL, LOGS / "generated/file_per_process.darshan"]
    rows = json.loads(run_main("sql", *logs, "SELECT log, count(*) AS n FROM segments GROUP BY log ORDER BY log",
                               "--format", "json").stdout)
    assert rows == [{"log": str(logs[1]), "n": 512}, {"log": str(logs[0]), "n": 1024}]
    job = LOGS / "workflows/pipeline"
    steps = json.loads(run_main("sql", job, "SELECT step, exe, processes, ranks FROM steps ORDER BY step",
                                "--format", "json").stdout)
    assert [(s["step"], s["exe"], s["processes"]) for s in steps] == [(0, "seqwrite", 4), (1, "seq_reader", 1),
                                                                      (2, "python3", 1)]
    written = json.loads(run_main("sql", job, "SELECT p.step, sum(r.bytes_written) AS bytes FROM ranks r JOIN "
                                  "processes p USING (rank) WHERE r.layer = 'POSIX' GROUP BY ALL ORDER BY ALL",
                                  "--format", "json").stdout)
    assert written[0] == {"step": 0, "bytes": 4 * 8 << 20}  # 4 ranks x 8 MiB (workflows/README.md)
    labels = json.loads(run_main("sql", job, "SELECT label, role FROM processes WHERE step = 0 ORDER BY rank",
                                 "--format", "json").stdout)
    assert [p["label"] for p in labels] == ["rank 0", "rank 1", "rank 2", "rank 3"]  # as the findings name them


def test_a_recorder_trace_has_its_calls(logs_dir):
    rows = json.loads(run_main("sql", LOGS / "recorder/shared_header",
                               "SELECT layer, count(*) AS n FROM calls GROUP BY layer ORDER BY layer",
                               "--format", "json").stdout)
    assert {r["layer"] for r in rows} >= {"POSIX"} and all(r["n"] > 0 for r in rows)


def test_a_fleet_store_gives_its_own_tables(logs_dir, tmp_path):
    store = tmp_path / "store"
    logs = [LOGS / SMALL, LOGS / "generated/file_per_process.darshan"]
    run_iolens("fleet", "build", *logs, "-o", store, "-q")
    rows = json.loads(run_main("sql", store, "SELECT path, nprocs FROM jobs ORDER BY path", "--format",
                               "json").stdout)
    assert rows == [{"path": str(logs[1]), "nprocs": 8}, {"path": str(logs[0]), "nprocs": 8}]
    schema = json.loads(run_main("sql", store, "--schema", "--format", "json").stdout)
    assert [t["table"] for t in schema] == ["jobs"]  # no errors table: both logs were read
    assert {"path", "nprocs", "io_time", "headline"} <= {c["name"] for c in schema[0]["columns"]}


def test_schema_without_a_target_is_the_catalogue(logs_dir):
    entries = json.loads(run_main("sql", "--schema", "--format", "json").stdout)
    assert [e["table"] for e in entries] == [t.name for t in cat.CATALOGUE + cat.FLEET_CATALOGUE]
    text = run_main("sql", LOGS / SMALL, "--schema").stdout
    assert "segments  one row per traced operation" in text and "counters_MPIIO" in text


def test_the_prompt_keeps_the_tables_and_survives_a_bad_query(logs_dir):
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen([IOLENS, "sql", str(LOGS / SMALL)], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    out = b""

    def read_until(marker: bytes, timeout=60):
        nonlocal out
        end = time.time() + timeout
        while marker not in out and time.time() < end:
            if not select.select([master], [], [], 0.2)[0]:
                continue
            try:
                out += os.read(master, 65536)
            except OSError:  # the prompt ended
                break
        return marker in out

    try:
        assert read_until(b"iolens> ")
        os.write(master, b"SELECT count(*) AS n\n  FROM segments;\n")
        assert read_until(b"1 row")
        os.write(master, b"SELECT * FROM read_text('/etc/passwd');\n")
        assert read_until(b"refused by DuckDB")
        os.write(master, b"SELECT sum(length) AS total FROM segments WHERE op = 'write';\n")
        assert read_until(b"1073741824")
        os.write(master, b".quit\n")
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        os.close(master)
    assert b"1024" in out and b"root:" not in out


def test_other_subcommands_do_not_import_duckdb_or_mcp(logs_dir):
    code = ("import sys\nfrom iolens.cli.main import main\n"
            f"try:\n    main(['info', {str(LOGS / SMALL)!r}])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('duckdb', 'mcp', 'pydantic') if m in sys.modules))")
    proc = subprocess.run([os.sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("target, kind", [("generated/fill_rank0.darshan", "Darshan log"),
                                          ("recorder/small_records", "Recorder trace"),
                                          ("dftracer/loader_plain", "DFTracer trace"),
                                          ("workflows/loader", "folder of one job's logs")])
def test_help_names_every_kind_of_target_it_reads(logs_dir, target, kind):
    """`sql --help` listed Darshan logs, Recorder folders and job folders, not the DFTracer traces docs/sql.md
    queries."""
    helptext = " ".join(run_main("sql", "--help").stdout.split())
    assert kind in helptext
    out = run_main("sql", logs_dir / target, "SELECT count(*) AS n FROM files").stdout.splitlines()
    assert out[0] == "n" and int(out[1]) > 0
