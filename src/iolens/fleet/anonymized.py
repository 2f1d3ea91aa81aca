"""Anonymised fleet stores (`iolens fleet build --anonymize`): every log read as `iolens anonymize` writes it
(in memory, never on disk), its rows keyed by its token path; one key per store, named by its fingerprint."""
from __future__ import annotations

import json
import os

from ..errors import LogError
from ..reader.anonymize import Key, Tokens, key_beside, output_name, read_anonymized
from ..reader.writer import write_atomically
from . import store as fleet_store

MARKER = "anonymized.json"  # in an anonymised store: which key (its fingerprint, not the key) made it
PER_JOB_ANONYMIZED = ("--anonymize builds a per-log store; for one row per job, anonymise the logs first "
                      "(`iolens anonymize LOGS -o DIR`) and build DIR with --group-by job")


def tokens_of(anonymize) -> Tokens | None:
    """The Tokens of a build's `anonymize` option, (key bytes, keep_exe_name): plain values, which a Dask
    task receives as they are; None for a plain build."""
    if anonymize is None:
        return None
    secret, keep_exe_name = anonymize
    return Tokens(Key(secret), keep_exe_name)


def label_of(path: str, tokens: Tokens) -> str:
    """The anonymised stand-in a store keys a log by: its folder's path tokens and its name's (from the file
    name alone, so that planning a build reads no log)."""
    folder = os.path.dirname(os.path.abspath(path))
    return tokens.path(folder.encode()).decode() + "/" + output_name(path, tokens, None)


def read_raw_anonymized(source: str, label: str, tokens: Tokens, regions):
    """The RawLog of the anonymised log of `source`, its path `label`."""
    return read_anonymized(source, tokens, regions, label=label)[0]


def is_anonymized(store) -> bool:
    return os.path.exists(os.path.join(str(store), MARKER))


def own_key(store):
    """The key file a first anonymised build wrote beside `store` (`STORE.key`), or None."""
    beside = key_beside(store)
    return beside if beside.exists() and is_anonymized(store) else None


def check_anonymized(store, tokens: Tokens | None) -> None:
    """Refuse (one line) to mix rows of another key, or anonymised and plain rows, in one store; mark a new
    anonymised store with its key's fingerprint."""
    marker = os.path.join(str(store), MARKER)
    if not os.path.exists(marker):
        if tokens is None:
            return
        if any(fleet_store.is_table(store, t) for t in ("jobs", "errors")):
            raise LogError("this store holds logs read without --anonymize: anonymise into a new store", str(store))
        os.makedirs(str(store), exist_ok=True)
        made = {"key_fingerprint": tokens.key.fingerprint(), "keep_exe_name": tokens.keep_exe_name}
        write_atomically(marker, [(0, json.dumps(made).encode())])
        return
    with open(marker) as fh:
        made = json.load(fh)
    if tokens is None:
        raise LogError("this store was built with --anonymize: build it with --anonymize and its key", str(store))
    if made.get("key_fingerprint") != tokens.key.fingerprint() or made.get("keep_exe_name") != tokens.keep_exe_name:
        raise LogError("this store was anonymised with another key (or --keep-exe-name setting): use that key, "
                       "or a new store", str(store))
