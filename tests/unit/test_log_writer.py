"""The Darshan log writer (`iolens.reader.writer`): what it writes, the reader's header parser reads back."""
from __future__ import annotations

import pytest

from iolens.reader.header import MODULE_NAMES, parse_header
from iolens.reader.writer import (LogImage, Module, Region, assemble, encode_log, encode_unfinished, slot_of,
                                  write_atomically)

# the modules each format version has a header slot for (the reader's remap, darshan-log-format.md §2.4)
SLOTS = {"3.00": [1, 2, 3, 5, 7, 8, 9, 10, 11, 12], "3.10": [1, 2, 3, 5, 7, 8, 9, 10, 11, 12],
         "3.21": [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15], "3.41": list(MODULE_NAMES)}


@pytest.mark.parametrize("version", SLOTS)
@pytest.mark.parametrize("bo", ["<", ">"])
@pytest.mark.parametrize("compression", ["zlib", "bzip2", "none"])
def test_header_round_trip(version, bo, compression):
    mods = {m: Module(m % 5 + 1, Region(bytes([m]) * (16 * m), (8 * m,) if m % 2 else ()), partial=m % 3 == 0)
            for m in SLOTS[version]}
    image = LogImage(version, bo, compression, Region(b"job" * 400), Region(b"names" * 10), mods)
    data = assemble(encode_log(image))
    header = parse_header(data, len(data))
    assert (header.version, header.byte_order, header.compression) == (version, bo, compression)
    assert header.module_versions == {m: mod.version for m, mod in mods.items()}
    assert header.partial_mask == sum(1 << m for m, mod in mods.items() if mod.partial)
    assert sorted(header.module_regions) == sorted(mods)
    offsets = [header.name_region.offset] + [header.module_regions[m].offset for m in sorted(mods)]
    assert offsets == sorted(offsets) and offsets[0] > header.size  # the job region first, then in id order


def test_no_slot_for_modules_a_version_lacks():
    assert slot_of("3.10", 4) is None and slot_of("3.21", 6) is None and slot_of("3.41", 6) == 6
    assert slot_of("3.00", 5) == 4 and slot_of("3.21", 15) == 14 and slot_of("3.41", 64) is None


def test_unfinished_layout():
    data = assemble(encode_unfinished("3.41", [b"x" * 10, b"y"]))
    assert data == bytes(1328) + b"x" * 10 + b"y"


def test_atomic_write(tmp_path):
    from iolens import LogError

    target = tmp_path / "f.darshan"
    write_atomically(target, [(0, b"abc"), (5, b"z")])
    assert target.read_bytes() == b"abc\0\0z"
    with pytest.raises(LogError, match="exists"):
        write_atomically(target, [(0, b"new")])
    write_atomically(target, [(0, b"new")], force=True)
    assert target.read_bytes() == b"new" and [p.name for p in tmp_path.iterdir()] == ["f.darshan"]

    def failing():
        yield 0, b"partial"
        raise OSError(28, "No space left on device")

    with pytest.raises(LogError, match="No space left"):
        write_atomically(tmp_path / "g.darshan", failing())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.darshan"]  # no half file, no temporary left
