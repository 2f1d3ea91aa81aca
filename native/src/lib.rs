//! iolens.reader._native: the reader's hot path. Inflates a log's regions on every core and walks DXT records
//! into columns, without the GIL. It knows zlib streams and DXT records, nothing else of the format.

mod dftracer;
mod dxt;
mod inflate;
mod json;
mod pieces;

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use dxt::{Columns, Layout, Walker};
use pieces::{Region, Sink, Sizes};

/// (module, segment size, big endian, offsets recorded) for a DXT region; None for any other region.
type DxtSpec = Option<(String, usize, bool, bool)>;

/// Inflate `regions` [(offset, length, label, dxt)] of `data` ("zlib" or "none") with `threads` threads.
/// Returns, per region, its inflated bytes, or for a DXT region a dict of numpy columns. A corrupt or
/// truncated region raises ValueError with a one-line reason.
#[pyfunction]
#[pyo3(signature = (data, regions, compression, threads, min_piece, max_piece, buffered, progress=None))]
#[allow(clippy::too_many_arguments)]
fn read_regions<'py>(py: Python<'py>, data: &[u8], regions: Vec<(usize, usize, String, DxtSpec)>,
                     compression: &str, threads: usize, min_piece: usize, max_piece: usize, buffered: usize,
                     progress: Option<Py<PyAny>>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let zlib = match compression {
        "zlib" => true,
        "none" => false,
        other => return Err(PyValueError::new_err(format!("compression {other} is not read natively"))),
    };
    let mut spans = Vec::with_capacity(regions.len());
    let mut sinks = Vec::with_capacity(regions.len());
    for (offset, length, label, dxt) in regions {
        let end = offset.checked_add(length).filter(|&e| e <= data.len())
            .ok_or_else(|| PyValueError::new_err(format!("truncated: the {label} region ends past the end of the file")))?;
        let dxt = dxt.map(|(module, seg_size, big_endian, has_offsets)|
            (module, Layout { seg_size, big_endian, has_offsets }));
        sinks.push(match &dxt {
            Some((module, layout)) => Sink::Dxt { walker: Walker::new(module, *layout), chunks: Vec::new() },
            None => Sink::Bytes(Vec::new()),
        });
        spans.push(Region::new(&data[offset..end], label, zlib, dxt));
    }
    let sizes = Sizes { min_piece, max_piece, buffered };
    let mut failed: Option<PyErr> = None;
    let mut last = -1.0;
    // every 1 %: the progress callback, and Ctrl-C (a signal waits for the GIL to be seen)
    let mut report = |fraction: f64| {
        if fraction - last < 0.01 && fraction < 1.0 {
            return true;
        }
        last = fraction;
        Python::attach(|py| {
            let called = match progress.as_ref() {
                Some(cb) => cb.call1(py, (fraction,)).map(|_| ()),
                None => py.check_signals(),
            };
            called.map_err(|e| failed = Some(e)).is_ok()
        })
    };
    let outcome = py.detach(|| {
        // a panic is a bug of iolens's: said in one line, not a Python traceback
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pieces::run(&mut spans, &mut sinks, threads, &sizes, &mut report)
        }))
        .unwrap_or_else(|_| Err(Some("internal error in iolens's native reader".to_string())))
    });
    match outcome {
        Ok(()) => sinks.into_iter().map(|sink| to_python(py, sink)).collect(),
        Err(Some(reason)) => Err(PyValueError::new_err(reason)),
        Err(None) => Err(failed.unwrap_or_else(|| PyValueError::new_err("stopped"))),
    }
}

fn to_python(py: Python<'_>, sink: Sink) -> PyResult<Bound<'_, PyAny>> {
    match sink {
        Sink::Bytes(bytes) => Ok(PyBytes::new(py, &bytes).into_any()),
        Sink::Dxt { walker, mut chunks } => {
            chunks.push(walker.close().map_err(PyValueError::new_err)?);
            let d = PyDict::new(py);
            let records = |f: fn(&Columns) -> &[i64]| chunks.iter().flat_map(f).copied().collect::<Vec<i64>>();
            d.set_item("ids", PyArray1::from_vec(py, chunks.iter().flat_map(|c| c.ids.iter().copied()).collect()))?;
            d.set_item("ranks", PyArray1::from_vec(py, records(|c| &c.ranks)))?;
            d.set_item("write_counts", PyArray1::from_vec(py, records(|c| &c.write_counts)))?;
            d.set_item("read_counts", PyArray1::from_vec(py, records(|c| &c.read_counts)))?;
            let hosts: Vec<u8> = chunks.iter().flat_map(|c| c.hostnames.iter().copied()).collect();
            d.set_item("hostnames", PyBytes::new(py, &hosts))?;
            let segments = PyList::empty(py);
            for c in chunks.into_iter().filter(|c| !c.offset.is_empty()) {
                let s = PyDict::new(py);
                s.set_item("offset", PyArray1::from_vec(py, shrunk(c.offset)))?;
                s.set_item("length", PyArray1::from_vec(py, shrunk(c.length)))?;
                s.set_item("start", PyArray1::from_vec(py, shrunk(c.start)))?;
                s.set_item("end", PyArray1::from_vec(py, shrunk(c.end)))?;
                if c.with_pthread {
                    s.set_item("pthread_id", PyArray1::from_vec(py, shrunk(c.pthread_id)))?;
                }
                segments.append(s)?;
            }
            d.set_item("chunks", segments)?;
            Ok(d.into_any())
        }
    }
}

/// Give back the spare capacity of a grown column (glibc shrinks a big block in place).
fn shrunk<T>(mut v: Vec<T>) -> Vec<T> {
    v.shrink_to_fit();
    v
}

/// Read DFTracer trace files (JSON lines, plain or gzip'd) with `threads` threads, and merge them. Returns a
/// dict: `files` (per path: lines, bad_lines, first_bad (line number, text) or None, unknown [(ph, count)],
/// cut, error (a reason or None), gzip, bytes, events, pids), `strings` (names, categories, hashes: the
/// columns hold their index, u32 maximum for none), `io` and `spans` (dicts of numpy columns; `proc` is a
/// row of `procs`; start and end in seconds from `t0`), `procs` [(pid, host, events, first, last, max_id,
/// with_id, file)], `meta` [(pid, event, name, value)], `internal` [(proc, ts, name, args JSON)], `aggregated`
/// [(proc, tid, ts, cat, name, args JSON)] (DFTracer 2's aggregation mode), `t0`,
/// `ticks` (trace units a second). Missing integers are i64 minimum (whence, fd: -1).
#[pyfunction]
#[pyo3(signature = (paths, threads, progress=None))]
fn read_dftracer<'py>(py: Python<'py>, paths: Vec<String>, threads: usize, progress: Option<Py<PyAny>>)
                      -> PyResult<Bound<'py, PyDict>> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let total: u64 = paths.iter().map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)).sum::<u64>().max(1);
    let seen = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let mut failed: Option<PyErr> = None;
    let merged = py.detach(|| {
        std::thread::scope(|s| {
            let reader = s.spawn(|| {
                let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    dftracer::merge(dftracer::read_files(&paths, threads, &seen, &stop))
                }));
                done.store(true, Ordering::Release);
                got
            });
            // every 50 ms: the progress callback, and Ctrl-C
            let mut last = -1.0;
            while !done.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(50));
                let fraction = seen.load(Ordering::Relaxed) as f64 / total as f64;
                if failed.is_some() || fraction - last < 0.01 {
                    continue;
                }
                last = fraction;
                Python::attach(|py| {
                    let called = match progress.as_ref() {
                        Some(cb) => cb.call1(py, (fraction.min(1.0),)).map(|_| ()),
                        None => py.check_signals(),
                    };
                    if let Err(e) = called {
                        failed = Some(e);
                        stop.store(true, Ordering::Relaxed);
                    }
                });
            }
            reader.join().unwrap_or_else(|_| Err(Box::new("panic")))
        })
    });
    if let Some(e) = failed {
        return Err(e);
    }
    let m = merged.map_err(|_| PyValueError::new_err("internal error in iolens's native DFTracer reader"))?;
    merged_dict(py, m)
}

fn merged_dict(py: Python<'_>, m: dftracer::Merged) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    let files = PyList::empty(py);
    for f in m.files {
        let fd = PyDict::new(py);
        fd.set_item("lines", f.lines)?;
        fd.set_item("bad_lines", f.bad_lines)?;
        fd.set_item("first_bad", f.first_bad)?;
        fd.set_item("unknown", f.unknown)?;
        fd.set_item("cut", f.cut)?;
        fd.set_item("error", f.error)?;
        fd.set_item("gzip", f.gzip)?;
        fd.set_item("bytes", f.bytes_in)?;
        fd.set_item("events", f.events)?;
        fd.set_item("pids", f.pids)?;
        files.append(fd)?;
    }
    d.set_item("files", files)?;
    d.set_item("strings", m.strings)?;
    let io = PyDict::new(py);
    let i = m.io;
    for (name, col) in [("tid", i.tid), ("ret", i.ret), ("bytes", i.bytes), ("offset", i.offset)] {
        io.set_item(name, PyArray1::from_vec(py, shrunk(col)))?;
    }
    io.set_item("start", PyArray1::from_vec(py, i.start))?;
    io.set_item("end", PyArray1::from_vec(py, i.end))?;
    for (name, col) in [("proc", i.proc), ("func", i.func), ("file", i.file)] {
        io.set_item(name, PyArray1::from_vec(py, shrunk(col)))?;
    }
    for (name, col) in [("stdio", i.stdio), ("kind", i.kind)] {
        io.set_item(name, PyArray1::from_vec(py, shrunk(col)))?;
    }
    io.set_item("whence", PyArray1::from_vec(py, shrunk(i.whence)))?;
    io.set_item("fd", PyArray1::from_vec(py, shrunk(i.fd)))?;
    d.set_item("io", io)?;
    let sp = PyDict::new(py);
    let s = m.spans;
    for (name, col) in [("tid", s.tid), ("epoch", s.epoch), ("step", s.step)] {
        sp.set_item(name, PyArray1::from_vec(py, shrunk(col)))?;
    }
    sp.set_item("start", PyArray1::from_vec(py, s.start))?;
    sp.set_item("end", PyArray1::from_vec(py, s.end))?;
    for (name, col) in [("proc", s.proc), ("cat", s.cat), ("name", s.name)] {
        sp.set_item(name, PyArray1::from_vec(py, shrunk(col)))?;
    }
    sp.set_item("args", s.args)?;
    d.set_item("spans", sp)?;
    let procs: Vec<(i64, u32, u64, i64, i64, i64, u64, usize)> = m.procs.into_iter()
        .map(|(p, f)| (p.pid, p.host, p.events, p.first, p.last, p.max_id, p.with_id, f)).collect();
    d.set_item("procs", procs)?;
    let meta: Vec<(i64, String, String, String)> = m.meta.into_iter().map(|m| (m.pid, m.event, m.name, m.value)).collect();
    d.set_item("meta", meta)?;
    let internal: Vec<(u32, i64, String, String)> =
        m.internal.into_iter().map(|e| (e.proc, e.ts, e.name, e.args)).collect();
    d.set_item("internal", internal)?;
    let aggregated: Vec<(u32, i64, i64, String, String, String)> =
        m.aggregated.into_iter().map(|e| (e.proc, e.tid, e.ts, e.cat, e.name, e.args)).collect();
    d.set_item("aggregated", aggregated)?;
    d.set_item("t0", m.t0)?;
    d.set_item("ticks", m.ticks)?;
    Ok(d)
}

/// File positions of DFTracer's reads and writes (`dftracer::positions`): (offset, source, seq) arrays.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn dftracer_positions<'py>(py: Python<'py>, group: PyReadonlyArray1<i64>, key: PyReadonlyArray1<i64>,
                           start: PyReadonlyArray1<f64>, kind: PyReadonlyArray1<u8>, bytes: PyReadonlyArray1<i64>,
                           offset: PyReadonlyArray1<i64>, ret: PyReadonlyArray1<i64>,
                           whence: PyReadonlyArray1<i8>)
                           -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u8>>, Bound<'py, PyArray1<i64>>)> {
    let cols = [group.as_slice()?, key.as_slice()?, bytes.as_slice()?, offset.as_slice()?, ret.as_slice()?];
    let (kind, whence, start) = (kind.as_slice()?, whence.as_slice()?, start.as_slice()?);
    if cols.iter().any(|c| c.len() != kind.len()) || whence.len() != kind.len() || start.len() != kind.len() {
        return Err(PyValueError::new_err("dftracer_positions: columns of different lengths"));
    }
    let (off, src, seq) = py.detach(|| dftracer::positions(cols[0], cols[1], start, kind, cols[2], cols[3],
                                                            cols[4], whence));
    Ok((PyArray1::from_vec(py, off), PyArray1::from_vec(py, src), PyArray1::from_vec(py, seq)))
}

/// Each span's parent row and depth in its thread (`dftracer::nest`).
#[pyfunction]
fn dftracer_nest<'py>(py: Python<'py>, group: PyReadonlyArray1<i64>, start: PyReadonlyArray1<f64>,
                      end: PyReadonlyArray1<f64>)
                      -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<i32>>)> {
    let (g, s, e) = (group.as_slice()?, start.as_slice()?, end.as_slice()?);
    if g.len() != s.len() || g.len() != e.len() {
        return Err(PyValueError::new_err("dftracer_nest: columns of different lengths"));
    }
    let (parent, depth) = py.detach(|| dftracer::nest(g, s, e));
    Ok((PyArray1::from_vec(py, parent), PyArray1::from_vec(py, depth)))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_regions, m)?)?;
    m.add_function(wrap_pyfunction!(read_dftracer, m)?)?;
    m.add_function(wrap_pyfunction!(dftracer_positions, m)?)?;
    m.add_function(wrap_pyfunction!(dftracer_nest, m)?)?;
    Ok(())
}
