//! Just enough JSON for one DFTracer event a line: a cursor over a line's bytes that reads strings, numbers
//! and skips any value, without building a document. Strings are handed back raw (between the quotes) with
//! a flag saying whether they hold escapes; `unescape` decodes those few.

pub struct Cursor<'a> {
    pub b: &'a [u8],
    pub i: usize,
}

/// A string as it stands in the line: its bytes between the quotes, escapes not yet decoded.
#[derive(Clone, Copy)]
pub struct Str<'a> {
    pub raw: &'a [u8],
    pub escaped: bool,
}

pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn as_i64(&self) -> i64 {
        match *self {
            Num::Int(v) => v,
            Num::Float(f) => f as i64,
        }
    }
}

pub type Bad = ();

impl<'a> Cursor<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Cursor { b, i: 0 }
    }

    #[inline]
    pub fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\r' | b'\n') {
            self.i += 1;
        }
    }

    #[inline]
    pub fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// The first byte of the next value (white space skipped).
    #[inline]
    pub fn peek_value(&mut self) -> Option<u8> {
        self.ws();
        self.peek()
    }

    #[inline]
    pub fn eat(&mut self, c: u8) -> Result<(), Bad> {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(())
        }
    }

    /// A string; the cursor is on its opening quote (after white space).
    #[inline]
    pub fn string(&mut self) -> Result<Str<'a>, Bad> {
        self.ws();
        if self.peek() != Some(b'"') {
            return Err(());
        }
        let b = self.b;
        let start = self.i + 1;
        // most strings here are short (names, hashes): a plain loop beats a vector search's set-up
        let mut j = start;
        let short_end = b.len().min(start + 32);
        while j < short_end {
            match b[j] {
                b'"' => {
                    self.i = j + 1;
                    return Ok(Str { raw: &b[start..j], escaped: false });
                }
                b'\\' => break,
                _ => j += 1,
            }
        }
        let mut escaped = false;
        loop {
            match memchr::memchr2(b'"', b'\\', &b[j..]) {
                None => return Err(()),
                Some(k) => {
                    j += k;
                    if b[j] == b'\\' {
                        escaped = true;
                        j += 2;
                        if j > b.len() {
                            return Err(());
                        }
                    } else {
                        self.i = j + 1;
                        return Ok(Str { raw: &b[start..j], escaped });
                    }
                }
            }
        }
    }

    /// A number (an integer, or a float where it has a fraction or an exponent).
    #[inline]
    pub fn number(&mut self) -> Result<Num, Bad> {
        self.ws();
        let b = self.b;
        let start = self.i;
        let mut j = start;
        let neg = j < b.len() && b[j] == b'-';
        if neg {
            j += 1;
        }
        let digits = j;
        let mut v: i64 = 0;
        // up to 18 digits cannot overflow an i64
        let fast_end = b.len().min(digits + 18);
        while j < fast_end {
            let d = b[j].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            v = v * 10 + d as i64;
            j += 1;
        }
        if j == digits {
            return Err(());
        }
        let mut overflow = false;
        while j < b.len() && b[j].is_ascii_digit() {
            // a 19-digit integer (nanoseconds since 1970) still fits
            match v.checked_mul(10).and_then(|x| x.checked_add((b[j] - b'0') as i64)) {
                Some(x) => v = x,
                None => overflow = true,
            }
            j += 1;
        }
        if overflow || (j < b.len() && matches!(b[j], b'.' | b'e' | b'E')) {
            while j < b.len() && matches!(b[j], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                j += 1;
            }
            let text = std::str::from_utf8(&b[start..j]).map_err(|_| ())?;
            self.i = j;
            return text.parse::<f64>().map(Num::Float).map_err(|_| ());
        }
        self.i = j;
        Ok(Num::Int(if neg { -v } else { v }))
    }

    /// An integer value, also when written as a string of digits ("pid": "42") or a float; null gives None.
    pub fn int(&mut self) -> Result<Option<i64>, Bad> {
        self.ws();
        match self.peek() {
            Some(b'"') => {
                let s = self.string()?;
                Ok(std::str::from_utf8(s.raw).ok().and_then(|t| t.trim().parse::<i64>().ok()))
            }
            Some(b'n') => {
                self.skip_value()?;
                Ok(None)
            }
            Some(b't') | Some(b'f') => {
                let t = self.peek() == Some(b't');
                self.skip_value()?;
                Ok(Some(t as i64))
            }
            _ => Ok(Some(self.number()?.as_i64())),
        }
    }

    /// Skip any value; returns the bytes it spans.
    pub fn skip_value(&mut self) -> Result<&'a [u8], Bad> {
        self.ws();
        let start = self.i;
        match self.peek().ok_or(())? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                while self.i < self.b.len() {
                    match self.b[self.i] {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                return Ok(&self.b[start..self.i]);
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
                return Err(());
            }
            b't' => self.word(b"true")?,
            b'f' => self.word(b"false")?,
            b'n' => self.word(b"null")?,
            _ => {
                self.number()?;
            }
        }
        Ok(&self.b[start..self.i])
    }

    fn word(&mut self, w: &[u8]) -> Result<(), Bad> {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            Ok(())
        } else {
            Err(())
        }
    }

    /// Walk the members of an object (the cursor on its '{'), calling `member(key, cursor)`, which must
    /// consume the value.
    pub fn object(&mut self, mut member: impl FnMut(Str<'a>, &mut Cursor<'a>) -> Result<(), Bad>) -> Result<(), Bad> {
        self.eat(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            member(key, self)?;
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(()),
            }
        }
    }
}

/// The text of a JSON string's raw bytes, escapes decoded (invalid UTF-8 replaced).
pub fn unescape(s: Str) -> String {
    if !s.escaped {
        return String::from_utf8_lossy(s.raw).into_owned();
    }
    let raw = s.raw;
    let mut out: Vec<u8> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c != b'\\' || i + 1 >= raw.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = raw[i + 1];
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'u' => {
                let mut code = hex4(raw, i);
                i += 4;
                if (0xD800..0xDC00).contains(&code) && raw.get(i) == Some(&b'\\') && raw.get(i + 1) == Some(&b'u') {
                    let low = hex4(raw, i + 2);
                    if (0xDC00..0xE000).contains(&low) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                        i += 6;
                    }
                }
                let ch = char::from_u32(code).unwrap_or('\u{FFFD}');
                let mut buf = [0u8; 4];
                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            }
            other => out.push(other), // \" \\ \/
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex4(raw: &[u8], at: usize) -> u32 {
    raw.get(at..at + 4)
        .and_then(|h| std::str::from_utf8(h).ok())
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .unwrap_or(0xFFFD)
}
