//! Inflating a zlib stream (RFC 1950/1951) that starts from a preset dictionary and arrives
//! in sync-flushed chunks, as SPDY/3 compresses its header blocks: each chunk ends on a block
//! boundary, and back-references reach into earlier chunks and the dictionary. Stored, fixed
//! and dynamic Huffman blocks are read; a chunk that ends inside a block is an error.

/// Largest distance a back-reference may reach.
const WINDOW: usize = 32 * 1024;

/// What is wrong with compressed input.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InflateError {
    /// The zlib header is not deflate's, or its check fails.
    #[error("not a zlib stream")]
    Header,
    /// The stream was compressed with another dictionary.
    #[error("the zlib stream names another dictionary")]
    Dictionary,
    /// A chunk ends inside a block.
    #[error("compressed input ends inside a block")]
    Truncated,
    /// Bad block type, lengths, code or distance.
    #[error("invalid deflate data: {0}")]
    Invalid(&'static str),
}

/// The Adler-32 checksum of `data` (RFC 1950).
pub fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &byte in chunk {
            a += u32::from(byte);
            b += a;
        }
        a %= 65_521;
        b %= 65_521;
    }
    (b << 16) | a
}

/// One direction's zlib stream: the zlib header first, then deflate blocks chunk by chunk.
pub struct Inflater {
    dictionary_id: u32,
    history: Vec<u8>,
    header_read: bool,
    finished: bool,
}

impl Inflater {
    /// A stream whose back-references may start in `dictionary`.
    pub fn with_dictionary(dictionary: &[u8]) -> Inflater {
        let keep = dictionary.len().saturating_sub(WINDOW);
        Inflater {
            dictionary_id: adler32(dictionary),
            history: dictionary[keep..].to_vec(),
            header_read: false,
            finished: false,
        }
    }

    /// The bytes one sync-flushed chunk inflates to.
    pub fn inflate(&mut self, chunk: &[u8]) -> Result<Vec<u8>, InflateError> {
        let mut input = chunk;
        if !self.header_read {
            input = self.read_header(input)?;
        }
        let start = self.history.len();
        let mut bits = Bits::new(input);
        while bits.remaining() >= 8 {
            if self.finished {
                return Err(InflateError::Invalid("data after the final block"));
            }
            self.finished = bits.take(1)? == 1;
            match bits.take(2)? {
                0 => self.stored(&mut bits)?,
                1 => self.codes(&mut bits, &fixed_literals(), &fixed_distances())?,
                2 => {
                    let (literals, distances) = dynamic_tables(&mut bits)?;
                    self.codes(&mut bits, &literals, &distances)?;
                }
                _ => return Err(InflateError::Invalid("block type 3")),
            }
        }
        let out = self.history[start..].to_vec();
        let excess = self.history.len().saturating_sub(WINDOW);
        self.history.drain(..excess);
        Ok(out)
    }

    fn read_header<'a>(&mut self, input: &'a [u8]) -> Result<&'a [u8], InflateError> {
        let [cmf, flg, rest @ ..] = input else {
            return Err(InflateError::Truncated);
        };
        if cmf & 0x0f != 8 || (u16::from(*cmf) << 8 | u16::from(*flg)) % 31 != 0 {
            return Err(InflateError::Header);
        }
        self.header_read = true;
        if flg & 0x20 == 0 {
            return Ok(rest);
        }
        let [a, b, c, d, rest @ ..] = rest else {
            return Err(InflateError::Truncated);
        };
        if u32::from_be_bytes([*a, *b, *c, *d]) != self.dictionary_id {
            return Err(InflateError::Dictionary);
        }
        Ok(rest)
    }

    fn stored(&mut self, bits: &mut Bits) -> Result<(), InflateError> {
        bits.align();
        let len = bits.take(16)?;
        if bits.take(16)? != !len & 0xffff {
            return Err(InflateError::Invalid("stored block length check"));
        }
        let data = bits.bytes(len as usize)?;
        self.history.extend_from_slice(data);
        Ok(())
    }

    fn codes(
        &mut self,
        bits: &mut Bits,
        literals: &Huffman,
        distances: &Huffman,
    ) -> Result<(), InflateError> {
        loop {
            let symbol = literals.decode(bits)? as usize;
            match symbol {
                0..=255 => self.history.push(symbol as u8),
                256 => return Ok(()),
                257..=285 => {
                    let at = symbol - 257;
                    let length = LENGTH_BASE[at] as usize + bits.take(LENGTH_EXTRA[at])? as usize;
                    let code = distances.decode(bits)? as usize;
                    if code >= 30 {
                        return Err(InflateError::Invalid("distance code"));
                    }
                    let distance =
                        DISTANCE_BASE[code] as usize + bits.take(DISTANCE_EXTRA[code])? as usize;
                    if distance > self.history.len() {
                        return Err(InflateError::Invalid("distance too far back"));
                    }
                    let from = self.history.len() - distance;
                    for i in 0..length {
                        let byte = self.history[from + i];
                        self.history.push(byte);
                    }
                }
                _ => return Err(InflateError::Invalid("literal/length code")),
            }
        }
    }
}

const LENGTH_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LENGTH_EXTRA: [u32; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DISTANCE_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DISTANCE_EXTRA: [u32; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];
/// The order code-length code lengths come in (RFC 1951 §3.2.7).
const CODE_LENGTH_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// The input's bits, least significant first.
struct Bits<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8]) -> Bits<'a> {
        Bits { data, at: 0 }
    }

    fn remaining(&self) -> usize {
        self.data.len() * 8 - self.at
    }

    fn take(&mut self, n: u32) -> Result<u32, InflateError> {
        if (n as usize) > self.remaining() {
            return Err(InflateError::Truncated);
        }
        let mut value = 0u32;
        for i in 0..n {
            let bit = (self.data[self.at / 8] >> (self.at % 8)) & 1;
            value |= u32::from(bit) << i;
            self.at += 1;
        }
        Ok(value)
    }

    fn align(&mut self) {
        self.at = self.at.div_ceil(8) * 8;
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], InflateError> {
        let from = self.at / 8;
        let slice = self
            .data
            .get(from..from + n)
            .ok_or(InflateError::Truncated)?;
        self.at += n * 8;
        Ok(slice)
    }
}

/// A canonical Huffman code: how many codes of each length, and the symbols in code order.
struct Huffman {
    counts: [u16; 16],
    symbols: Vec<u16>,
}

impl Huffman {
    fn new(lengths: &[u8]) -> Huffman {
        let mut counts = [0u16; 16];
        for &len in lengths {
            counts[usize::from(len)] += 1;
        }
        counts[0] = 0;
        let mut offsets = [0u16; 16];
        for len in 1..15 {
            offsets[len + 1] = offsets[len] + counts[len];
        }
        let mut symbols = vec![0u16; lengths.len()];
        for (symbol, &len) in lengths.iter().enumerate() {
            if len != 0 {
                let slot = &mut offsets[usize::from(len)];
                symbols[usize::from(*slot)] = symbol as u16;
                *slot += 1;
            }
        }
        Huffman { counts, symbols }
    }

    fn decode(&self, bits: &mut Bits) -> Result<u16, InflateError> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..16 {
            code |= bits.take(1)? as i32;
            let count = i32::from(self.counts[len]);
            if code - first < count {
                return self
                    .symbols
                    .get((index + code - first) as usize)
                    .copied()
                    .ok_or(InflateError::Invalid("code"));
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err(InflateError::Invalid("code"))
    }
}

fn fixed_literals() -> Huffman {
    let mut lengths = [8u8; 288];
    lengths[144..256].fill(9);
    lengths[256..280].fill(7);
    Huffman::new(&lengths)
}

fn fixed_distances() -> Huffman {
    Huffman::new(&[5u8; 30])
}

/// The literal/length and distance codes a dynamic block starts with.
fn dynamic_tables(bits: &mut Bits) -> Result<(Huffman, Huffman), InflateError> {
    let literals = bits.take(5)? as usize + 257;
    let distances = bits.take(5)? as usize + 1;
    let code_lengths = bits.take(4)? as usize + 4;
    if literals > 286 || distances > 30 {
        return Err(InflateError::Invalid("too many codes"));
    }
    let mut order = [0u8; 19];
    for &at in &CODE_LENGTH_ORDER[..code_lengths] {
        order[at] = bits.take(3)? as u8;
    }
    let code_length_code = Huffman::new(&order);
    let mut lengths = Vec::with_capacity(literals + distances);
    while lengths.len() < literals + distances {
        let symbol = code_length_code.decode(bits)?;
        let (value, repeat) = match symbol {
            0..=15 => (symbol as u8, 1),
            16 => {
                let previous = *lengths
                    .last()
                    .ok_or(InflateError::Invalid("repeat with no previous length"))?;
                (previous, 3 + bits.take(2)?)
            }
            17 => (0, 3 + bits.take(3)?),
            _ => (0, 11 + bits.take(7)?),
        };
        lengths.extend(std::iter::repeat_n(value, repeat as usize));
    }
    if lengths.len() != literals + distances {
        return Err(InflateError::Invalid("code lengths overrun"));
    }
    Ok((
        Huffman::new(&lengths[..literals]),
        Huffman::new(&lengths[literals..]),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn adler32_of_wikipedia() {
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
    }

    #[test]
    fn stored_blocks_inflate_to_their_bytes() {
        // zlib header without dictionary, a stored block "abc", then a sync flush.
        let mut chunk = vec![0x78, 0x01, 0x00, 3, 0, 0xfc, 0xff];
        chunk.extend(b"abc");
        chunk.extend([0x00, 0, 0, 0xff, 0xff]);
        let mut inflater = Inflater::with_dictionary(b"");
        assert_eq!(inflater.inflate(&chunk).unwrap(), b"abc");
        assert_eq!(
            inflater.inflate(&[0x00, 1, 0, 0xfe, 0xff, b'd']).unwrap(),
            b"d"
        );
    }

    #[test]
    fn a_dynamic_huffman_block_inflates() {
        // zlib (level 9, sync flush) of 60 lines of text: one dynamic block.
        let chunk = hex(concat!(
            "78dacc954b12c2201044f79e628e20103e390e46225411622558eaedd533f816d9535dd333dd8f5a",
            "5a92b3acb344a96bbba54d7a7a75e9397699d6e5bea57d4fbb3c4bcfdf27d7778b4b99243fe67989",
            "4d7abcd474aa3f1145880c84c888d871848ab6848a41661990bd38e44401498b414e84181a3ca1e2",
            "35e208d92d722187cc32322d42e2e21958227bb188a391a10b836ee61761f68238b2485e025246a4",
            "461a215d401c59e4441a296360be57e663442ead9059028217c7400a499d41f2a2984e23a4437819",
            "90d079a4469e99c51c48e540db652ecda4ce1da78b0c17184631bcfc9bdd1f000000ffff"
        ));
        let expected: Vec<u8> = (0..60)
            .flat_map(|i| {
                format!(
                    "line {} of a longer text that compresses with a dynamic huffman table\n",
                    i * i % 97
                )
                .into_bytes()
            })
            .collect();
        let out = Inflater::with_dictionary(b"").inflate(&chunk).unwrap();
        assert_eq!(out, expected);
    }

    #[test]
    fn a_wrong_dictionary_is_refused() {
        let mut inflater = Inflater::with_dictionary(b"another");
        assert_eq!(
            inflater.inflate(&hex("78f9e3c6a7c2")),
            Err(InflateError::Dictionary)
        );
        assert_eq!(
            Inflater::with_dictionary(b"").inflate(&[0x12, 0x34]),
            Err(InflateError::Header)
        );
    }

    #[test]
    fn a_chunk_ending_inside_a_block_is_an_error() {
        let mut inflater = Inflater::with_dictionary(b"");
        assert_eq!(
            inflater.inflate(&[0x78, 0x01, 0x00, 3, 0, 0xfc, 0xff, b'a']),
            Err(InflateError::Truncated)
        );
    }
}
