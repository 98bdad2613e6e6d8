//! The protobuf wire format: varints and (field number, value) records.

use super::ProtobufError;

/// One encoded field value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2: bytes, strings, messages and packed repeated scalars.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

fn malformed(msg: &str) -> ProtobufError {
    ProtobufError::Malformed(msg.to_owned())
}

/// Reads a varint at the start of `buf`: the value and the bytes consumed.
pub fn read_varint(buf: &[u8]) -> Result<(u64, usize), ProtobufError> {
    let mut value: u64 = 0;
    for (i, byte) in buf.iter().enumerate().take(10) {
        let low = u64::from(byte & 0x7f);
        if i == 9 && *byte > 1 {
            return Err(malformed("varint overflows 64 bits"));
        }
        value |= low << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(malformed("truncated varint"))
}

/// Splits a message into its (field number, value) records, in wire order.
pub fn records(mut buf: &[u8]) -> Result<Vec<(u32, WireValue<'_>)>, ProtobufError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let (key, n) = read_varint(buf)?;
        buf = &buf[n..];
        let number = u32::try_from(key >> 3).map_err(|_| malformed("field number too large"))?;
        if number == 0 {
            return Err(malformed("field number 0"));
        }
        let value = match key & 7 {
            0 => {
                let (v, n) = read_varint(buf)?;
                buf = &buf[n..];
                WireValue::Varint(v)
            }
            1 => {
                let (head, rest) = buf
                    .split_first_chunk::<8>()
                    .ok_or_else(|| malformed("truncated fixed64"))?;
                buf = rest;
                WireValue::Fixed64(u64::from_le_bytes(*head))
            }
            2 => {
                let (len, n) = read_varint(buf)?;
                buf = &buf[n..];
                let len = usize::try_from(len)
                    .ok()
                    .filter(|l| *l <= buf.len())
                    .ok_or_else(|| malformed("length-delimited field runs past the end"))?;
                let (head, rest) = buf.split_at(len);
                buf = rest;
                WireValue::Bytes(head)
            }
            5 => {
                let (head, rest) = buf
                    .split_first_chunk::<4>()
                    .ok_or_else(|| malformed("truncated fixed32"))?;
                buf = rest;
                WireValue::Fixed32(u32::from_le_bytes(*head))
            }
            other => {
                return Err(ProtobufError::Malformed(format!(
                    "unsupported wire type {other} for field {number}"
                )));
            }
        };
        out.push((number, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode_and_reject_truncation() {
        assert_eq!(read_varint(&[0x96, 0x01]), Ok((150, 2)));
        assert!(read_varint(&[0x96]).is_err());
        assert!(read_varint(&[0xff; 11]).is_err());
    }

    #[test]
    fn records_split_fields() {
        let rec = records(&[0x08, 0x96, 0x01, 0x12, 0x02, b'h', b'i']).unwrap();
        assert_eq!(
            rec,
            vec![(1, WireValue::Varint(150)), (2, WireValue::Bytes(b"hi"))]
        );
        assert!(records(&[0x12, 0x05, b'h']).is_err());
        assert!(records(&[0x0b]).is_err());
    }
}
