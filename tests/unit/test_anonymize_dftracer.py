"""The DFTracer anonymiser's two paths on hand-built event lines: a flat event rewritten in its own text says what
the parsed event says (the same tokens and stand-ins), and only whole flat events take the text path."""
from __future__ import annotations

import json

import pytest

from iolens.reader.anonymize import Key, Report, Tokens
from iolens.reader.anonymize.dftracer import _event, _flat_event

LINES = [
    '{"id":844,"name":"read","cat":"POSIX","type":3,"pid":28438,"tid":28438,"ts":1795694446147577,"dur":44,'
    '"ph":1,"args":{"hhash":"6882804a826580cd","ret":65536,"count":65536,"fhash":"8edd488e4fb53ff2"}}',
    '{"id":850,"name":"fetch","cat":"dataloader","type":6,"pid":28438,"tid":28438,"ts":1795694446147535,'
    '"dur":228,"ph":1,"args":{"hhash":"6882804a826580cd","epoch":0,"image":"/home/alice/imgs/cat.png",'
    '"label":"alice-secret","unit":"US","ok":true,"none":null,"size":-1.5e3}}',
    '{"id":1,"name":"step","cat":"compute","ph":"X","pid":1,"tid":1,"ts":5,"dur":1,"host":"node042","args":{}}',
    '{"id":2,"name":"step","cat":"compute","ph":1,"pid":1,"tid":1,"ts":5,"dur":1}',
    # DFTracer 1.0.8: hashes as numbers (chrome_writer.cpp at v1.0.8); 1.0.5: names (df_logger.h at v1.0.5)
    '{"id":7,"name":"read","cat":"POSIX","pid":4000,"tid":4000,"ts":17,"dur":3,"ph":"X","args":{"hhash":'
    '1311768467463790320,"fhash":12345678901234567890,"fd":3,"count":4096,"ret":4096,"level":2,"p_idx":10}}',
    '{"id":3,"name":"read","cat":"POSIX","pid":5000,"tid":5000,"ts":17,"dur":3,"ph":"X","args":{"hostname":'
    '"node042","fname":"/home/alice/img_0.npz","fd":3,"ret":4096}}',
]
NOT_FLAT = [
    '{"name":"FH","cat":"dftracer","ph":4,"pid":1,"tid":1,"args":{"name":"/home/alice/x","value":"ab12cd34ab12cd34"}}',
    '{"id":3,"name":"end","cat":"dftracer","ph":1,"pid":1,"tid":1,"ts":1,"args":{"cfg":{"log_file":"/home/a/t"}}}',
    '{"id":4,"name":"x","cat":"app","ph":1,"pid":1,"tid":1,"ts":1,"args":{"list":["/home/alice"]}}',
    '{"id":5,"name":"x","cat":"app","ph":1,"pid":1,"tid":1,"ts":1,"args":{"q":"say \\"hi\\""}}',
    '{user: alice}}',
    '{"id":6,"name":"read","cat":"POSIX","ph":1,"args":{"fhash":"8edd488e4fb53ff2"',
]


def tokens():
    return Tokens(Key(b"k" * 32))


@pytest.mark.parametrize("line", LINES)
def test_a_flat_event_in_its_own_text_says_what_the_parsed_event_says(line):
    text = _flat_event(line.encode(), tokens(), Report(), {})
    assert text is not None
    assert json.loads(text) == _event(json.loads(line), tokens(), Report())
    assert b"alice" not in text and b"node042" not in text and b"8edd488e4fb53ff2" not in text
    assert b"12345678901234567890" not in text and b"1311768467463790320" not in text


def test_numeric_hashes_get_the_stand_ins_of_their_names():
    """DFTracer 1.0.8's FH event names a file by a number; the calls carry that number: one stand-in for both."""
    tok = tokens()
    fh = _event({"id": 5, "name": "FH", "cat": "dftracer", "pid": 1, "tid": 1, "ph": "M",
                 "args": {"hhash": 99, "name": "/home/alice/x.npz", "value": 12345678901234567890}}, tok, Report())
    call = json.loads(_flat_event(b'{"id":6,"name":"read","cat":"POSIX","pid":1,"tid":1,"ts":5,"dur":1,"ph":"X",'
                                  b'"args":{"hhash":99,"fhash":12345678901234567890,"ret":1}}', tok, Report(), {}))
    assert isinstance(fh["args"]["value"], int) and fh["args"]["value"] != 12345678901234567890
    assert call["args"]["fhash"] == fh["args"]["value"] and call["args"]["hhash"] == fh["args"]["hhash"] != 99
    assert "alice" not in fh["args"]["name"]


@pytest.mark.parametrize("line", NOT_FLAT)
def test_only_whole_flat_complete_events_take_the_text_path(line):
    assert _flat_event(line.encode(), tokens(), Report(), {}) is None
