//! zlib regions: a region is a concatenation of independent zlib streams (one per rank that wrote it).

use flate2::{Decompress, FlushDecompress, Status};

/// Inflated bytes are handed on in parts of about this size.
pub const PART: usize = 1 << 20;
/// Compressed bytes a guessed stream start must inflate without error.
const PROBE: usize = 512;

pub type Fail = String;

/// Inflate the streams of `region` from `pos`, one after the other, until a stream ends at or after
/// `stop`; `emit` gets the inflated bytes in parts. Returns where the last stream ended.
pub fn streams(
    region: &[u8],
    mut pos: usize,
    stop: usize,
    label: &str,
    emit: &mut dyn FnMut(&[u8]) -> Result<(), Fail>,
) -> Result<usize, Fail> {
    let mut z = Decompress::new(true);
    // a fixed buffer: flate2's decompress_vec would zero the whole spare capacity on every call
    let mut out = vec![0u8; PART];
    let mut filled = 0;
    while pos < stop {
        z.reset(true);
        loop {
            if filled == out.len() {
                emit(&out)?;
                filled = 0;
            }
            let (in0, out0) = (z.total_in(), z.total_out());
            let status = z
                .decompress(&region[pos..], &mut out[filled..], FlushDecompress::None)
                .map_err(|e| format!("corrupt compressed data in the {label} region ({e})"))?;
            pos += (z.total_in() - in0) as usize;
            let produced = (z.total_out() - out0) as usize;
            filled += produced;
            if status == Status::StreamEnd {
                break;
            }
            if produced == 0 && z.total_in() == in0 && filled < out.len() {
                // no progress with room to write: the input ran out before the stream ended
                return Err(format!("truncated compressed data in the {label} region (stream does not end)"));
            }
        }
    }
    if filled > 0 {
        emit(&out[..filled])?;
    }
    Ok(pos)
}

/// The first position in [from, to) that looks like a zlib stream start and inflates a little without
/// error (the probe may read past `to`).
pub fn next_stream_start(region: &[u8], from: usize, to: usize) -> Option<usize> {
    let to = to.min(region.len());
    let mut scratch = vec![0u8; 1 << 16];
    (from..to).find(|&at| {
        at + 2 <= region.len()
            && region[at] == 0x78
            && (0x78 * 256 + region[at + 1] as u32).is_multiple_of(31)
            && region[at + 1] & 0x20 == 0
            && probe(&region[at..region.len().min(at + PROBE)], &mut scratch)
    })
}

fn probe(head: &[u8], scratch: &mut [u8]) -> bool {
    let mut z = Decompress::new(true);
    z.decompress(head, scratch, FlushDecompress::None).is_ok()
}
