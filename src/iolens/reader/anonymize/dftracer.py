"""Anonymised DFTracer trace files: the same JSON lines, with keyed tokens for everything that identifies the user.

A trace names files, hosts and command lines once, in its metadata events (FH, HH, SH: a name and the hash
the other events use), and carries those hashes in every event. The names are replaced as in a Darshan log
(one token per path component, so a relative name still joins its process's working directory), the hashes
by keyed stand-ins of the same length (a tracer's hash of a path would confirm a guessed path), and every
other string the trace holds is judged: a plain setting kept, a path tokenised, anything else replaced. The
events' numbers (times, durations, sizes, offsets, return values, pids, epochs, steps) and the span categories
and names the loop analysis reads are kept.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import zlib

from ...errors import LogError
from ..dftracer import TRACE_SUFFIXES
from ..inputs import refuse_special
from .log import Anonymized
from .report import Report
from .tokens import PYTHON_CHILD_KEPT, Tokens, plain_value, python_child

# the hashes events carry, by the metadata event that names them
HASH_KINDS = {"fhash": "FH", "cwd": "FH", "hhash": "HH", "cmd_hash": "SH", "exec_hash": "SH"}
NAME_KINDS = {"FH": "file", "HH": "host", "SH": "command"}
KEPT_METADATA = {"CM", "thread_name"}  # the time unit; a thread's number
KEPT_STRINGS = {"date"}  # the process's start, as Darshan logs keep start times
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
# A complete event with flat arguments (most of a trace: one system call each), as JSON with no escapes: its
# strings are judged in its own text, without a parse and a dump (the same judgement as `_event`'s)
_KEY = rb'"[A-Za-z_][A-Za-z0-9_]*":'
_FLAT = rb'(?:"[^"\\]*"|-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)'
_PAIRS = rb"(?:" + _KEY + _FLAT + rb"(?:," + _KEY + _FLAT + rb")*)"
FLAT_EVENT = re.compile(rb"\{" + _PAIRS + rb'(?:,"args":\{' + _PAIRS + rb"?\})?\}")
STRING_PAIR = re.compile(rb'"([A-Za-z_][A-Za-z0-9_]*)":"([^"\\]*)"')
# a hash DFTracer 1.0.6-1.0.8 wrote as a decimal number (`"fhash":1234`)
NUMBER_HASH = re.compile(rb'"(' + "|".join(HASH_KINDS).encode() + rb')":([0-9]+)(?=[,}])')
TRACE_NAME = re.compile(r"(?P<head>.*?)(?P<hash>[0-9a-f]{8,})(?P<tail>-(app|preload|fork)\.pfw(\.gz)?)$")
UNCHANGED = ("every event's time stamp, duration, size, offset, return value, flags and ids; pids and thread ids; "
             "span categories and names (the framework's: fetch, step, capture, epoch, ...); epochs and steps; "
             "the time unit")
KEPT = {
    "span categories and names": "the framework's own (dataloader/fetch, compute/step, checkpoint/capture, "
                                 "pipeline/epoch): what the training-loop analysis reads",
    "pids and thread ids": "process numbers: they tie workers to their parent and line a job's two tracers up, "
                           "as Darshan logs keep them",
    "start dates": "when each process started, as Darshan logs keep start times",
}


def anonymize_trace(path, tokens: Tokens) -> Anonymized:
    """The anonymised copy of one DFTracer trace file (`.pfw` or `.pfw.gz`, written as it came): its name,
    report and bytes. A cut-off end (a gzip stream or a line stopped mid-way) is dropped and said; a line that
    is not an event is dropped, never copied blind. LogError (one line) when nothing in it is an event."""
    path = str(path)
    compressed = path.endswith(".gz")
    data, cut = _text(path, compressed)
    report = Report(log_format="DFTracer trace", compression="gzip" if compressed else "plain text",
                    unchanged=UNCHANGED, kept=dict(KEPT))
    lines, events, dropped = [], 0, 0
    seen: dict = {}  # a flat event's `"key":"value"` -> its replacement (the same hashes recur in every event)
    pieces = data.split(b"\n")
    for n, line in enumerate(pieces):
        text = line.strip()
        if not text or text in (b"[", b"]"):
            lines.append(text)
            continue
        comma = b"," if text.endswith(b",") else b""
        text = text[:-1] if comma else text
        fast = _flat_event(text, tokens, report, seen)
        if fast is not None:
            lines.append(fast + comma)
            events += 1
            continue
        try:
            event = json.loads(text)
        except ValueError:
            if n == len(pieces) - 1:
                cut = True  # the last line stops mid-event
            else:
                dropped += 1
            continue
        if not isinstance(event, dict):
            dropped += 1
            continue
        lines.append(json.dumps(_event(event, tokens, report), separators=(",", ":")).encode() + comma)
        events += 1
    if not events and (dropped or cut):
        raise LogError("not a DFTracer trace file iolens can read (no whole event in it)", path)
    if dropped:
        report.dropped.append(f"{dropped:,} line(s) that are not DFTracer events")
    if cut:
        report.dropped.append("the cut-off end of the file (a line or gzip stream stopped mid-way)")
        report.unfinished = True
    body = b"\n".join(lines)
    body += b"\n" if body and not body.endswith(b"\n") else b""  # an empty file (the runtime leaves some) stays so
    body = gzip.compress(body, mtime=0) if compressed and body else body
    name = trace_name(path, tokens)
    report.count("trace_name")
    return Anonymized(name, [(0, body)], report)


def trace_name(path, tokens: Tokens) -> str:
    """`trace-<hash>-app.pfw[.gz]` with a keyed hash (a process's two files keep one); any other name tokenised."""
    base = os.path.basename(str(path))
    m = TRACE_NAME.fullmatch(base)
    if m:
        return m["head"] + tokens.hex_hash("trace-file", m["hash"]) + m["tail"]
    suffix = max((s for s in TRACE_SUFFIXES if base.endswith(s)), key=len, default="")
    return tokens.component(os.fsencode(base[:len(base) - len(suffix)])).decode() + suffix


def _text(path: str, compressed: bool) -> tuple:
    """(bytes, cut?): the file's text; a gzip stream that stops early gives what it held before."""
    refuse_special(path, "a DFTracer trace file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except IsADirectoryError:
        raise LogError("is a directory, not a DFTracer trace file", path) from None
    except OSError as exc:
        raise LogError(exc.strerror or str(exc), path) from None
    if not compressed or not raw:  # an empty file (the runtime leaves some, .gz or not) is empty
        return raw, False
    out, stream = [], zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        while raw:
            out.append(stream.decompress(raw))
            raw = stream.unused_data
            if raw:
                stream = zlib.decompressobj(16 + zlib.MAX_WBITS)  # gzip members one after the other
    except zlib.error:
        if not out:
            raise LogError("not a gzip file", path) from None
        return b"".join(out), True
    return b"".join(out), not stream.eof


def _event(event: dict, tokens: Tokens, report: Report) -> dict:
    kind = event.get("name") if event.get("ph") in (4, "M") else None
    args = event.get("args")
    if isinstance(args, dict):
        if kind in NAME_KINDS:
            event["args"] = _named(kind, args, tokens, report)
        elif kind in KEPT_METADATA:
            event["args"] = {k: _kept(kind, k, v, tokens, report) for k, v in args.items()}
        else:
            event["args"] = {k: _value(k, v, tokens, report) for k, v in args.items()}
    for key, value in list(event.items()):  # the span's category and name, and the event kind, kept
        if key not in ("name", "cat", "args", "ph") and isinstance(value, str):
            event[key] = _string(value, tokens, report)
    return event


def _kept(kind: str, key: str, value, tokens: Tokens, report: Report):
    """An argument of a CM or thread_name event: kept (the time unit), but a hash mapped and a thread name
    that is not the thread's number judged."""
    if key in HASH_KINDS:
        return _hash(key, value, tokens)
    if kind == "thread_name" and key == "name" and not str(value).isdigit():
        return _string(value, tokens, report)
    return value


def _flat_event(text: bytes, tokens: Tokens, report: Report, seen: dict):
    """A complete event with flat arguments rewritten in its own text, or None (metadata events, nested values,
    escapes, anything that is not such an event: `_event` on the parsed line). `seen` remembers each argument's
    replacement."""
    if not FLAT_EVENT.fullmatch(text) or b'"ph":4' in text or b'"ph":"M"' in text:
        return None
    head, sep, args = text.partition(b'"args":{')

    def top(m):  # the event's own strings: its kind, category and name kept, any other judged
        if m.group(1) in (b"name", b"cat", b"ph"):
            return m.group(0)
        return b'"' + m.group(1) + b'":"' + _string(m.group(2).decode(), tokens, report).encode() + b'"'

    def argument(m):
        whole = m.group(0)
        done = seen.get(whole)
        if done is None:
            new = _value(m.group(1).decode(), m.group(2).decode(), tokens, report)
            done = seen[whole] = b'"' + m.group(1) + b'":"' + new.encode() + b'"'
        return done

    def number(m):  # a hash written as a number (DFTracer 1.0.6-1.0.8)
        key = m.group(1).decode()
        return b'"' + m.group(1) + b'":' + str(_hash(key, int(m.group(2)), tokens)).encode()

    return STRING_PAIR.sub(top, head) + sep + NUMBER_HASH.sub(number, STRING_PAIR.sub(argument, args))


def _named(kind: str, args: dict, tokens: Tokens, report: Report) -> dict:
    """An FH/HH/SH event: its name replaced, its value (the hash others use) a keyed stand-in."""
    out = {}
    for k, v in args.items():
        if k == "name" and isinstance(v, str):
            if kind == "FH":
                out[k] = tokens.path(v.encode()).decode()
                report.count("trace_file_names")
            elif kind == "HH":
                out[k] = tokens.hostname(v.encode()).decode()
                report.count("trace_host_names")
            else:
                out[k] = _command_words(v, tokens, report)
        elif k == "value" and isinstance(v, str):
            out[k] = tokens.hex_hash(NAME_KINDS[kind], v)
            report.count("trace_hashes")
        elif k == "value" and _is_number(v):  # DFTracer 1.0.6-1.0.8: the hash as a number
            out[k] = _number_hash(NAME_KINDS[kind], v, tokens)
            report.count("trace_hashes")
        else:
            out[k] = _value(k, v, tokens, report)
    return out


def _hash(key: str, value, tokens: Tokens):
    if _is_number(value):
        return _number_hash(NAME_KINDS[HASH_KINDS[key]], value, tokens)
    return tokens.hex_hash(NAME_KINDS[HASH_KINDS[key]], value) if isinstance(value, str) else value


def _is_number(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number_hash(kind: str, value: int, tokens: Tokens) -> int:
    """A keyed stand-in for a hash DFTracer 1.0.x wrote as a number (an MD5 of the name, cut to 64 bits: it
    would confirm a guessed name), the same for the name's hash in every event."""
    return tokens.number(kind + " hash", value, top=1 << 63)


def _value(key: str, value, tokens: Tokens, report: Report):
    """One argument: a hash mapped, numbers kept, nested tables judged one value at a time, strings judged."""
    if key in HASH_KINDS:
        return _hash(key, value, tokens)
    if isinstance(value, str) and key in NAMED_IN_EVENT:  # DFTracer 1.0.0-1.0.5: names, not hashes
        return NAMED_IN_EVENT[key](value, tokens, report)
    if isinstance(value, dict):  # a setting's name kept; any other key replaced as a string
        return {(k if IDENTIFIER.fullmatch(k) else _string(k, tokens, report)): _value(k, v, tokens, report)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_value(key, v, tokens, report) for v in value]
    if isinstance(value, str) and key not in KEPT_STRINGS:
        return _string(value, tokens, report)
    return value


def _host(value: str, tokens: Tokens, report: Report) -> str:
    report.count("trace_host_names")
    return tokens.hostname(value.encode()).decode()


def _command_words(value: str, tokens: Tokens, report: Report) -> str:
    """A command line DFTracer joined with ';' (an SH event's name, or 1.0.x's start event `cmd`)."""
    words = [w.encode() for w in value.split(";")]
    if python_child(b" ".join(words)):
        report.kept["command line after the program"] = PYTHON_CHILD_KEPT
    report.count("command_words", sum(1 for w in words if w))
    return b";".join(tokens.argv(words)).decode()


def _file_name(value: str, tokens: Tokens, report: Report) -> str:
    report.count("trace_file_names")
    return tokens.path(value.encode()).decode()


# arguments DFTracer 1.0.0-1.0.5 wrote as names where later versions write hashes (df_logger.h at v1.0.5)
NAMED_IN_EVENT = {"hostname": _host, "fname": _file_name, "cmd": _command_words, "exec": _command_words}


def _string(value: str, tokens: Tokens, report: Report) -> str:
    """A plain setting (a number, on/off, a word in capitals such as US or FULL) kept; a path tokenised one
    component at a time; anything else replaced."""
    if plain_value(value.encode()) or re.fullmatch(r"[A-Z][A-Z0-9_]*", value):
        return value
    if value not in report.strings:
        report.strings.add(value)
        report.count("trace_strings")
    if "/" in value:
        return tokens.path(value.encode()).decode()
    return tokens.word("string", value.encode()).decode()
