//! DFTracer traces: JSON lines, one event a line, a file per process (plain `.pfw` or gzip'd `.pfw.gz`).
//! Each file is streamed (bounded memory: a block of text at a time) and its events sorted into columns:
//! POSIX/STDIO calls (`Io`), application spans (`Spans`), DFTracer's own start/end events and the metadata
//! events that name hashes. Files are read in parallel, one a thread. A line that is not a JSON object, a
//! file cut mid-line and a gzip stream that ends early are counted and said, never fatal.

use std::fs::File;
use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use flate2::read::MultiGzDecoder;
use rustc_hash::FxHashMap;

use crate::json::{unescape, Cursor, Num, Str};

pub const NA: i64 = i64::MIN; // a value the event does not carry
pub const NO_STR: u32 = u32::MAX;

/// What a call does to a file position (see `positions`).
pub mod kind {
    pub const OTHER: u8 = 0;
    pub const OPEN: u8 = 1;
    pub const OPEN_APPEND: u8 = 2;
    pub const CLOSE: u8 = 3;
    pub const LSEEK: u8 = 4;
    pub const FSEEK: u8 = 5;
    pub const FTELL: u8 = 6;
    pub const READ: u8 = 7;
    pub const WRITE: u8 = 8;
    pub const PREAD: u8 = 9;
    pub const PWRITE: u8 = 10;
}

const O_APPEND: i64 = 0o2000;
const BLOCK: usize = 4 << 20; // text read at a time
const MAX_LINE: usize = 64 << 20; // a "line" longer than this is not a trace's
const GARBAGE_LINES: u64 = 64; // this many bad lines before any good one: not a trace, stop reading

/// A file's strings (names, categories, hashes): each distinct one once, events hold its index.
#[derive(Default)]
pub struct Strings {
    map: FxHashMap<Vec<u8>, u32>,
    pub list: Vec<String>,
}

impl Strings {
    #[inline]
    fn code(&mut self, s: Str) -> u32 {
        if let Some(&c) = self.map.get(s.raw) {
            return c;
        }
        let c = self.list.len() as u32;
        self.list.push(unescape(s));
        self.map.insert(s.raw.to_vec(), c);
        c
    }
}

#[derive(Default)]
pub struct Io {
    pub proc: Vec<u32>, // the file's process (`FileResult::procs`)
    pub tid: Vec<i64>,
    pub ts: Vec<i64>,
    pub dur: Vec<i64>,
    pub stdio: Vec<u8>, // 0 POSIX, 1 STDIO
    pub func: Vec<u32>,
    pub kind: Vec<u8>,
    pub file: Vec<u32>, // fhash (or fname) string
    pub ret: Vec<i64>,
    pub bytes: Vec<i64>, // moved by a read or write: ret (times the item size for fread/fwrite); NA if failed
    pub offset: Vec<i64>, // the offset argument (pread, pwrite, lseek, fseek)
    pub whence: Vec<i8>, // -1: none
    pub fd: Vec<i32>,    // -1: none
}

#[derive(Default)]
pub struct Spans {
    pub proc: Vec<u32>,
    pub tid: Vec<i64>,
    pub ts: Vec<i64>,
    pub dur: Vec<i64>,
    pub cat: Vec<u32>,
    pub name: Vec<u32>,
    pub epoch: Vec<i64>,
    pub step: Vec<i64>,
    pub args: Vec<Option<String>>, // the other arguments, as a JSON object
}

/// A process of the file (pid and host hash), and what its complete events say of it.
pub struct Proc {
    pub pid: i64,
    pub host: u32,
    pub events: u64,
    pub first: i64,  // earliest start
    pub last: i64,   // latest end
    pub max_id: i64, // DFTracer numbers a process's events from 1: what it numbered and is not here was lost
    pub with_id: u64,
}

/// A metadata event (`ph` M / 4): which event (FH, HH, SH, CM, thread_name, ...), its name and value.
pub struct Meta {
    pub pid: i64,
    pub event: String,
    pub name: String,
    pub value: String,
}

/// An aggregated record (DFTracer 2, DFTRACER_ENABLE_AGGREGATION=1): one function's (or span's) events of
/// a process's thread over an interval (`ts`, its start), their count (`dft_cnt`) and sums (`dur_sum`,
/// `ret_sum`, ...: or `dur`, `ret` alone for one event) in `args`, as JSON text.
pub struct Aggregated {
    pub proc: u32,
    pub tid: i64,
    pub ts: i64,
    pub cat: String,
    pub name: String,
    pub args: String,
}

/// DFTracer's own complete events (category `dftracer`: start, end): their arguments as JSON text.
pub struct Internal {
    pub proc: u32,
    pub ts: i64,
    pub name: String,
    pub args: String,
}

#[derive(Default)]
pub struct FileResult {
    pub strings: Strings,
    pub io: Io,
    pub spans: Spans,
    pub procs: Vec<Proc>,
    proc_index: FxHashMap<(i64, u32), u32>,
    last_proc: Option<(i64, u32, u32)>,
    pub meta: Vec<Meta>,
    pub internal: Vec<Internal>,
    pub aggregated: Vec<Aggregated>,
    named_files: rustc_hash::FxHashSet<u32>, // files calls named by path (`fname`), said once as FH events
    meta_ids: FxHashMap<i64, (u64, i64)>, // pid -> metadata events numbered (DFTracer 1.0.x numbers them), max id
    pub lines: u64,
    pub bad_lines: u64,
    pub first_bad: Option<(u64, String)>,
    pub unknown: FxHashMap<String, u64>, // event kinds (ph) not read, and how many
    pub cut: bool,                      // the last line ends mid-event
    pub error: Option<String>,          // the file could not be read to its end (and why)
    pub gzip: bool,
    pub bytes_in: u64,
}

/// The fields of an event line.
struct Fields<'a> {
    name: Option<Str<'a>>,
    cat: Option<Str<'a>>,
    ph: Ph,
    pid: i64,
    tid: i64,
    ts: i64,
    dur: i64,
    id: i64,
    args: Option<&'a [u8]>,
    io_args: Option<IoArgs>,
}

enum Ph {
    Missing,
    Complete,
    Meta,
    Aggregated, // DFTracer 2's aggregation mode (`ph` 3): a function's calls summed over an interval
    Other(String),
}

/// The arguments of a POSIX/STDIO call that iolens reads.
struct IoArgs {
    file: u32,
    host: u32,
    ret: i64,
    size: i64,
    offset: i64,
    whence: i64,
    fd: i64,
    flags: i64,
    append_mode: bool,
    named: bool, // `file` is the path itself (`fname`, DFTracer 1.0.0-1.0.5), not a hash an FH event names
}

/// A hash argument (`fhash`, `hhash`) or a name (`fname`, `hostname`): a string (DFTracer 2 writes hashes as
/// hex strings, DFTracer 1.0.0-1.0.5 names as text) or a number (DFTracer 1.0.6-1.0.8 wrote hashes as decimal
/// integers: `"fhash":1234`, chrome_writer.cpp at v1.0.8), coded by its text (the FH/HH events' value, read
/// as text too).
fn hash_code(c: &mut Cursor, strings: &mut Strings) -> Result<u32, ()> {
    c.ws();
    if c.peek() == Some(b'"') {
        return Ok(strings.code(c.string()?));
    }
    let raw = c.skip_value()?;
    if raw == b"null" {
        return Ok(NO_STR);
    }
    Ok(strings.code(Str { raw, escaped: false }))
}

impl IoArgs {
    const NONE: IoArgs = IoArgs { file: NO_STR, host: NO_STR, ret: NA, size: NA, offset: NA, whence: NA, fd: NA,
                                  flags: NA, append_mode: false, named: false };

    /// Read the arguments object at the cursor.
    fn parse(c: &mut Cursor, strings: &mut Strings) -> Result<IoArgs, ()> {
        let mut a = IoArgs::NONE;
        c.object(|k, c| {
            match k.raw {
                b"fhash" => a.file = hash_code(c, strings)?,
                b"fname" => {
                    a.file = hash_code(c, strings)?;
                    a.named = a.file != NO_STR;
                }
                b"hhash" | b"hostname" => a.host = hash_code(c, strings)?,
                b"ret" => a.ret = c.int()?.unwrap_or(NA),
                b"size" => a.size = c.int()?.unwrap_or(NA),
                b"offset" => a.offset = c.int()?.unwrap_or(NA),
                b"whence" => a.whence = c.int()?.unwrap_or(NA),
                b"fd" => a.fd = c.int()?.unwrap_or(NA),
                b"flags" => a.flags = c.int()?.unwrap_or(NA),
                b"mode" => {
                    c.ws();
                    if c.peek() == Some(b'"') {
                        a.append_mode = c.string()?.raw.contains(&b'a');
                    } else {
                        c.skip_value()?;
                    }
                }
                _ => {
                    c.skip_value()?;
                }
            }
            Ok(())
        })?;
        Ok(a)
    }
}

fn is_io(cat: &[u8]) -> bool {
    cat.eq_ignore_ascii_case(b"POSIX") || cat.eq_ignore_ascii_case(b"STDIO")
}

impl FileResult {
    /// The file's index of process (pid, host), its counts brought up to date with an event.
    #[inline]
    fn proc_of(&mut self, pid: i64, host: u32, ts: i64, end: i64, id: i64) -> u32 {
        let k = match self.last_proc {
            Some((p, h, k)) if p == pid && h == host => k,
            _ => {
                let next = self.procs.len() as u32;
                let k = *self.proc_index.entry((pid, host)).or_insert(next);
                if k == next {
                    self.procs.push(Proc { pid, host, events: 0, first: ts, last: end, max_id: NA, with_id: 0 });
                }
                self.last_proc = Some((pid, host, k));
                k
            }
        };
        let p = &mut self.procs[k as usize];
        p.events += 1;
        p.first = p.first.min(ts);
        p.last = p.last.max(end);
        if id != NA {
            p.max_id = p.max_id.max(id);
            p.with_id += 1;
        }
        k
    }

    /// The file's index of process (pid, host) without counting an event nor moving its times (an aggregated
    /// record's time is its interval's start, before the process's first event); a process first seen so
    /// starts there.
    fn proc_seen(&mut self, pid: i64, host: u32, ts: i64) -> u32 {
        let next = self.procs.len() as u32;
        let k = *self.proc_index.entry((pid, host)).or_insert(next);
        if k == next {
            self.procs.push(Proc { pid, host, events: 0, first: ts, last: ts, max_id: NA, with_id: 0 });
        }
        k
    }

    fn line(&mut self, raw: &[u8], number: u64) -> bool {
        let mut l = raw;
        while let Some((&last, rest)) = l.split_last() {
            if matches!(last, b' ' | b'\t' | b'\r' | b',') { l = rest } else { break }
        }
        while let Some((&first, rest)) = l.split_first() {
            if matches!(first, b' ' | b'\t') { l = rest } else { break }
        }
        if l.is_empty() || l == b"[" || l == b"]" {
            return true; // blank, or the brackets of the older JSON-array form
        }
        self.lines += 1;
        if self.event(l).is_err() {
            self.bad_lines += 1;
            if self.first_bad.is_none() {
                let shown = String::from_utf8_lossy(&l[..l.len().min(60)]).into_owned();
                self.first_bad = Some((number, shown));
            }
            return false;
        }
        true
    }

    /// An event line as DFTracer 2 writes it, read by its fixed layout
    /// (`{"id":N,"name":S,"cat":S,"type":N,"pid":N,"tid":N,"ts":N,"dur":N,"ph":1,"args":{..}}`); None for
    /// any other line, which `fields` then reads key by key.
    #[inline]
    fn fast_fields<'a>(&mut self, l: &'a [u8]) -> Option<Fields<'a>> {
        let mut c = Cursor::new(l);
        let lit = |c: &mut Cursor, text: &[u8]| -> Option<()> {
            if c.b[c.i..].starts_with(text) {
                c.i += text.len();
                Some(())
            } else {
                None
            }
        };
        let int = |c: &mut Cursor| -> Option<i64> {
            match c.number().ok()? {
                Num::Int(v) => Some(v),
                Num::Float(_) => None,
            }
        };
        lit(&mut c, b"{\"id\":")?;
        let id = int(&mut c)?;
        lit(&mut c, b",\"name\":")?;
        let name = c.string().ok()?;
        lit(&mut c, b",\"cat\":")?;
        let cat = c.string().ok()?;
        lit(&mut c, b",\"type\":")?;
        int(&mut c)?;
        lit(&mut c, b",\"pid\":")?;
        let pid = int(&mut c)?;
        lit(&mut c, b",\"tid\":")?;
        let tid = int(&mut c)?;
        lit(&mut c, b",\"ts\":")?;
        let ts = int(&mut c)?;
        lit(&mut c, b",\"dur\":")?;
        let dur = int(&mut c)?;
        lit(&mut c, b",\"ph\":1,\"args\":{")?;
        c.i -= 1;
        let (mut args, mut io_args) = (None, None);
        if is_io(cat.raw) {
            io_args = Some(IoArgs::parse(&mut c, &mut self.strings).ok()?);
        } else {
            args = Some(c.skip_value().ok()?);
        }
        lit(&mut c, b"}")?;
        if c.i != l.len() {
            return None;
        }
        Some(Fields { name: Some(name), cat: Some(cat), ph: Ph::Complete, pid, tid, ts, dur, id, args, io_args })
    }

    /// An event line read key by key, in any order.
    fn fields<'a>(&mut self, l: &'a [u8]) -> Result<Fields<'a>, ()> {
        let mut c = Cursor::new(l);
        let (mut name, mut cat): (Option<Str>, Option<Str>) = (None, None);
        let mut ph = Ph::Missing;
        let (mut pid, mut tid, mut ts, mut dur, mut id) = (NA, NA, NA, NA, NA);
        let mut args: Option<&[u8]> = None;
        let mut io_args: Option<IoArgs> = None;
        let strings = &mut self.strings;
        c.object(|k, c| {
            match k.raw {
                b"name" => name = Some(c.string()?),
                b"cat" => cat = Some(c.string()?),
                b"ph" => {
                    c.ws();
                    ph = if c.peek() == Some(b'"') {
                        let s = c.string()?;
                        match s.raw {
                            b"X" => Ph::Complete,
                            b"M" => Ph::Meta,
                            other => Ph::Other(String::from_utf8_lossy(other).into_owned()),
                        }
                    } else {
                        match c.int()? {
                            Some(1) => Ph::Complete,
                            Some(3) => Ph::Aggregated,
                            Some(4) => Ph::Meta,
                            other => Ph::Other(other.map_or("null".into(), |v| v.to_string())),
                        }
                    }
                }
                b"pid" => pid = c.int()?.unwrap_or(NA),
                b"tid" => tid = c.int()?.unwrap_or(NA),
                b"ts" => ts = c.int()?.unwrap_or(NA),
                b"dur" => dur = c.int()?.unwrap_or(NA),
                b"id" => id = c.int()?.unwrap_or(NA),
                b"args" => {
                    c.ws();
                    let whole = matches!(ph, Ph::Aggregated | Ph::Meta);
                    if c.peek() == Some(b'{') && !whole && cat.is_some_and(|cat| is_io(cat.raw)) {
                        // a call's arguments (most events): read in place, not skipped and read again
                        io_args = Some(IoArgs::parse(c, strings)?);
                    } else {
                        let v = c.skip_value()?;
                        if v.first() == Some(&b'{') {
                            args = Some(v);
                        }
                    }
                }
                _ => {
                    c.skip_value()?;
                }
            }
            Ok(())
        })?;
        c.ws();
        if c.i != l.len() {
            return Err(());
        }
        Ok(Fields { name, cat, ph, pid, tid, ts, dur, id, args, io_args })
    }

    fn event(&mut self, l: &[u8]) -> Result<(), ()> {
        let f = match self.fast_fields(l) {
            Some(f) => f,
            None => self.fields(l)?,
        };
        let Fields { name, cat, ph, pid, tid, ts, dur, id, args, io_args } = f;
        match ph {
            Ph::Complete => {
                let (name, cat) = (name.ok_or(())?, cat.ok_or(())?);
                if ts == NA || pid == NA {
                    return Err(());
                }
                let dur = if dur == NA { 0 } else { dur };
                if is_io(cat.raw) {
                    let stdio = cat.raw.eq_ignore_ascii_case(b"STDIO");
                    let a = match (io_args, args) {
                        (Some(a), _) => a,
                        (None, Some(raw)) => IoArgs::parse(&mut Cursor::new(raw), &mut self.strings)?,
                        (None, None) => IoArgs::NONE,
                    };
                    self.io_event(stdio, name, pid, tid, ts, dur, id, a)
                } else if cat.raw == b"dftracer" {
                    let mut host = NO_STR;
                    if let Some(a) = args {
                        let strings = &mut self.strings;
                        Cursor::new(a).object(|k, c| {
                            if k.raw == b"hhash" || k.raw == b"hostname" {
                                c.ws();
                                if !matches!(c.peek(), Some(b'{') | Some(b'[')) {
                                    host = hash_code(c, strings)?;
                                    return Ok(());
                                }
                            }
                            c.skip_value().map(|_| ())
                        })?;
                    }
                    let proc = self.proc_of(pid, host, ts, ts + dur, id);
                    self.internal.push(Internal {
                        proc, ts, name: unescape(name),
                        args: args.map(|a| String::from_utf8_lossy(a).into_owned()).unwrap_or_default(),
                    });
                    Ok(())
                } else {
                    self.span_event(cat, name, pid, tid, ts, dur, id, args)
                }
            }
            Ph::Meta => {
                let event = name.map(unescape).unwrap_or_default();
                let (mut key, mut value) = (String::new(), String::new());
                if let Some(a) = args {
                    Cursor::new(a).object(|k, c| {
                        c.ws();
                        let is_str = c.peek() == Some(b'"');
                        match (k.raw, is_str) {
                            (b"name", true) => key = unescape(c.string()?),
                            (b"value", true) => value = unescape(c.string()?),
                            (b"name", false) => key = String::from_utf8_lossy(c.skip_value()?).into_owned(),
                            (b"value", false) => value = String::from_utf8_lossy(c.skip_value()?).into_owned(),
                            _ => {
                                c.skip_value()?;
                            }
                        }
                        Ok(())
                    })?;
                }
                if id != NA {
                    let e = self.meta_ids.entry(pid).or_insert((0, NA));
                    e.0 += 1;
                    e.1 = e.1.max(id);
                }
                self.meta.push(Meta { pid, event, name: key, value });
                Ok(())
            }
            Ph::Aggregated => {
                let (name, cat) = (name.ok_or(())?, cat.ok_or(())?);
                if ts == NA || pid == NA {
                    return Err(());
                }
                let mut host = NO_STR;
                if let Some(a) = args {
                    let strings = &mut self.strings;
                    Cursor::new(a).object(|k, c| {
                        let host_key = k.raw == b"hhash" || k.raw == b"hostname";
                        if host_key && !matches!(c.peek_value(), Some(b'{') | Some(b'[')) {
                            host = hash_code(c, strings)?;
                            return Ok(());
                        }
                        c.skip_value().map(|_| ())
                    })?;
                }
                let proc = self.proc_seen(pid, host, ts);
                self.aggregated.push(Aggregated {
                    proc, tid, ts, cat: unescape(cat), name: unescape(name),
                    args: args.map(|a| String::from_utf8_lossy(a).into_owned()).unwrap_or_default(),
                });
                Ok(())
            }
            Ph::Other(what) => {
                *self.unknown.entry(what).or_insert(0) += 1;
                Ok(())
            }
            Ph::Missing => Err(()),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn io_event(&mut self, stdio: bool, name: Str, pid: i64, tid: i64, ts: i64, dur: i64, id: i64,
                a: IoArgs) -> Result<(), ()> {
        let IoArgs { file, host, ret, size, offset, whence, fd, flags, append_mode, named } = a;
        if named && self.named_files.insert(file) {
            // a path named in the call: the file's name is itself (as an FH event would say)
            let path = self.strings.list[file as usize].clone();
            self.meta.push(Meta { pid, event: "FH".into(), name: path.clone(), value: path });
        }
        let func = self.strings.code(name);
        let proc = self.proc_of(pid, host, ts, ts + dur, id);
        let k = call_kind(name.raw, stdio, flags, append_mode);
        let moved = matches!(k, kind::READ | kind::WRITE | kind::PREAD | kind::PWRITE);
        let bytes = if !moved || ret == NA || ret < 0 {
            NA
        } else if stdio && size != NA && size > 0 && (name.raw == b"fread" || name.raw == b"fwrite") {
            ret.saturating_mul(size)
        } else {
            ret
        };
        let io = &mut self.io;
        io.proc.push(proc);
        io.tid.push(tid);
        io.ts.push(ts);
        io.dur.push(dur);
        io.stdio.push(stdio as u8);
        io.func.push(func);
        io.kind.push(k);
        io.file.push(file);
        io.ret.push(ret);
        io.bytes.push(bytes);
        io.offset.push(offset);
        io.whence.push(if (0..=i8::MAX as i64).contains(&whence) { whence as i8 } else { -1 });
        io.fd.push(if (0..=i32::MAX as i64).contains(&fd) { fd as i32 } else { -1 });
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn span_event(&mut self, cat: Str, name: Str, pid: i64, tid: i64, ts: i64, dur: i64, id: i64,
                  args: Option<&[u8]>) -> Result<(), ()> {
        let (mut epoch, mut step, mut host) = (NA, NA, NO_STR);
        let mut other: Vec<u8> = Vec::new();
        let strings = &mut self.strings;
        if let Some(a) = args {
            Cursor::new(a).object(|k, c| {
                match k.raw {
                    b"epoch" => epoch = c.int()?.unwrap_or(NA),
                    b"step" => step = c.int()?.unwrap_or(NA),
                    b"hhash" | b"hostname" if !matches!(c.peek_value(), Some(b'{') | Some(b'[')) => {
                        host = hash_code(c, strings)?
                    }
                    key => {
                        let v = c.skip_value()?;
                        other.push(if other.is_empty() { b'{' } else { b',' });
                        other.push(b'"');
                        other.extend_from_slice(key);
                        other.extend_from_slice(b"\":");
                        other.extend_from_slice(v);
                    }
                }
                Ok(())
            })?;
        }
        let (cat, name) = (self.strings.code(cat), self.strings.code(name));
        let proc = self.proc_of(pid, host, ts, ts + dur, id);
        let s = &mut self.spans;
        s.cat.push(cat);
        s.name.push(name);
        s.proc.push(proc);
        s.tid.push(tid);
        s.ts.push(ts);
        s.dur.push(dur);
        s.epoch.push(epoch);
        s.step.push(step);
        s.args.push(if other.is_empty() {
            None
        } else {
            other.push(b'}');
            Some(String::from_utf8_lossy(&other).into_owned())
        });
        Ok(())
    }
}

/// What a call does to a file position, from its name (DFTracer's POSIX and STDIO wrappers).
fn call_kind(name: &[u8], stdio: bool, flags: i64, append_mode: bool) -> u8 {
    match name {
        b"open" | b"open64" | b"openat" | b"openat64" | b"creat" | b"creat64" | b"fopen" | b"fopen64"
        | b"freopen" | b"freopen64" => {
            let append = if stdio { append_mode } else { flags != NA && flags & O_APPEND != 0 };
            if append { kind::OPEN_APPEND } else { kind::OPEN }
        }
        b"close" | b"fclose" => kind::CLOSE,
        b"lseek" | b"lseek64" | b"llseek" => kind::LSEEK,
        b"fseek" | b"fseeko" | b"fseeko64" => kind::FSEEK,
        b"ftell" | b"ftello" | b"ftello64" => kind::FTELL,
        b"read" | b"readv" | b"fread" => kind::READ,
        b"write" | b"writev" | b"fwrite" => kind::WRITE,
        b"pread" | b"pread64" | b"preadv" | b"preadv64" | b"preadv2" => kind::PREAD,
        b"pwrite" | b"pwrite64" | b"pwritev" | b"pwritev64" | b"pwritev2" => kind::PWRITE,
        _ => kind::OTHER,
    }
}

/// Counts the bytes taken from the file (compressed, for gzip) for progress.
struct Counting<'a, R> {
    inner: R,
    seen: &'a AtomicU64,
    own: u64,
}

impl<R: Read> Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.seen.fetch_add(n as u64, Ordering::Relaxed);
        self.own += n as u64;
        Ok(n)
    }
}

/// Read one trace file to its end (or as far as it goes).
pub fn read_file(path: &str, seen: &AtomicU64, stop: &AtomicBool) -> FileResult {
    let mut out = FileResult::default();
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            out.error = Some(format!("cannot open: {e}"));
            return out;
        }
    };
    let mut head = [0u8; 2];
    let got = read_up_to(&mut file, &mut head);
    out.gzip = got == 2 && head == [0x1f, 0x8b];
    if got == 0 {
        return out; // an empty file: the runtime leaves these
    }
    let counted = Counting { inner: std::io::Cursor::new(head[..got].to_vec()).chain(file), seen, own: 0 };
    if out.gzip {
        let mut r = MultiGzDecoder::new(BufReader::with_capacity(1 << 20, counted));
        lines(&mut r, &mut out, stop);
    } else {
        let mut r = counted;
        lines(&mut r, &mut out, stop);
    }
    // metadata events DFTracer 1.0.x numbered among the process's events: not lost (to its first process row)
    for (pid, (n, max)) in std::mem::take(&mut out.meta_ids) {
        if let Some(p) = out.procs.iter_mut().find(|p| p.pid == pid) {
            p.with_id += n;
            p.max_id = p.max_id.max(max);
        }
    }
    out
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..]) {
            Ok(0) | Err(_) => break,
            Ok(k) => n += k,
        }
    }
    n
}

fn lines(r: &mut dyn Read, out: &mut FileResult, stop: &AtomicBool) {
    let mut buf: Vec<u8> = vec![0; BLOCK];
    let mut filled = 0;
    let mut number: u64 = 0;
    loop {
        if stop.load(Ordering::Relaxed) {
            out.error = Some("stopped".into());
            return;
        }
        if filled == buf.len() {
            if buf.len() >= MAX_LINE {
                out.bad_lines += 1;
                out.first_bad.get_or_insert((number + 1, "(a line longer than 64 MiB)".into()));
                out.error = Some("a line longer than 64 MiB: not a trace's".into());
                return;
            }
            buf.resize(buf.len() * 2, 0);
        }
        let n = match r.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) => {
                out.error = Some(gzip_reason(&e));
                0
            }
        };
        if n == 0 {
            break;
        }
        out.bytes_in += n as u64;
        let end = filled + n;
        // every complete line of the block
        let mut start = 0;
        let search_from = filled;
        let mut at = search_from;
        while let Some(k) = memchr::memchr(b'\n', &buf[at..end]) {
            let stop_at = at + k;
            number += 1;
            out.line(&buf[start..stop_at], number);
            start = stop_at + 1;
            at = start;
        }
        if out.lines > 0 && out.bad_lines == out.lines && out.bad_lines >= GARBAGE_LINES {
            return; // nothing but garbage so far: not a trace; said by the caller
        }
        buf.copy_within(start..end, 0);
        filled = end - start;
        if out.error.is_some() {
            break;
        }
    }
    if filled > 0 {
        number += 1;
        let before = out.bad_lines;
        let ok = out.line(&buf[..filled], number);
        let starts_event = buf[..filled].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{');
        if !ok && starts_event {
            // the last line stops mid-event: the file was cut, not garbage
            out.bad_lines = before;
            out.lines -= 1;
            out.cut = true;
            if out.first_bad.as_ref().is_some_and(|(n, _)| *n == number) {
                out.first_bad = None;
            }
        }
    }
}

fn gzip_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::UnexpectedEof => "the gzip stream ends early (the file was cut)".into(),
        _ => format!("corrupt gzip data ({e})"),
    }
}

/// Read `paths` with `threads` threads, biggest first; `seen` counts bytes taken (for progress).
pub fn read_files(paths: &[String], threads: usize, seen: &AtomicU64, stop: &AtomicBool) -> Vec<FileResult> {
    let mut order: Vec<usize> = (0..paths.len()).collect();
    let size = |i: &usize| std::fs::metadata(&paths[*i]).map(|m| m.len()).unwrap_or(0);
    order.sort_by_key(|i| std::cmp::Reverse(size(i)));
    let slots: Vec<Mutex<Option<FileResult>>> = (0..paths.len()).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let workers = threads.clamp(1, paths.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= order.len() {
                    break;
                }
                let i = order[k];
                let got = read_file(&paths[i], seen, stop);
                *slots[i].lock().unwrap() = Some(got);
            });
        }
    });
    slots.into_iter().map(|m| m.into_inner().unwrap().unwrap_or_default()).collect()
}

/// What each file held, apart from its events (those are merged).
pub struct FileStatus {
    pub lines: u64,
    pub bad_lines: u64,
    pub first_bad: Option<(u64, String)>,
    pub unknown: Vec<(String, u64)>,
    pub cut: bool,
    pub error: Option<String>,
    pub gzip: bool,
    pub bytes_in: u64,
    pub events: u64,
    pub pids: Vec<i64>,
}

/// Every file's events in one set of columns: strings in one table, processes numbered over all files,
/// times as seconds from the job's start (`t0`, in trace units; `ticks` of them a second).
pub struct Merged {
    pub files: Vec<FileStatus>,
    pub strings: Vec<String>,
    pub io: MergedIo,
    pub spans: MergedSpans,
    pub procs: Vec<(Proc, usize)>, // with the index of its file
    pub meta: Vec<Meta>,
    pub internal: Vec<Internal>,
    pub aggregated: Vec<Aggregated>,
    pub t0: i64,
    pub ticks: i64,
}

#[derive(Default)]
pub struct MergedIo {
    pub proc: Vec<u32>,
    pub tid: Vec<i64>,
    pub start: Vec<f64>,
    pub end: Vec<f64>,
    pub stdio: Vec<u8>,
    pub func: Vec<u32>,
    pub kind: Vec<u8>,
    pub file: Vec<u32>,
    pub ret: Vec<i64>,
    pub bytes: Vec<i64>,
    pub offset: Vec<i64>,
    pub whence: Vec<i8>,
    pub fd: Vec<i32>,
}

#[derive(Default)]
pub struct MergedSpans {
    pub proc: Vec<u32>,
    pub tid: Vec<i64>,
    pub start: Vec<f64>,
    pub end: Vec<f64>,
    pub cat: Vec<u32>,
    pub name: Vec<u32>,
    pub epoch: Vec<i64>,
    pub step: Vec<i64>,
    pub args: Vec<Option<String>>,
}

/// Units of `ts` and `dur` per second, from the CM (time_metric) metadata event; microseconds by default.
fn ticks_of(meta: &[Meta]) -> i64 {
    for m in meta {
        if m.event == "CM" && m.name == "time_metric" {
            match m.value.to_ascii_uppercase().as_str() {
                "NS" => return 1_000_000_000,
                "US" => return 1_000_000,
                "MS" => return 1_000,
                "S" | "SEC" => return 1,
                _ => {}
            }
        }
    }
    1_000_000
}

/// Append `from` to `to` (the first file's column is taken whole: growing it in place copies nothing where
/// the allocator can extend the block).
fn append<T: Copy>(to: &mut Vec<T>, from: Vec<T>) {
    if to.is_empty() {
        *to = from;
    } else {
        to.extend_from_slice(&from);
    }
}

fn append_mapped(to: &mut Vec<u32>, from: Vec<u32>, map: &[u32]) {
    let moved = |c: u32| if c == NO_STR { NO_STR } else { map[c as usize] };
    if to.is_empty() {
        let mut v = from;
        v.iter_mut().for_each(|c| *c = moved(*c));
        *to = v;
    } else {
        to.extend(from.into_iter().map(moved));
    }
}

fn seconds(ts: &[i64], dur: Option<&[i64]>, t0: i64, ticks: f64) -> Vec<f64> {
    match dur {
        None => ts.iter().map(|&t| (t - t0) as f64 / ticks).collect(),
        Some(d) => ts.iter().zip(d).map(|(&t, &d)| (t + d - t0) as f64 / ticks).collect(),
    }
}

/// Merge the files' results, biggest first (its columns become the merged ones).
pub fn merge(results: Vec<FileResult>) -> Merged {
    let mut meta: Vec<Meta> = Vec::new();
    let mut results = results;
    for r in results.iter_mut() {
        meta.append(&mut r.meta);
    }
    let ticks = ticks_of(&meta);
    let t0 = results.iter().flat_map(|r| r.procs.iter().map(|p| p.first)).min().unwrap_or(0);
    let mut strings: Vec<String> = Vec::new();
    let mut index: FxHashMap<String, u32> = FxHashMap::default();
    let mut files = Vec::with_capacity(results.len());
    let mut io = MergedIo::default();
    let mut spans = MergedSpans::default();
    let mut procs = Vec::new();
    let mut internal = Vec::new();
    let mut aggregated = Vec::new();
    let tk = ticks as f64;
    // the biggest file's columns first, then the others: rows stay grouped by file
    let mut order: Vec<usize> = (0..results.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(results[i].io.ts.len() + results[i].spans.ts.len()));
    let mut taken: Vec<Option<FileResult>> = results.into_iter().map(Some).collect();
    let mut statuses: Vec<Option<FileStatus>> = (0..taken.len()).map(|_| None).collect();
    for &f in &order {
        let r = taken[f].take().unwrap();
        let map: Vec<u32> = r.strings.list.into_iter().map(|s| {
            let next = strings.len() as u32;
            *index.entry(s.clone()).or_insert_with(|| {
                strings.push(s);
                next
            })
        }).collect();
        let first_proc = procs.len() as u32;
        let mut pids: Vec<i64> = r.procs.iter().map(|p| p.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        for mut p in r.procs {
            p.host = if p.host == NO_STR { NO_STR } else { map[p.host as usize] };
            procs.push((p, f));
        }
        let events = (r.io.ts.len() + r.spans.ts.len() + r.internal.len() + r.aggregated.len()) as u64;
        let shift = |v: Vec<u32>| -> Vec<u32> { v.into_iter().map(|p| p + first_proc).collect() };
        let i = r.io;
        let (start, end) = (seconds(&i.ts, None, t0, tk), seconds(&i.ts, Some(&i.dur), t0, tk));
        append(&mut io.proc, shift(i.proc));
        append(&mut io.tid, i.tid);
        append(&mut io.start, start);
        append(&mut io.end, end);
        append(&mut io.stdio, i.stdio);
        append_mapped(&mut io.func, i.func, &map);
        append(&mut io.kind, i.kind);
        append_mapped(&mut io.file, i.file, &map);
        append(&mut io.ret, i.ret);
        append(&mut io.bytes, i.bytes);
        append(&mut io.offset, i.offset);
        append(&mut io.whence, i.whence);
        append(&mut io.fd, i.fd);
        let sp = r.spans;
        let (start, end) = (seconds(&sp.ts, None, t0, tk), seconds(&sp.ts, Some(&sp.dur), t0, tk));
        append(&mut spans.proc, shift(sp.proc));
        append(&mut spans.tid, sp.tid);
        append(&mut spans.start, start);
        append(&mut spans.end, end);
        append_mapped(&mut spans.cat, sp.cat, &map);
        append_mapped(&mut spans.name, sp.name, &map);
        append(&mut spans.epoch, sp.epoch);
        append(&mut spans.step, sp.step);
        spans.args.extend(sp.args);
        for mut e in r.internal {
            e.proc += first_proc;
            internal.push(e);
        }
        for mut e in r.aggregated {
            e.proc += first_proc;
            aggregated.push(e);
        }
        statuses[f] = Some(FileStatus {
            lines: r.lines, bad_lines: r.bad_lines, first_bad: r.first_bad,
            unknown: r.unknown.into_iter().collect(), cut: r.cut, error: r.error, gzip: r.gzip,
            bytes_in: r.bytes_in, events, pids,
        });
    }
    files.extend(statuses.into_iter().map(|s| s.unwrap()));
    Merged { files, strings, io, spans, procs, meta, internal, aggregated, t0, ticks }
}

/// Where a read or write was in its file (`offset`) and how that is known (`source`: 0 not a read or
/// write, 1 the call names it, 2 followed from the file position, 3 unknown: the file was not opened in
/// the trace (opened before tracing began, or its events were lost), 4 unknown: the file was open twice
/// at once in the process (whose position moved is not known), 5 unknown: a write in append mode, 6
/// unknown: a seek from the end of the file, or one the trace cannot follow); and each call's `seq`, its
/// place among its group's calls in time order.
///
/// Positions are kept per (`group`: a process, `key`: its file handle — a file and layer), through the
/// calls in (start, row) order: an open puts it at 0, a seek sets it (lseek's return value is the new
/// position), a read or write advances it by its bytes, a close forgets it.
#[allow(clippy::too_many_arguments)]
pub fn positions(group: &[i64], key: &[i64], start: &[f64], kinds: &[u8], bytes: &[i64], offset: &[i64],
                 ret: &[i64], whence: &[i8]) -> (Vec<i64>, Vec<u8>, Vec<i64>) {
    const CALL: u8 = 1;
    const FOLLOWED: u8 = 2;
    const UNOPENED: u8 = 3;
    const TWICE: u8 = 4;
    const APPEND: u8 = 5;
    const SEEK_END: u8 = 6;
    struct State {
        open: i32,
        pos: i64,
        why: u8, // when pos is NA
        append: bool,
    }
    let n = group.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    // a stable sort: a process's calls are in time order already, file by file (adaptive: runs are merged)
    order.sort_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        group[a].cmp(&group[b]).then(start[a].total_cmp(&start[b]))
    });
    let mut out_off = vec![NA; n];
    let mut out_src = vec![0u8; n];
    let mut seq = vec![0i64; n];
    let mut states: FxHashMap<(i64, i64), State> = FxHashMap::default();
    let (mut current, mut number) = (None, 0i64);
    for &i in &order {
        let i = i as usize;
        if current != Some(group[i]) {
            current = Some(group[i]);
            number = 0;
        }
        seq[i] = number;
        number += 1;
        let k = kinds[i];
        if k == kind::OTHER {
            continue;
        }
        let st = states.entry((group[i], key[i])).or_insert(State { open: 0, pos: NA, why: UNOPENED, append: false });
        let forget = |st: &mut State, why: u8| {
            st.pos = NA;
            st.why = why;
        };
        match k {
            kind::OPEN | kind::OPEN_APPEND => {
                st.open += 1;
                if st.open > 1 {
                    forget(st, TWICE);
                } else {
                    st.pos = 0;
                    st.append = k == kind::OPEN_APPEND;
                }
            }
            kind::CLOSE => {
                if st.open > 0 {
                    st.open -= 1;
                }
                if st.open == 0 {
                    forget(st, UNOPENED);
                    st.append = false;
                }
            }
            kind::LSEEK | kind::FSEEK | kind::FTELL => {
                if st.open > 1 {
                    continue;
                }
                let r = ret[i];
                if k != kind::FSEEK && r != NA && r >= 0 {
                    st.pos = r; // lseek and ftell return the position
                } else if k != kind::FTELL && (r == NA || (k == kind::FSEEK && r == 0)) {
                    match whence[i] {
                        0 if offset[i] != NA => st.pos = offset[i],
                        1 if offset[i] != NA && st.pos != NA => st.pos += offset[i],
                        1 => {
                            let why = if st.pos == NA { st.why } else { SEEK_END };
                            forget(st, why)
                        }
                        _ => forget(st, SEEK_END),
                    }
                }
            }
            kind::PREAD | kind::PWRITE => {
                out_off[i] = offset[i];
                out_src[i] = if offset[i] != NA { CALL } else { UNOPENED };
            }
            _ => {
                // read, write: at the position, which they advance
                if st.open > 1 {
                    out_src[i] = TWICE;
                } else if k == kind::WRITE && st.append {
                    out_src[i] = APPEND;
                    forget(st, APPEND);
                } else if st.pos == NA {
                    out_src[i] = st.why;
                } else {
                    out_off[i] = st.pos;
                    out_src[i] = FOLLOWED;
                    if bytes[i] != NA {
                        st.pos += bytes[i];
                    }
                }
            }
        }
    }
    (out_off, out_src, seq)
}

/// Each span's enclosing span in its thread (`group`), by time: its parent row (-1: none) and depth.
pub fn nest(group: &[i64], start: &[f64], end: &[f64]) -> (Vec<i64>, Vec<i32>) {
    let n = group.len();
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        group[a].cmp(&group[b]).then(start[a].total_cmp(&start[b])).then(end[b].total_cmp(&end[a]))
    });
    let mut parent = vec![-1i64; n];
    let mut depth = vec![0i32; n];
    let mut stack: Vec<usize> = Vec::new();
    let mut current = None;
    for &i in &order {
        let i = i as usize;
        if current != Some(group[i]) {
            stack.clear();
            current = Some(group[i]);
        }
        while let Some(&top) = stack.last() {
            if start[i] >= end[top] { stack.pop(); } else { break }
        }
        if let Some(&top) = stack.last() {
            if end[i] <= end[top] {
                parent[i] = top as i64;
                depth[i] = depth[top] + 1;
            }
        }
        stack.push(i);
    }
    (parent, depth)
}
