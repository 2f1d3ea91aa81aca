//! iolens.reader._native: the reader's hot path. Inflates a log's regions on every core and walks DXT records
//! into columns, without the GIL. It knows zlib streams and DXT records, nothing else of the format.

mod dxt;
mod inflate;
mod pieces;

use numpy::PyArray1;
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read_regions, m)?)?;
    Ok(())
}
