"""`iolens export --format perfetto|chrome-json`: the written trace read back with Perfetto's own protobuf
schema (the `perfetto` package) and with `json`, compared operation by operation with the log's segments."""
from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import polars as pl
import pytest

import iolens
from iolens.views.perfetto import assign_lanes, span_slices, trace_ops, write_chrome_json, write_perfetto

from support.cli import IOLENS

pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
LAYER = {"DXT_POSIX": "POSIX", "DXT_MPIIO": "MPI-IO"}


def run(*args):
    return subprocess.run([IOLENS, *map(str, args)], capture_output=True, text=True, timeout=120)


def parse_pftrace(path: Path) -> dict:
    """Slices per track as the trace processor would build them, plus the names it would show."""
    trace = pb2.Trace()
    trace.ParseFromString(path.read_bytes())
    events, arg_names, strings, tracks, processes, metadata = {}, {}, {}, {}, {}, {}
    timeline = []
    for packet in trace.packet:
        if packet.HasField("interned_data"):
            events.update({e.iid: e.name for e in packet.interned_data.event_names})
            arg_names.update({a.iid: a.name for a in packet.interned_data.debug_annotation_names})
            strings.update({s.iid: s.str.decode() for s in packet.interned_data.debug_annotation_string_values})
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            if d.HasField("process"):
                processes[d.uuid] = (d.process.pid, d.process.process_name)
            else:
                tracks[d.uuid] = (d.parent_uuid, d.name, d.sibling_order_rank)
        if packet.HasField("chrome_events"):
            for m in packet.chrome_events.metadata:
                metadata[m.name] = m.int_value if m.HasField("int_value") else m.string_value
        if packet.HasField("track_event"):
            assert packet.trusted_packet_sequence_id == 1
            timeline.append((packet.timestamp, packet.track_event))
    slices, open_ = defaultdict(list), defaultdict(list)
    # the trace processor orders packets by timestamp (stably): slices on a track must then nest (an end
    # closes the innermost open slice); only span tracks hold nested slices
    for ts, ev in sorted(timeline, key=lambda te: te[0]):
        if ev.type == pb2.TrackEvent.TYPE_SLICE_BEGIN:
            assert not open_[ev.track_uuid] or tracks.get(ev.track_uuid, (0, ""))[1].startswith("spans"), \
                "a slice begins on a track whose slice is still open"
            args = {}
            for a in ev.debug_annotations:
                name = arg_names.get(a.name_iid, a.name)
                if a.HasField("string_value_iid"):
                    args[name] = strings[a.string_value_iid]
                elif a.HasField("int_value"):
                    args[name] = a.int_value
                else:
                    args[name] = a.string_value
            open_[ev.track_uuid].append((ts, events.get(ev.name_iid, ev.name), args))
        else:
            t0, name, args = open_[ev.track_uuid].pop()
            slices[ev.track_uuid].append((t0, ts, name, args))
    assert not any(open_.values())
    return {"slices": slices, "tracks": tracks, "processes": processes, "metadata": metadata}


def expected_ops(log: iolens.Log, seg: pl.DataFrame | None = None) -> Counter:
    seg = log.segments if seg is None else seg
    names = log.file_names()
    return Counter((r, LAYER[m], op, names[f], o, ln, round(s * 1e9), max(round(e * 1e9), round(s * 1e9)))
                   for m, f, r, op, o, ln, s, e in seg.select("module", "file_id", "rank", "op", "offset", "length",
                                                              "start", "end").iter_rows())


def written_ops(parsed: dict) -> Counter:
    out = Counter()
    for track, slices in parsed["slices"].items():
        if track not in parsed["tracks"]:
            continue
        parent, layer, _ = parsed["tracks"][track]
        if parent not in parsed["processes"] or layer.startswith("spans"):
            continue  # the job slice, the conflicts, the application's spans
        pid, pname = parsed["processes"][parent]
        layer = layer.split(" #")[0]
        for t0, t1, name, args in slices:
            out[(pid - 1, layer, name, args["file"], args["offset"], args["length"], t0, t1)] += 1
    return out


@pytest.mark.smoke
def test_perfetto_trace_holds_every_operation_once(logs, tmp_path):
    path = logs("generated2/shared_header_conflict")
    proc = run("export", path, "-o", tmp_path, "--format", "perfetto")
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "shared_header_conflict.pftrace"
    assert proc.stdout.strip() == str(out)
    parsed = parse_pftrace(out)
    log = iolens.read(str(path))
    assert written_ops(parsed) == expected_ops(log)
    # one process per rank named after it and its host; MPI-IO sorted above POSIX under each
    hosts = dict(log.dxt_records.select("rank", "hostname").iter_rows())
    assert sorted(parsed["processes"].values()) == [(r + 1, f"rank {r} @ {hosts[r]}") for r in range(4)]
    for uuid, (pid, _) in parsed["processes"].items():
        children = sorted((order, name) for parent, name, order in parsed["tracks"].values() if parent == uuid)
        assert [name for _, name in children] == ["MPI-IO", "POSIX"]
    assert parsed["metadata"]["nprocs"] == 4 and parsed["metadata"]["exe"].startswith("/tmp/shared_header")
    # the cross-rank conflicts on tracks of their own: the concurrent header writes of ranks 1 and 3 among them
    group = next(u for u, (parent, name, _) in parsed["tracks"].items() if name == "cross-rank conflicts (POSIX)")
    conflicts = {(name, args["offset"], args["end_offset"], args["ranks"], args["pairs"])
                 for u, (parent, _, _) in parsed["tracks"].items() if parent == group
                 for _, _, name, args in parsed["slices"][u]}
    assert conflicts == {("write-after-write (concurrent)", 0, 4096, "1 3", 1),
                         ("write-after-write (ordered)", 0, 4096, "0 1 2 3", 5),
                         ("read-after-write (ordered)", 8392704, 9441280, "0 1", 1)}


def test_overlapping_operations_go_on_separate_tracks(logs, tmp_path):
    # pydarshan's dxt.darshan has operations of one rank that overlap in time
    path = logs("public/pydarshan-examples/dxt")
    log = iolens.read(str(path))
    out = tmp_path / "dxt.pftrace"
    write_perfetto(trace_ops(log), out)
    parsed = parse_pftrace(out)  # asserts that slices nest on every track
    assert written_ops(parsed) == expected_ops(log)
    names = [name for _, name, _ in parsed["tracks"].values()]
    assert any(" #2" in n for n in names)
    for track, slices in parsed["slices"].items():
        ends = [t1 for _, t1, _, _ in sorted(slices)]
        starts = [t0 for t0, _, _, _ in sorted(slices)]
        assert all(s >= e for s, e in zip(starts[1:], ends[:-1])), "slices on one track overlap"


def test_lanes_are_as_few_as_the_overlap_needs():
    ops = pl.DataFrame({"rank": [0] * 6 + [1], "module": ["DXT_POSIX"] * 7,
                        "start_ns": [0, 1, 2, 10, 10, 11, 0], "end_ns": [5, 3, 10, 12, 10, 20, 99]})
    # 0-5, 1-3 and 2-10 overlap (3 lanes); at 10 all are free again; 10-12 and 11-20 overlap (2 lanes)
    assert assign_lanes(ops).tolist() == [0, 1, 2, 0, 1, 1, 0]


def test_chrome_json_and_filters(logs, tmp_path):
    path = logs("generated2/shared_header_conflict")
    out = tmp_path / "one_two.json"
    proc = run("export", path, "-o", out, "--format", "chrome-json", "--from", "1", "--to", "2", "--start", "0.1")
    assert proc.returncode == 0, proc.stderr
    trace = json.loads(out.read_text())
    log = iolens.read(str(path))
    seg = log.segments.filter(pl.col("rank").is_between(1, 2) & (pl.col("end") >= 0.1))
    x = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "io"]
    got = Counter((e["pid"] - 1, e["name"], e["args"]["file"], e["args"]["offset"], e["args"]["length"],
                   round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000)) for e in x)
    want = Counter((r, op, f, o, ln, s, e) for r, _, op, f, o, ln, s, e in expected_ops(log, seg))
    assert got == want and len(x) == seg.height
    meta = {(e["name"], e["pid"], e.get("tid")): e["args"] for e in trace["traceEvents"] if e["ph"] == "M"}
    assert meta[("process_name", 2, None)] == {"name": f"rank 1 @ {log.dxt_records['hostname'][0]}"}
    assert {a["name"] for (k, _, _), a in meta.items() if k == "thread_name"} == {"POSIX", "MPI-IO"}
    assert trace["metadata"]["nprocs"] == 4
    # ranks 1 and 2 wrote the header 1-4 ms apart, unsynchronised: an ordered write-after-write
    conflicts = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["cat"] == "conflict"]
    assert [(e["name"], e["args"]["ranks"]) for e in conflicts] == [("write-after-write (ordered)", "1 2")]


def test_file_names_escape(logs, tmp_path):
    log = iolens.read(str(logs("generated/fill_rank0")))
    fid = log.segments["file_id"][0]
    weird = 'out "quoted" \\ back\nline\t<tag> ünï 文件 \x01'
    log.raw.names[fid] = weird
    trace = trace_ops(log)
    write_perfetto(trace, tmp_path / "w.pftrace")
    write_chrome_json(trace, tmp_path / "w.json")
    parsed = parse_pftrace(tmp_path / "w.pftrace")
    files = {args["file"] for slices in parsed["slices"].values() for _, _, _, args in slices if "file" in args}
    assert files == {weird}
    events = json.loads((tmp_path / "w.json").read_text())["traceEvents"]
    assert {e["args"]["file"] for e in events if e["ph"] == "X"} == {weird}


def test_output_naming_and_bad_input(logs, tmp_path, public):
    path = logs("generated/collective_2phase")
    assert run("export", path, "-o", tmp_path / "t.pftrace", "--format", "perfetto").stdout.strip() == str(
        tmp_path / "t.pftrace")
    (tmp_path / "t.txt").write_text("x")
    bad = run("export", path, "-o", tmp_path / "t.txt", "--format", "perfetto")
    assert bad.returncode != 0 and "does not end in .pftrace" in bad.stderr and "Traceback" not in bad.stderr
    nofile = run("export", path, "-o", tmp_path, "--format", "perfetto", "--file", "no-such-file")
    assert nofile.returncode == 2 and nofile.stderr.startswith("iolens: error:")


def test_log_without_dxt_says_so(tmp_path, public):
    no_dxt = next(p for p in sorted(public.glob("**/*.darshan")) if not iolens.read(str(p)).has_dxt)
    proc = run("export", no_dxt, "-o", tmp_path, "--format", "perfetto")
    assert proc.returncode == 2 and "no DXT trace" in proc.stderr and "Traceback" not in proc.stderr


def test_conflicts_table_in_export(logs, tmp_path):
    proc = run("export", logs("generated2/shared_header_conflict"), "-o", tmp_path)
    assert proc.returncode == 0, proc.stderr
    table = pl.read_parquet(tmp_path / "conflicts.parquet")
    rows = {(k, t): (o, e, p, r) for k, t, o, e, p, r in
            table.select("kind", "timing", "offset", "end_offset", "pairs", "ranks").iter_rows()}
    assert rows[("write-after-write", "concurrent")] == (0, 4096, 1, [1, 3])
    assert rows[("write-after-write", "ordered")] == (0, 4096, 5, [0, 1, 2, 3])
    assert rows[("read-after-write", "ordered")][2:] == (1, [0, 1])
    assert set(table["file"]) == {"/tmp/ioscratch/g2/c.dat"}


@pytest.mark.slow
def test_large_trace_parses_back_whole(logs, tmp_path):
    path = logs("generated/scale_1p6M")
    out = tmp_path / "big.pftrace"
    proc = run("export", path, "-o", out, "--format", "perfetto", "-q")
    assert proc.returncode == 0, proc.stderr
    trace = pb2.Trace()
    trace.ParseFromString(out.read_bytes())
    begins = sum(1 for p in trace.packet if p.track_event.type == pb2.TrackEvent.TYPE_SLICE_BEGIN)
    assert begins == 1_600_000 + 1  # every operation and the job slice


def test_too_big_for_a_browser_is_said_and_still_written(logs, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from iolens.cli.main import cli
    from iolens.views import perfetto

    monkeypatch.setattr(perfetto, "BROWSER_LIMIT", 1000)  # as if the trace were past 1 GiB
    out = tmp_path / "big.pftrace"
    result = CliRunner().invoke(cli, ["export", str(logs("generated/fill_rank0")), "-o", str(out), "--format",
                                      "perfetto", "-q"])
    assert result.exit_code == 0, result.output
    assert "trace_processor --httpd" in result.output
    assert written_ops(parse_pftrace(out)) == expected_ops(iolens.read(str(logs("generated/fill_rank0"))))


def test_empty_selection_is_said(logs, tmp_path):
    proc = run("export", logs("generated/fill_rank0"), "-o", tmp_path, "--format", "perfetto", "--start", "1000")
    assert proc.returncode == 0 and "no operation matches" in proc.stderr
    assert written_ops(parse_pftrace(tmp_path / "fill_rank0.pftrace")) == Counter()


def test_lustre_osts_are_slice_arguments(public, tmp_path):
    log = iolens.read(str(public / "pydarshan-examples" / "ior_hdf5_example.darshan"))
    write_perfetto(trace_ops(log), tmp_path / "l.pftrace")
    parsed = parse_pftrace(tmp_path / "l.pftrace")
    on_ranks = [t for t, (parent, _, _) in parsed["tracks"].items() if parent in parsed["processes"]]
    got = Counter((args["offset"], args["length"], args.get("osts")) for t in on_ranks
                  for _, _, _, args in parsed["slices"].get(t, []))
    want = Counter((o, ln, None if osts is None else " ".join(map(str, osts)))
                   for o, ln, osts in log.segments.select("offset", "length", "osts").iter_rows())
    assert got == want and any(k[2] == "106" for k in got)


def written_spans(parsed: dict) -> Counter:
    out = Counter()
    for track, (parent, name, _) in parsed["tracks"].items():
        if name.startswith("spans"):
            pid = parsed["processes"][parent][0]
            out.update((pid - 1, n, args["cat"], args.get("epoch"), args.get("step"), t0, t1)
                       for t0, t1, n, args in parsed["slices"][track])
    return out


def expected_spans(spans: pl.DataFrame) -> Counter:
    return Counter((r, n, c, e, st, round(t0 * 1e9), max(round(t0 * 1e9), round(t1 * 1e9)))
                   for r, n, c, e, st, t0, t1 in spans.select("rank", "name", "cat", "epoch", "step", "start", "end")
                   .iter_rows())


def test_dftracer_spans_are_slices_above_the_io(logs_dir, tmp_path):
    path = logs_dir / "dftracer" / "loader_gz"
    proc = run("export", path, "-o", tmp_path, "--format", "perfetto")
    assert proc.returncode == 0, proc.stderr
    parsed = parse_pftrace(tmp_path / "loader_gz.pftrace")  # asserts that slices nest on every track
    log = iolens.read(str(path))
    assert log.spans.height and written_spans(parsed) == expected_spans(log.spans)
    per_kind = Counter((r, n) for r, n, *_ in written_spans(parsed).elements())
    assert per_kind == Counter(log.spans.select("rank", "name").iter_rows())
    assert written_ops(parsed) == expected_ops(log)  # the I/O slices as before
    # each process's span tracks come before its I/O tracks; a span-only process still has its spans
    for uuid in parsed["processes"]:
        children = sorted((order, name) for parent, name, order in parsed["tracks"].values() if parent == uuid)
        names = [name for _, name in children]
        assert names == sorted(names, key=lambda n: not n.startswith("spans"))
    span_ranks = {r for r, *_ in written_spans(parsed)}
    assert span_ranks == set(log.spans["rank"].to_list())
    # the rank filter keeps the spans of those ranks only
    out = tmp_path / "rank1.json"
    proc = run("export", path, "-o", out, "--format", "chrome-json", "--from", "1", "--to", "1")
    assert proc.returncode == 0, proc.stderr
    events = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("cat") == "span"]
    assert Counter((e["pid"] - 1, e["name"]) for e in events) == Counter(
        log.spans.filter(pl.col("rank") == 1).select("rank", "name").iter_rows())


def test_a_trace_of_spans_alone_exports_them(logs_dir, tmp_path):
    trace = tmp_path / "spans_only"  # loader_plain without its POSIX and STDIO calls: DFTracer's Python API alone
    trace.mkdir()
    for f in (logs_dir / "dftracer" / "loader_plain").glob("*.pfw"):
        lines = f.read_text().splitlines(keepends=True)
        (trace / f.name).write_text("".join(x for x in lines if '"cat":"POSIX"' not in x and '"cat":"STDIO"' not in x))
    log = iolens.read(str(trace))
    assert log.calls.is_empty() and log.spans.height
    proc = run("export", trace, "-o", tmp_path, "--format", "perfetto")
    assert proc.returncode == 0 and "no operation" not in proc.stderr, proc.stderr
    assert written_spans(parse_pftrace(tmp_path / "spans_only.pftrace")) == expected_spans(log.spans)


def test_darshan_trace_has_no_span_tracks(logs, tmp_path):
    path = logs("generated2/shared_header_conflict")
    trace = trace_ops(iolens.read(str(path)))
    assert trace.spans is None
    write_perfetto(trace, tmp_path / "a.pftrace")
    assert not any(name.startswith("spans") for _, name, _ in parse_pftrace(tmp_path / "a.pftrace")["tracks"].values())


def test_overlapping_spans_get_a_lane_and_a_span_only_process_its_own(logs_dir, tmp_path):
    log = iolens.read(str(logs_dir / "dftracer" / "loader_gz"))
    first = log.spans.row(0, named=True)  # the rank-0 `epoch` span, around the others of its thread
    extra = pl.DataFrame([{**first, "name": "straddle", "start": first["end"] - 1e-3, "end": first["end"] + 1.0},
                          {**first, "name": "lonely", "rank": 9, "start": 0.5, "end": 0.5}], schema=log.spans.schema)
    trace = trace_ops(log)
    trace.spans = span_slices(pl.concat([log.spans, extra]))
    write_perfetto(trace, tmp_path / "t.pftrace")
    parsed = parse_pftrace(tmp_path / "t.pftrace")  # asserts nesting on every track
    assert written_spans(parsed) == expected_spans(pl.concat([log.spans, extra]))
    lanes = {name: parsed["processes"][parent] for parent, name, _ in parsed["tracks"].values()
             if name.startswith("spans")}
    assert lanes["spans #2"] == (1, f"rank 0 @ {log.dxt_records['hostname'][0]}")
    assert (10, "rank 9") in parsed["processes"].values()
