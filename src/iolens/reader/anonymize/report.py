"""What an anonymisation did to one log: what was replaced (how many), kept (why), dropped, and not judged.

The report names no original value: it can travel with the anonymised log.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# What stays as it is in every log, and why it is no one's identity.
UNCHANGED = ("every counter and timestamp of every record, every DXT offset, size and time, ranks, process "
             "count, job start and end times, module list and versions, partial flags, OST ids and heatmap bins")
# Order and wording of the replaced counts.
REPLACED = {
    "names": "record names (paths; one token per path component)",
    "path_components": "distinct path components",
    "datasets": "HDF5 dataset / PnetCDF variable names (kept joined to their file's token)",
    "record_ids": "record ids, recomputed from the new names with Darshan's own hash",
    "unnamed_record_ids": "record ids no name record names (given keyed stand-ins)",
    "ids_set_apart": "record ids two names would have shared (the second given a keyed stand-in)",
    "command_words": "command-line words (program and every argument)",
    "mount_points": "mount points",
    "fs_types": "file-system types not known to iolens",
    "hostnames": "DXT host names",
    "uid": "uid",
    "jobid": "job id",
    "metadata": "job metadata lines not written by Darshan itself",
    "hint_values": "MPI-IO hint values that are not plain settings",
    "pool_names": "Lustre pool names",
    "log_name": "log file name",
    "trace_file_names": "file names (one token per path component)",
    "trace_host_names": "host names",
    "trace_hashes": "DFTracer hashes of names (files, hosts, command lines), keyed stand-ins in every event",
    "trace_strings": "other distinct strings of the trace (paths tokenised per component, the rest replaced)",
    "trace_name": "trace file name (its hash)",
}


@dataclass
class Report:
    output: str = ""
    log_format: str = ""
    byte_order: str = ""
    compression: str = ""
    unfinished: bool = False
    replaced: Counter = field(default_factory=Counter)
    kept: dict = field(default_factory=dict)  # what -> why
    dropped: list = field(default_factory=list)
    cleared: list = field(default_factory=list)  # bytes no reader uses (padding, stale pointers), zeroed
    not_judged: list = field(default_factory=list)
    unchanged: str = UNCHANGED
    strings: set = field(default_factory=set, repr=False)  # the distinct strings counted as trace_strings

    def count(self, what: str, n: int = 1) -> None:
        if n:
            self.replaced[what] += n

    def to_dict(self) -> dict:
        return {
            "output": self.output, "log_format": self.log_format, "byte_order": self.byte_order,
            "compression": self.compression, "unfinished": self.unfinished,
            "replaced": {k: self.replaced[k] for k in REPLACED if self.replaced[k]},
            "kept": dict(self.kept), "unchanged": self.unchanged, "dropped": list(self.dropped),
            "cleared": list(self.cleared), "not_judged": list(self.not_judged),
        }

    def lines(self) -> list:
        """The report as text, one line per fact."""
        form = (f"log format {self.log_format} ({self.byte_order} endian, {self.compression})" if self.byte_order
                else f"{self.log_format} ({self.compression})")
        out = [f"{self.output}: {form}" + (", unfinished" if self.unfinished else "")]
        replaced = [f"{self.replaced[k]:,} {REPLACED[k]}" for k in REPLACED if self.replaced[k]]
        out += ["  replaced: " + "; ".join(replaced)] if replaced else ["  replaced: nothing"]
        out += [f"  kept: {what}: {why}" for what, why in self.kept.items()]
        out += [f"  dropped: {what}" for what in self.dropped]
        out += [f"  cleared: {what}" for what in self.cleared]
        out += [f"  not judged: {what}" for what in self.not_judged]
        out.append(f"  unchanged: {self.unchanged}")
        return out
