"""Tokens, record ids and the job region of `iolens anonymize`, on hand-built inputs (tests/integration has the
real logs)."""
from __future__ import annotations

import re
import struct

import pytest

from iolens.analysis.diagnosis.context import HDF5_SUFFIXES, NETCDF_SUFFIXES
from iolens.reader.anonymize import Key, Tokens
from iolens.reader.anonymize.job import rewrite_job, split_exe
from iolens.reader.anonymize.log import output_name
from iolens.reader.anonymize.report import Report
from iolens.reader.anonymize.tokens import KEPT_SUFFIXES, hints_text
from iolens.reader.jenkins import darshan_hash, record_id

KEY = Key(bytes(range(32)))


def tokens(key=KEY, **kw) -> Tokens:
    return Tokens(key, **kw)


# --- Darshan's record ids ---------------------------------------------------------------------------------
# (name, id) pairs as the Darshan runtime wrote them in real logs (the reader's test corpus): every length class
# of lookup8's tail (< 8, 8-16, 17-23 bytes) and several 24-byte blocks
RUNTIME_IDS = [
    ("<STDIN>", 14734109647742566553),
    ("<STDOUT>", 15920181672442173319),
    ("heatmap:POSIX", 16592106915301738621),
    ("heatmap:MPIIO", 3668870418325792824),
    ("heatmap:STDIO", 3989511027826779520),
    ("/tmp/ioscratch/p/d.dat", 14336595451031810987),
    ("/global/cscratch1/sd/ssnyder/test123.h5", 0x901E21B539D96C4C),
    ("/global/cscratch1/sd/ssnyder/test123.h5:/Dataset-0000.0000", 0x7E02EF37202F66F2),
    ("/home/shane/software/ior/build/testFile:data_var", 0xBD58633293DCF885),
]


@pytest.mark.parametrize("name, rec_id", RUNTIME_IDS)
def test_record_id_is_the_runtimes(name, rec_id):
    assert record_id(name.encode()) == rec_id


def test_hash_level_and_empty_key():
    assert darshan_hash(b"") != darshan_hash(b"", 1)
    assert darshan_hash(b"a" * 24) != darshan_hash(b"a" * 25)


# --- tokens -------------------------------------------------------------------------------------------------
def test_same_key_same_token_other_key_none_shared():
    a, b, c = tokens(), tokens(), tokens(Key(b"another key of 32 bytes, really!"))
    path = b"/home/alice/project/run1/out.dat"
    assert a.path(path) == b.path(path)
    assert a.path(path) != c.path(path)
    assert not set(a.path(path).split(b"/")[1:]) & set(c.path(path).split(b"/")[1:])


def test_path_keeps_its_shape_one_token_per_component():
    t = tokens()
    one, two = t.path(b"/scratch/alice/run/a.dat"), t.path(b"/scratch/alice/run/b.dat")
    assert one.count(b"/") == two.count(b"/") == 4
    assert one.rsplit(b"/", 1)[0] == two.rsplit(b"/", 1)[0]  # the shared folder: one token
    assert one != two
    assert t.path(b"/") == b"/" and t.path(b"a//b/./..") .split(b"/")[1:] == [b"", t.component(b"b"), b".", b".."]
    assert not re.search(rb"scratch|alice|run|dat", one)


@pytest.mark.parametrize("suffix", KEPT_SUFFIXES)
def test_format_suffixes_kept(suffix):
    t = tokens()
    name = t.component(b"results" + suffix.upper().encode())
    assert name.endswith(suffix.upper().encode()) and b"results" not in name
    assert t.component(suffix.encode()) != suffix.encode()  # a name that is only a suffix is replaced


def test_kept_suffixes_are_the_diagnosis_ones():
    assert set(KEPT_SUFFIXES) == set(HDF5_SUFFIXES) | set(NETCDF_SUFFIXES)


def test_darshan_names_kept_datasets_joined_to_their_file():
    t = tokens()
    for name in (b"<STDIN>", b"<STDOUT>", b"<STDERR>", b"heatmap:POSIX", b"heatmap:DAOS"):
        assert t.record_name(name) == name
    file = b"/scratch/alice/f.h5"
    ds = t.record_name(file + b":/group/dset", file)
    assert ds == t.path(file) + b":" + t.path(b"/group/dset")
    assert t.record_name(file + b":/group/dset") == t.path(file + b":/group/dset")  # file unknown: plain path


def test_command_line_every_word_whitespace_kept():
    t = tokens()
    cmd = b"/home/alice/bin/app -i /data/in.h5  --np 4 \n \n"
    new = t.command_line(cmd)
    assert re.split(rb"\S+", new) == re.split(rb"\S+", cmd)
    assert not re.search(rb"alice|app|in\.|np", new) and new.split()[2].endswith(b".h5")
    assert new.split()[4] != b"4"
    kept = tokens(keep_exe_name=True).command_line(cmd)
    assert kept.split()[0].endswith(b"/app") and b"alice" not in kept
    assert t.command_line(b"a.out <unknown args>").endswith(b" <unknown args>")
    assert t.command_line(b"app arg<TRUNCATED>").endswith(b"<TRUNCATED>")


def test_numbers_are_positive_and_keyed():
    t = tokens()
    assert t.uid(0) == tokens().uid(0) != 0 and 0 < t.uid(12345) < 1 << 31
    assert t.jobid(700101) != tokens(Key(b"x" * 32)).jobid(700101)


@pytest.mark.parametrize("fs, kept", [(b"lustre", True), (b"gpfs", True), (b"ext4", True), (b"fuse.sshfs", True),
                                      (b"fuse.Joplin.AppImage", False), (b"mysecretfs", False)])
def test_fs_types(fs, kept):
    new, replaced = tokens().fs_type(fs)
    assert (new == fs) is kept and replaced is not kept
    if fs.startswith(b"fuse."):
        assert new.startswith(b"fuse.")


def test_hints_plain_values_kept_others_replaced():
    text, n = hints_text(tokens(), b"romio_no_indep_rw=true;cb_nodes=4;cb_buffer_size=16MiB;cb_config_list=nid01:1")
    parts = dict(p.split(b"=") for p in text.split(b";"))
    assert parts[b"romio_no_indep_rw"] == b"true" and parts[b"cb_nodes"] == b"4"
    assert parts[b"cb_buffer_size"] == b"16MiB" and parts[b"cb_config_list"] != b"nid01:1" and n == 1


def test_key_file_hex_or_raw(tmp_path):
    from iolens import LogError

    hexed = tmp_path / "k.hex"
    hexed.write_text(KEY.secret.hex() + "\n")
    assert Key.from_file(hexed).secret == KEY.secret
    raw = tmp_path / "k.raw"
    raw.write_bytes(b"a passphrase that is long enough")
    assert Key.from_file(raw).secret == b"a passphrase that is long enough"
    (tmp_path / "short").write_text("abc")
    for bad in (tmp_path / "short", tmp_path / "missing"):
        with pytest.raises(LogError):
            Key.from_file(bad)


# --- the job region ------------------------------------------------------------------------------------------
def job_region(version="3.41", metadata=b"lib_ver=3.4.7\nh=romio_no_indep_rw=true;cb_nodes=4\n", exe=b"app",
               uid=1234, jobid=99, bo="<"):
    ints = (uid, 1, 2, 3, 4, 8, jobid) if version >= "3.41" else (uid, 1, 3, 8, jobid)
    return struct.pack(bo + "q" * len(ints), *ints) + metadata.ljust(1024, b"\0") + exe + b"\0"


def test_job_ids_and_metadata():
    t, report = tokens(), Report()
    meta = b"lib_ver=3.4.7\nh=romio_no_indep_rw=true\nfork_parent=3687\nproject=alice-secret\nnokey\n"
    new = rewrite_job(job_region(metadata=meta), "3.41", "<", t, report)
    uid, *_, nprocs, jobid = struct.unpack_from("<7q", new)
    assert (uid, jobid) == (t.uid(1234), t.jobid(99)) and nprocs == 8
    text = new[56:56 + 1024].split(b"\0")[0]
    assert text.startswith(b"lib_ver=3.4.7\nh=romio_no_indep_rw=true\nfork_parent=3687\n")
    assert b"alice" not in text and b"project" not in text and b"nokey" not in text
    assert report.replaced["metadata"] == 2 and {"metadata lib_ver", "metadata h", "metadata fork_parent"} <= set(
        report.kept)


def test_job_id_equal_to_pid_is_kept():
    t, report = tokens(), Report()
    new = rewrite_job(job_region(jobid=4242), "3.41", "<", t, report, pid=4242)
    assert struct.unpack_from("<7q", new)[6] == 4242 and "job id" in report.kept


def test_old_job_big_endian():
    t = tokens()
    new = rewrite_job(job_region("3.10", jobid=7, bo=">"), "3.10", ">", t, Report())
    assert struct.unpack_from(">5q", new)[4] == t.jobid(7)


def test_mounts_and_newlines_in_the_command():
    text = b"python3 -c \n \ncgroup2\t/sys/fs/cgroup/unified\ndevtmpfs\t/dev\next4\t/"
    command, mounts = split_exe(text)
    assert command == b"python3 -c \n " and len(mounts) == 3
    t, report = tokens(), Report()
    new = rewrite_job(job_region(exe=text), "3.41", "<", t, report)
    new_text = new[1080:].split(b"\0")[0]
    assert new_text.split(b"\n")[-1] == b"ext4\t/" and b"\ndevtmpfs\t/" in new_text
    assert new_text.startswith(t.command_line(b"python3 -c \n ") + b"\n")
    assert report.replaced["mount_points"] == 3


def test_a_table_too_long_loses_unused_mounts_first():
    mounts = b"".join(b"\nnfs\t/m%04d" % i for i in range(250)) + b"\nlustre\t/lus/fs"
    t, report = tokens(), Report()
    new = rewrite_job(job_region(exe=b"app" + mounts), "3.41", "<", t, report, names=[b"/lus/fs/f"])
    text = new[1080:].split(b"\0")[0]
    assert len(text) <= 3015 and text.endswith(b"lustre\t" + t.path(b"/lus/fs"))
    assert any("mount-table entries" in d for d in report.dropped)


def test_a_full_command_line_is_cut_as_darshan_cuts_it():
    t, report = tokens(), Report()
    new = rewrite_job(job_region("3.10", exe=b"x " * 1515 + b"y"), "3.10", "<", t, report)
    text = new[1064:].split(b"\0")[0]
    assert len(text) <= 3031 and text.endswith(b"<TRUNCATED>") and b"\n" not in text
    assert any("command line" in d for d in report.dropped)


# --- file names ------------------------------------------------------------------------------------------
def test_darshan_log_names_keep_their_shape():
    t = tokens()
    name = output_name("/x/alice_app_id700101-3687_11-24-79683-6581676315874781664_1.darshan", t, b"./app -n 4")
    m = re.fullmatch(r"([a-z2-7]{10})_([a-z2-7]{10})_id(\d+)-3687_11-24-79683-(\d+)_1\.darshan", name)
    assert m and m[2] == t.component(b"app").decode() and int(m[3]) == t.jobid(700101)
    assert "alice" not in name and "6581676315874781664" not in name
    # no command line (an empty unfinished log): the program is the name's last part
    empty = output_name("/x/alice_app_id700101-3689_11-24-79683-1_1.darshan_partial", t, None)
    assert empty.split("_")[1] == m[2] and empty.endswith(".darshan_partial")
    # no batch job id: Darshan wrote the pid, which is kept
    assert "_id3687-3687_" in output_name("/x/u_app_id3687-3687_1-2-3-4.darshan", t, b"app")
    assert output_name("/x/my secret run.darshan", t, b"app") == t.component(b"my secret run").decode() + ".darshan"
    assert tokens(keep_exe_name=True).component(b"alice") in output_name(
        "/x/alice_app_id1-2_1-2-3-4.darshan", tokens(keep_exe_name=True), b"app").encode()
