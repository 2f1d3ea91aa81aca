//! DXT_POSIX / DXT_MPIIO regions: per (rank, file) records, each a 104-byte header then its write and
//! read segments. Parts of a region end anywhere: a header or a segment cut by a part's end is carried
//! over to the next part, so a record is never joined.

pub const HEADER: usize = 104;

#[derive(Clone, Copy)]
pub struct Layout {
    pub seg_size: usize, // 32, or 40 with a pthread id
    pub big_endian: bool,
    pub has_offsets: bool, // DXT_MPIIO v1 did not record offsets: -1, as darshan-util gives
}

#[derive(Default)]
pub struct Columns {
    pub ids: Vec<u64>,
    pub ranks: Vec<i64>,
    pub hostnames: Vec<u8>, // 64 bytes per record
    pub write_counts: Vec<i64>,
    pub read_counts: Vec<i64>,
    pub offset: Vec<i64>,
    pub length: Vec<i64>,
    pub start: Vec<f64>,
    pub end: Vec<f64>,
    pub pthread_id: Vec<u64>,
    pub with_pthread: bool, // 40-byte segments
}

pub struct Walker {
    layout: Layout,
    module: String,
    pub cols: Columns,
    left: u64,          // segments of the current record not read yet
    carry: Vec<u8>,     // the start of a header or segment cut by the end of the last part
    at: usize,          // offset in the region of the next part
    rec_at: usize,      // offset in the region of the current record
    last: (i64, i64),   // write and read counts of the current record
}

impl Walker {
    pub fn new(module: &str, layout: Layout) -> Self {
        let cols = Columns { with_pthread: layout.seg_size == 40, ..Columns::default() };
        Walker { layout, module: module.to_string(), cols, left: 0, carry: Vec::new(),
                 at: 0, rec_at: 0, last: (0, 0) }
    }

    pub fn feed(&mut self, part: &[u8]) -> Result<(), String> {
        let mut pos = 0;
        if !self.carry.is_empty() {
            let size = if self.left > 0 { self.layout.seg_size } else { HEADER };
            let need = size - self.carry.len();
            if part.len() < need {
                self.carry.extend_from_slice(part);
                self.at += part.len();
                return Ok(());
            }
            let mut whole = std::mem::take(&mut self.carry);
            whole.extend_from_slice(&part[..need]);
            if self.left > 0 {
                self.segments(&whole, 1);
                self.left -= 1;
            } else {
                self.header(&whole, self.at + need - HEADER)?;
            }
            pos = need;
        }
        self.walk(part, pos)?;
        self.at += part.len();
        Ok(())
    }

    /// Room for what a walk of `buf` (whole records) will hold: exact columns, no regrowth. None when
    /// `buf` is not a run of whole records.
    pub fn reserve_for(&mut self, buf: &[u8]) -> Option<()> {
        let (records, segments) = count(buf, self.layout)?;
        let c = &mut self.cols;
        c.ids.reserve_exact(records);
        c.ranks.reserve_exact(records);
        c.write_counts.reserve_exact(records);
        c.read_counts.reserve_exact(records);
        c.hostnames.reserve_exact(64 * records);
        grow(&mut c.offset, segments);
        grow(&mut c.length, segments);
        grow(&mut c.start, segments);
        grow(&mut c.end, segments);
        if c.with_pthread {
            grow(&mut c.pthread_id, segments);
        }
        Some(())
    }

    /// Inflated bytes walked so far.
    pub fn walked(&self) -> usize {
        self.at
    }

    /// Between records: nothing carried over, no segment of a record still to come.
    pub fn clean(&self) -> bool {
        self.left == 0 && self.carry.is_empty()
    }

    /// The records and segments walked since the last take (the walk goes on where it was).
    pub fn take(&mut self) -> Columns {
        let fresh = Columns { with_pthread: self.cols.with_pthread, ..Columns::default() };
        std::mem::replace(&mut self.cols, fresh)
    }

    /// `n` inflated bytes were walked by another walker (a piece's): offsets in messages stay right.
    pub fn skip(&mut self, n: usize) {
        self.at += n;
    }

    pub fn close(self) -> Result<Columns, String> {
        if self.left > 0 {
            return Err(self.misfit(self.last.0, self.last.1, self.rec_at));
        }
        if !self.carry.is_empty() {
            return Err(format!("truncated {} record header at byte {} of the region", self.module,
                               self.at - self.carry.len()));
        }
        Ok(self.cols)
    }

    fn walk(&mut self, buf: &[u8], mut pos: usize) -> Result<(), String> {
        let size = self.layout.seg_size;
        loop {
            if self.left > 0 {
                let k = (((buf.len() - pos) / size) as u64).min(self.left) as usize;
                self.segments(&buf[pos..pos + k * size], k);
                pos += k * size;
                self.left -= k as u64;
                if self.left > 0 {
                    break;
                }
            }
            if buf.len() - pos < HEADER {
                break;
            }
            self.header(&buf[pos..pos + HEADER], self.at + pos)?;
            pos += HEADER;
        }
        self.carry.extend_from_slice(&buf[pos..]);
        Ok(())
    }

    fn header(&mut self, h: &[u8], at: usize) -> Result<(), String> {
        let be = self.layout.big_endian;
        let (wc, rc) = (int(h, 88, be), int(h, 96, be));
        if wc < 0 || rc < 0 {
            return Err(self.misfit(wc, rc, at));
        }
        let rank = int(h, 8, be);
        let c = &mut self.cols;
        c.ids.push(int(h, 0, be) as u64);
        c.ranks.push(rank);
        c.hostnames.extend_from_slice(&h[24..88]);
        c.write_counts.push(wc);
        c.read_counts.push(rc);
        self.left = wc as u64 + rc as u64;
        self.rec_at = at;
        self.last = (wc, rc);
        Ok(())
    }

    fn segments(&mut self, buf: &[u8], k: usize) {
        let (size, be, offsets) = (self.layout.seg_size, self.layout.big_endian, self.layout.has_offsets);
        let c = &mut self.cols;
        grow(&mut c.offset, k);
        grow(&mut c.length, k);
        grow(&mut c.start, k);
        grow(&mut c.end, k);
        if size == 40 {
            grow(&mut c.pthread_id, k);
        }
        for seg in buf.chunks_exact(size).take(k) {
            let float = |i: usize| f64::from_bits(int(seg, i, be) as u64);
            c.offset.push(if offsets { int(seg, 0, be) } else { -1 });
            c.length.push(int(seg, 8, be));
            c.start.push(float(16));
            c.end.push(float(24));
            if size == 40 {
                // written in native order and never swapped, by darshan-util either
                c.pthread_id.push(u64::from_le_bytes(word(seg, 32)));
            }
        }
    }

    fn misfit(&self, wc: i64, rc: i64, at: usize) -> String {
        format!("corrupt {} record at byte {at}: {wc} writes + {rc} reads do not fit in the region", self.module)
    }
}

/// (records, segments) in `buf` if it is a run of whole records.
fn count(buf: &[u8], layout: Layout) -> Option<(usize, usize)> {
    let (mut pos, mut records, mut segments) = (0usize, 0usize, 0usize);
    while pos < buf.len() {
        let h = buf.get(pos..pos + HEADER)?;
        let (wc, rc) = (int(h, 88, layout.big_endian), int(h, 96, layout.big_endian));
        let n = usize::try_from(wc).ok()?.checked_add(usize::try_from(rc).ok()?)?;
        pos = n.checked_mul(layout.seg_size)?.checked_add(pos + HEADER)?;
        records += 1;
        segments += n;
    }
    (pos == buf.len()).then_some((records, segments))
}

/// The 8-byte integer at b[i..i + 8], in the log's byte order.
fn int(b: &[u8], i: usize, big_endian: bool) -> i64 {
    if big_endian { i64::from_be_bytes(word(b, i)) } else { i64::from_le_bytes(word(b, i)) }
}

fn word(b: &[u8], i: usize) -> [u8; 8] {
    b[i..i + 8].try_into().unwrap()
}

/// Room for `k` more values. Big columns ask for transparent huge pages: far fewer page faults while
/// they are filled (what numpy does for its big arrays).
fn grow<T>(v: &mut Vec<T>, k: usize) {
    if v.capacity() - v.len() >= k {
        return;
    }
    v.reserve(k);
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes >= 4 << 20 {
        let (at, page) = (v.as_ptr() as usize, 4096);
        let start = at.div_ceil(page) * page;
        let end = (at + bytes) / page * page;
        // advice only: failure (no THP on this kernel) changes nothing
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}
