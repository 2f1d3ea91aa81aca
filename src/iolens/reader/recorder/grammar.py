"""Recorder's call-sequence grammar (Sequitur): parse the rules, expand rule -1 into the terminal sequence.

File layout (int32): number of rules, then per rule its id, its number of symbols and (value, repeat) per
symbol. A value >= 0 is a terminal (a call-signature id), a negative one another rule; each symbol stands
`repeat` times in a row.
"""
from __future__ import annotations

import numpy as np

from ...errors import LogError

START_RULE = -1


def parse_grammar(data: bytes, name: str) -> dict:
    """rule id -> (values, repeats) int64 arrays."""
    if len(data) % 4 or len(data) < 4:
        raise LogError(f"truncated {name}: {len(data)} bytes is not a whole number of integers")
    ints = np.frombuffer(data, dtype="<i4").astype(np.int64)
    n_rules, pos, rules = int(ints[0]), 1, {}
    if n_rules < 1 or n_rules > len(ints):
        raise LogError(f"corrupt {name}: {n_rules} rules in {len(data)} bytes")
    for _ in range(n_rules):
        if pos + 2 > len(ints):
            raise LogError(f"truncated {name}: it ends inside rule {len(rules) + 1} of {n_rules}")
        rule_id, n_syms = int(ints[pos]), int(ints[pos + 1])
        body = ints[pos + 2:pos + 2 + 2 * n_syms]
        if n_syms < 0 or len(body) != 2 * n_syms:
            raise LogError(f"truncated {name}: rule {rule_id} runs past the end of the file")
        if rule_id >= 0 or rule_id in rules:
            raise LogError(f"corrupt {name}: rule id {rule_id}")
        rules[rule_id] = (body[0::2].copy(), body[1::2].copy())
        pos += 2 + 2 * n_syms
    if START_RULE not in rules:
        raise LogError(f"corrupt {name}: no start rule")
    return rules


def _order(rules: dict, name: str) -> list:
    """Rules reachable from the start rule, each after every rule it uses (iterative: grammars can nest deep)."""
    done, on_path, order = set(), set(), []
    stack = [(START_RULE, False)]
    while stack:
        rule_id, children_done = stack.pop()
        if children_done:
            on_path.discard(rule_id)
            done.add(rule_id)
            order.append(rule_id)
            continue
        if rule_id in done:
            continue
        if rule_id not in rules:
            raise LogError(f"corrupt {name}: rule {rule_id} is used but not defined")
        if rule_id in on_path:
            raise LogError(f"corrupt {name}: rule {rule_id} contains itself")
        on_path.add(rule_id)
        stack.append((rule_id, True))
        values = rules[rule_id][0]
        for sub in set(values[values < 0].tolist()) - done:
            if sub in on_path:
                raise LogError(f"corrupt {name}: rule {sub} contains itself")
            stack.append((sub, False))
    return order


def expand(rules: dict, n_sigs: int, limit: int, name: str) -> np.ndarray:
    """The start rule's terminal sequence (int32). Raises LogError if it would exceed `limit` calls (the
    timestamps say how many there are: a corrupt repeat count must not allocate gigabytes) or uses an
    unknown signature."""
    order = _order(rules, name)
    length = {}
    for rule_id in order:
        values, repeats = rules[rule_id]
        if (repeats < 0).any():
            raise LogError(f"corrupt {name}: negative repeat count in rule {rule_id}")
        if (values >= n_sigs).any():
            raise LogError(f"corrupt {name}: rule {rule_id} uses call signature {int(values.max())} "
                           f"(the table holds {n_sigs})")
        sizes = [1 if v >= 0 else length[v] for v in values.tolist()]
        length[rule_id] = int(np.dot(np.array(sizes, dtype=object), repeats.astype(object))) if sizes else 0
        if length[rule_id] > limit:
            raise LogError(f"{name} expands to more calls than the timestamps hold ({limit}): corrupt or "
                           "truncated trace")
    seq = {}
    for rule_id in order:
        seq[rule_id] = _expand_rule(*rules[rule_id], seq, length[rule_id])
    return seq[START_RULE]


def _expand_rule(values: np.ndarray, repeats: np.ndarray, seq: dict, total: int) -> np.ndarray:
    """One rule's terminal sequence from its already expanded sub-rules: the terminal runs written in one
    vectorised pass (flat grammars are all terminals), each sub-rule occurrence tiled into place."""
    term = values >= 0
    sizes = repeats.copy()
    sub = np.flatnonzero(~term)
    sizes[sub] *= np.array([len(seq[v]) for v in values[sub].tolist()], dtype=np.int64)
    starts = np.zeros(len(values), dtype=np.int64)
    np.cumsum(sizes[:-1], out=starts[1:])
    out = np.empty(total, dtype=np.int32)
    if term.any():
        runs = repeats[term]
        within = np.arange(int(runs.sum()), dtype=np.int64) - np.repeat(np.cumsum(runs) - runs, runs)
        out[np.repeat(starts[term], runs) + within] = np.repeat(values[term], runs)
    for i in sub.tolist():
        out[starts[i]:starts[i] + sizes[i]] = np.tile(seq[int(values[i])], int(repeats[i]))
    return out
