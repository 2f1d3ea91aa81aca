//! Many regions, many cores. A region holds one zlib stream per rank, back to back, and the log does
//! not say where they start. Big regions are cut at *guessed* stream starts and the pieces inflated by
//! worker threads, a few pieces ahead of the consumer. A piece is used only when the inflation before
//! it ended a stream exactly at its start, so the bytes are always those of sequential inflation; a
//! wrong guess costs the speculative work and the gap is inflated in order.
//!
//! A worker also walks a DXT piece's records, assuming the piece starts at a record (each rank's
//! stream holds whole records). The consumer keeps that walk only when its own walk is between
//! records at the piece's start and the piece's walk ended between records; otherwise the piece is
//! inflated and walked again in order.

use std::sync::{Condvar, Mutex};

use crate::dxt::{Columns, Layout, Walker};
use crate::inflate::{next_stream_start, streams, Fail};

pub enum Sink {
    Bytes(Vec<u8>),
    Dxt { walker: Walker, chunks: Vec<Columns> },
}

impl Sink {
    fn feed(&mut self, part: &[u8]) -> Result<(), Fail> {
        match self {
            Sink::Bytes(v) => {
                v.extend_from_slice(part);
                Ok(())
            }
            Sink::Dxt { walker, .. } => walker.feed(part),
        }
    }

    /// Take a piece's output; false when it cannot be used here (to be redone in order).
    fn adopt(&mut self, output: Output) -> bool {
        match (self, output) {
            (Sink::Bytes(v), Output::Bytes(bytes)) => {
                if v.is_empty() { *v = bytes } else { v.extend_from_slice(&bytes) }
                true
            }
            (Sink::Dxt { walker, chunks }, Output::Records(cols, walked)) if walker.clean() => {
                let own = walker.take();
                chunks.extend([own, cols].into_iter().filter(|c| !c.ids.is_empty() || !c.offset.is_empty()));
                walker.skip(walked);
                true
            }
            _ => false,
        }
    }
}

pub struct Region<'a> {
    pub data: &'a [u8],
    pub label: String,
    pub zlib: bool,
    pub dxt: Option<(String, Layout)>,
    starts: Vec<usize>, // piece starts: 0, then guessed stream starts
}

impl<'a> Region<'a> {
    pub fn new(data: &'a [u8], label: String, zlib: bool, dxt: Option<(String, Layout)>) -> Self {
        Region { data, label, zlib, dxt, starts: Vec::new() }
    }
}

/// Pieces' compressed size: about a quarter of each thread's share, within these bounds; and the
/// inflated bytes of a DXT piece a worker holds before walking them (past that, walked as they come).
pub struct Sizes {
    pub min_piece: usize,
    pub max_piece: usize,
    pub buffered: usize,
}

enum Output {
    Bytes(Vec<u8>),
    Records(Columns, usize), // walked between records from start to end; inflated bytes walked
    Unusable,                // a DXT walk that did not end between records, or failed
}

enum Piece {
    Done(Output, usize), // what the piece gave, where its last stream ended
    Failed(Fail),
    Abandoned, // grew past its output cap: redone in order if it is needed
}

/// Inflate every region into its sink, in order. `progress(fraction)` returns false to stop.
pub fn run(regions: &mut [Region], sinks: &mut [Sink], threads: usize, sizes: &Sizes,
           progress: &mut dyn FnMut(f64) -> bool) -> Result<(), Option<Fail>> {
    let total: usize = regions.iter().map(|r| r.data.len()).sum::<usize>().max(1);
    let piece = (total / (4 * threads.max(1))).clamp(sizes.min_piece, sizes.max_piece.max(sizes.min_piece));
    let mut jobs = Vec::new(); // (region, piece index)
    for (r, region) in regions.iter_mut().enumerate() {
        if region.zlib && threads > 1 {
            region.starts = plan(region.data, piece);
            jobs.extend((0..region.starts.len()).map(|i| (r, i)));
        }
    }
    if jobs.len() < 2 {
        regions.iter_mut().for_each(|r| r.starts.clear());
        return consume(regions, sinks, &mut |_| unreachable!(), total, progress);
    }
    let pool = Pool { jobs: &jobs, regions, window: threads + 1, buffered: sizes.buffered,
                      state: Mutex::new(State::new(jobs.len())), ready: Condvar::new() };
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| pool.work());
        }
        let out = consume(regions, sinks, &mut |j| pool.take(j), total, progress);
        pool.cancel();
        out
    })
}

fn plan(region: &[u8], piece: usize) -> Vec<usize> {
    let n = region.len();
    let mut starts = vec![0];
    if n >= 2 * piece {
        for k in 1..n.div_ceil(piece) {
            let at = (k * piece).max(starts.last().unwrap() + 1);
            if let Some(guess) = next_stream_start(region, at, n.min(at + piece)) {
                starts.push(guess);
            }
        }
    }
    starts
}

fn consume(regions: &[Region], sinks: &mut [Sink], take: &mut dyn FnMut(usize) -> Piece, total: usize,
           progress: &mut dyn FnMut(f64) -> bool) -> Result<(), Option<Fail>> {
    let (mut done, mut job) = (0, 0);
    for (region, sink) in regions.iter().zip(sinks.iter_mut()) {
        let (data, n) = (region.data, region.data.len());
        let in_order = |from: usize, stop: usize, sink: &mut Sink| {
            streams(data, from, stop, &region.label, &mut |part| sink.feed(part))
        };
        if !region.zlib {
            sink.feed(data)?;
        } else if region.starts.is_empty() {
            in_order(0, n, sink)?;
        } else {
            let (starts, mut pos, mut i) = (&region.starts, 0, 0);
            while pos < n {
                while i < starts.len() && starts[i] < pos {
                    take(job + i); // a wrong guess, overrun by the piece before
                    i += 1;
                }
                if i < starts.len() && starts[i] == pos {
                    let stop = starts.get(i + 1).copied().unwrap_or(n);
                    i += 1;
                    pos = match take(job + i - 1) {
                        Piece::Failed(fail) => return Err(Some(fail)),
                        Piece::Done(output, end) => if sink.adopt(output) { end } else { in_order(pos, end, sink)? },
                        Piece::Abandoned => in_order(pos, stop, sink)?,
                    };
                } else {
                    // no trusted piece starts here: inflate in order up to the next guessed start
                    pos = in_order(pos, starts.get(i).copied().unwrap_or(n), sink)?;
                }
                if !progress((done + pos) as f64 / total as f64) {
                    return Err(None);
                }
            }
            for k in i..starts.len() {
                take(job + k); // guesses overrun by the region's last stream
            }
            job += starts.len();
        }
        done += n;
        if !progress(done as f64 / total as f64) {
            return Err(None);
        }
    }
    Ok(())
}

struct State {
    next: usize,     // the next job a worker takes
    consumed: usize, // jobs the consumer has taken
    cancel: bool,
    results: Vec<Option<Piece>>,
}

impl State {
    fn new(n: usize) -> Self {
        State { next: 0, consumed: 0, cancel: false, results: (0..n).map(|_| None).collect() }
    }
}

struct Pool<'a, 'd> {
    jobs: &'a [(usize, usize)],
    regions: &'a [Region<'d>],
    window: usize, // jobs run at most this far ahead of the consumer: their output is held in memory
    buffered: usize,
    state: Mutex<State>,
    ready: Condvar,
}

impl Pool<'_, '_> {
    fn work(&self) {
        // this worker's inflated DXT pieces, one after the other: the buffer is reused (no new pages)
        let mut buf = Vec::new();
        loop {
            let j = {
                let mut st = self.state.lock().unwrap();
                while !st.cancel && st.next < self.jobs.len() && st.next >= st.consumed + self.window {
                    st = self.ready.wait(st).unwrap();
                }
                if st.cancel || st.next >= self.jobs.len() {
                    return;
                }
                st.next += 1;
                st.next - 1
            };
            // a panic must not leave the consumer waiting for this piece forever
            let piece = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.inflate(j, &mut buf)))
                .unwrap_or_else(|_| Piece::Failed(format!("internal error in iolens reading the {} region",
                                                          self.regions[self.jobs[j].0].label)));
            self.state.lock().unwrap().results[j] = Some(piece);
            self.ready.notify_all();
        }
    }

    fn inflate(&self, j: usize, out: &mut Vec<u8>) -> Piece {
        let (r, i) = self.jobs[j];
        let region = &self.regions[r];
        let (start, n) = (region.starts[i], region.data.len());
        let stop = region.starts.get(i + 1).copied().unwrap_or(n);
        // a wrong guess may decode garbage for a while: cap what it may produce
        let cap = (64 << 20) + 64 * (stop - start);
        out.clear();
        // a DXT piece past `buffered` bytes (a stream far bigger than a piece) is walked as it is inflated
        let mut streaming: Option<(Walker, bool)> = None;
        let inflated = streams(region.data, start, stop, &region.label, &mut |part| {
            if let Some((walker, ok)) = streaming.as_mut() {
                *ok = *ok && walker.feed(part).is_ok();
                return Ok(());
            }
            match &region.dxt {
                Some((module, layout)) if out.len() + part.len() > self.buffered => {
                    let mut walker = Walker::new(module, *layout);
                    let ok = walker.feed(out).is_ok() && walker.feed(part).is_ok();
                    out.clear();
                    streaming = Some((walker, ok));
                }
                None if out.len() + part.len() > cap => return Err(String::new()),
                _ => out.extend_from_slice(part),
            }
            Ok(())
        });
        let ended = inflated.map(|end| match (&region.dxt, streaming) {
            // hand the buffer over when it is about the bytes' size, else a copy (it stays for the next piece)
            (None, _) if out.capacity() <= 2 * out.len() => (Output::Bytes(std::mem::take(out)), end),
            (None, _) => (Output::Bytes(out.to_vec()), end),
            (Some(_), Some((mut walker, true))) if walker.clean() => {
                let walked = walker.walked();
                (Output::Records(walker.take(), walked), end)
            }
            (Some(_), Some(_)) => (Output::Unusable, end),
            (Some((module, layout)), None) => (walk(module, *layout, out), end),
        });
        match ended {
            Ok((output, end)) => Piece::Done(output, end),
            Err(fail) if fail.is_empty() => Piece::Abandoned,
            Err(fail) => Piece::Failed(fail),
        }
    }

    fn take(&self, j: usize) -> Piece {
        let mut st = self.state.lock().unwrap();
        while st.results[j].is_none() {
            st = self.ready.wait(st).unwrap();
        }
        st.consumed = j + 1;
        let piece = st.results[j].take().unwrap();
        drop(st);
        self.ready.notify_all();
        piece
    }

    fn cancel(&self) {
        self.state.lock().unwrap().cancel = true;
        self.ready.notify_all();
    }
}

/// A piece's records, walked as if it started at a record: exact columns (the inflated piece is
/// counted first), so no column is regrown while other threads run.
fn walk(module: &str, layout: Layout, buf: &[u8]) -> Output {
    let mut walker = Walker::new(module, layout);
    if walker.reserve_for(buf).is_none() || walker.feed(buf).is_err() || !walker.clean() {
        return Output::Unusable;
    }
    Output::Records(walker.take(), buf.len())
}
