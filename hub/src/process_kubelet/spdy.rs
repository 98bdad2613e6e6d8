//! SPDY/3.1 framing, the server's side, as far as port-forward needs it: reading the client's
//! frames from a byte stream (header blocks inflated with the SPDY/3 dictionary, one zlib
//! stream per session) and writing the server's. The server's header blocks are written as
//! stored deflate blocks, each followed by a sync flush, of a zlib stream without dictionary —
//! valid for any zlib reader; the server sends only empty ones (SYN_REPLY).

use super::inflate::{InflateError, Inflater};

/// The control frame types read or written.
const SYN_STREAM: u16 = 1;
const SYN_REPLY: u16 = 2;
const RST_STREAM: u16 = 3;
const SETTINGS: u16 = 4;
const PING: u16 = 6;
const GOAWAY: u16 = 7;
const HEADERS: u16 = 8;
const WINDOW_UPDATE: u16 = 9;

/// Data and control frame flag: the sender's last frame on the stream.
pub const FLAG_FIN: u8 = 0x01;
/// SETTINGS id of the initial stream window.
const SETTINGS_INITIAL_WINDOW_SIZE: u32 = 7;
/// RST_STREAM status for a stream the server cannot make sense of.
pub const PROTOCOL_ERROR: u32 = 1;
/// Largest frame accepted from the client.
const MAX_FRAME: usize = 16 << 20;

/// The words of the SPDY/3 header dictionary, each written after its 4-byte length.
const DICTIONARY_WORDS: [&str; 65] = [
    "options",
    "head",
    "post",
    "put",
    "delete",
    "trace",
    "accept",
    "accept-charset",
    "accept-encoding",
    "accept-language",
    "accept-ranges",
    "age",
    "allow",
    "authorization",
    "cache-control",
    "connection",
    "content-base",
    "content-encoding",
    "content-language",
    "content-length",
    "content-location",
    "content-md5",
    "content-range",
    "content-type",
    "date",
    "etag",
    "expect",
    "expires",
    "from",
    "host",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "last-modified",
    "location",
    "max-forwards",
    "pragma",
    "proxy-authenticate",
    "proxy-authorization",
    "range",
    "referer",
    "retry-after",
    "server",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "user-agent",
    "vary",
    "via",
    "warning",
    "www-authenticate",
    "method",
    "get",
    "status",
    "200 OK",
    "version",
    "HTTP/1.1",
    "url",
    "public",
    "set-cookie",
    "keep-alive",
    "origin",
];

/// The rest of the SPDY/3 header dictionary, after its words.
const DICTIONARY_TAIL: &str = concat!(
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504",
    "505203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request",
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented",
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, ",
    "Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,",
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=",
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
);

/// The SPDY/3 header compression dictionary (1423 bytes).
pub fn dictionary() -> Vec<u8> {
    let mut out = Vec::with_capacity(1423);
    for word in DICTIONARY_WORDS {
        out.extend_from_slice(&(word.len() as u32).to_be_bytes());
        out.extend_from_slice(word.as_bytes());
    }
    out.extend_from_slice(DICTIONARY_TAIL.as_bytes());
    out
}

/// What is wrong with the client's frames.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpdyError {
    /// A control frame of another SPDY version.
    #[error("SPDY version {0} is not served (3 is)")]
    Version(u16),
    /// A frame larger than served.
    #[error("SPDY frame of {0} bytes is too large")]
    TooLarge(usize),
    /// A frame shorter than its type needs, or a malformed header block.
    #[error("malformed SPDY {0}")]
    Malformed(&'static str),
    /// The header block does not inflate.
    #[error("SPDY header block: {0}")]
    Headers(#[from] InflateError),
}

/// A frame from the client.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A new stream and its headers (names lowercase).
    SynStream {
        /// The stream's id.
        stream: u32,
        /// Its flags ([`FLAG_FIN`]).
        flags: u8,
        /// Its headers.
        headers: Vec<(String, String)>,
    },
    /// Data on a stream.
    Data {
        /// The stream's id.
        stream: u32,
        /// Whether it is the client's last on the stream.
        fin: bool,
        /// The bytes.
        data: Vec<u8>,
    },
    /// The client reset a stream.
    RstStream {
        /// The stream's id.
        stream: u32,
    },
    /// A ping to echo.
    Ping(u32),
    /// The client ends the session.
    GoAway,
    /// The client lets the server send `delta` more bytes on `stream` (0: the session).
    WindowUpdate {
        /// The stream's id, 0 for the session.
        stream: u32,
        /// How many more bytes.
        delta: u32,
    },
    /// The client's settings: the initial stream window, if it sets one.
    Settings {
        /// `SETTINGS_INITIAL_WINDOW_SIZE`.
        initial_window: Option<u32>,
    },
    /// A frame the server has no use for (SYN_REPLY, HEADERS, unknown types).
    Ignored,
}

/// Reads the client's frames from the bytes it sends.
pub struct Reader {
    buffer: Vec<u8>,
    headers: Inflater,
}

impl Default for Reader {
    fn default() -> Self {
        Reader {
            buffer: Vec::new(),
            headers: Inflater::with_dictionary(&dictionary()),
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Result<u32, SpdyError> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(SpdyError::Malformed("frame"))
}

impl Reader {
    /// Adds bytes received from the client.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next whole frame received, if any.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, SpdyError> {
        if self.buffer.len() < 8 {
            return Ok(None);
        }
        let length = (u32_at(&self.buffer, 4)? & 0x00ff_ffff) as usize;
        if length > MAX_FRAME {
            return Err(SpdyError::TooLarge(length));
        }
        if self.buffer.len() < 8 + length {
            return Ok(None);
        }
        let frame: Vec<u8> = self.buffer.drain(..8 + length).collect();
        let flags = frame[4];
        let payload = &frame[8..];
        if frame[0] & 0x80 == 0 {
            return Ok(Some(Frame::Data {
                stream: u32_at(&frame, 0)? & 0x7fff_ffff,
                fin: flags & FLAG_FIN != 0,
                data: payload.to_vec(),
            }));
        }
        let version = u16::from_be_bytes([frame[0] & 0x7f, frame[1]]);
        if version != 3 {
            return Err(SpdyError::Version(version));
        }
        let kind = u16::from_be_bytes([frame[2], frame[3]]);
        let stream = u32_at(payload, 0).map(|s| s & 0x7fff_ffff);
        Ok(Some(match kind {
            SYN_STREAM => {
                let block = payload
                    .get(10..)
                    .ok_or(SpdyError::Malformed("SYN_STREAM"))?;
                Frame::SynStream {
                    stream: stream?,
                    flags,
                    headers: self.header_block(block)?,
                }
            }
            SYN_REPLY | HEADERS => {
                // Inflated all the same: the session's zlib stream goes on through them.
                self.header_block(payload.get(4..).ok_or(SpdyError::Malformed("HEADERS"))?)?;
                Frame::Ignored
            }
            RST_STREAM => Frame::RstStream { stream: stream? },
            SETTINGS => Frame::Settings {
                initial_window: settings_initial_window(payload)?,
            },
            PING => Frame::Ping(u32_at(payload, 0)?),
            GOAWAY => Frame::GoAway,
            WINDOW_UPDATE => Frame::WindowUpdate {
                stream: stream?,
                delta: u32_at(payload, 4)? & 0x7fff_ffff,
            },
            _ => Frame::Ignored,
        }))
    }

    fn header_block(&mut self, compressed: &[u8]) -> Result<Vec<(String, String)>, SpdyError> {
        let block = self.headers.inflate(compressed)?;
        let count = u32_at(&block, 0)? as usize;
        let mut at = 4;
        let mut text = || -> Result<String, SpdyError> {
            let len = u32_at(&block, at)? as usize;
            let bytes = block
                .get(at + 4..at + 4 + len)
                .ok_or(SpdyError::Malformed("header block"))?;
            at += 4 + len;
            Ok(String::from_utf8_lossy(bytes).into_owned())
        };
        let mut headers = Vec::with_capacity(count.min(64));
        for _ in 0..count {
            let name = text()?.to_ascii_lowercase();
            headers.push((name, text()?));
        }
        Ok(headers)
    }
}

fn settings_initial_window(payload: &[u8]) -> Result<Option<u32>, SpdyError> {
    let count = u32_at(payload, 0)? as usize;
    for i in 0..count {
        let id = u32_at(payload, 4 + i * 8)? & 0x00ff_ffff;
        if id == SETTINGS_INITIAL_WINDOW_SIZE {
            return Ok(Some(u32_at(payload, 8 + i * 8)?));
        }
    }
    Ok(None)
}

fn control(kind: u16, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + payload.len());
    out.extend_from_slice(&[0x80, 3]);
    out.extend_from_slice(&kind.to_be_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out[4] = flags;
    out.extend_from_slice(payload);
    out
}

/// Writes the server's frames.
#[derive(Default)]
pub struct Writer {
    compressing: bool,
}

impl Writer {
    /// The server's SYN_REPLY accepting `stream`, with no headers.
    pub fn syn_reply(&mut self, stream: u32) -> Vec<u8> {
        let mut payload = stream.to_be_bytes().to_vec();
        payload.extend(self.header_block(&[]));
        control(SYN_REPLY, 0, &payload)
    }

    /// A header block of `headers` as one stored deflate block of the session's zlib stream
    /// (the zlib header before the first), then a sync flush.
    fn header_block(&mut self, headers: &[(&str, &str)]) -> Vec<u8> {
        let mut block = (headers.len() as u32).to_be_bytes().to_vec();
        for (name, value) in headers {
            for text in [name, value] {
                block.extend_from_slice(&(text.len() as u32).to_be_bytes());
                block.extend_from_slice(text.as_bytes());
            }
        }
        let mut out = Vec::with_capacity(block.len() + 7);
        if !self.compressing {
            // Deflate, 32 KiB window, no dictionary; the check makes it a multiple of 31.
            out.extend_from_slice(&[0x78, 0x01]);
            self.compressing = true;
        }
        let len = block.len() as u16;
        out.push(0x00);
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(&block);
        // A sync flush: an empty stored block, which makes zlib readers hand over the bytes
        // before it (Go's reads past a block's end for the next one otherwise).
        out.extend_from_slice(&[0x00, 0x00, 0x00, 0xff, 0xff]);
        out
    }
}

/// A DATA frame on `stream`.
pub fn data(stream: u32, fin: bool, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + bytes.len());
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
    out[4] = if fin { FLAG_FIN } else { 0 };
    out.extend_from_slice(bytes);
    out
}

/// A PING echoing the client's `id`.
pub fn ping(id: u32) -> Vec<u8> {
    control(PING, 0, &id.to_be_bytes())
}

/// A RST_STREAM of `stream` with `status`.
pub fn rst_stream(stream: u32, status: u32) -> Vec<u8> {
    let mut payload = stream.to_be_bytes().to_vec();
    payload.extend_from_slice(&status.to_be_bytes());
    control(RST_STREAM, 0, &payload)
}

/// A WINDOW_UPDATE letting the client send `delta` more bytes on `stream` (0: the session).
pub fn window_update(stream: u32, delta: u32) -> Vec<u8> {
    let mut payload = stream.to_be_bytes().to_vec();
    payload.extend_from_slice(&delta.to_be_bytes());
    control(WINDOW_UPDATE, 0, &payload)
}

/// Client frames for tests: what kubectl sends to forward one connection.
#[cfg(test)]
pub(super) mod fixtures {
    #![allow(clippy::unwrap_used)]
    use super::{SYN_STREAM, control};

    /// Bytes from hex digits.
    pub fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A SYN_STREAM opening `stream` with the compressed header `block`.
    pub fn syn_stream(stream: u32, block: &[u8]) -> Vec<u8> {
        let mut payload = stream.to_be_bytes().to_vec();
        payload.extend([0; 6]);
        payload.extend_from_slice(block);
        control(SYN_STREAM, 0, &payload)
    }

    /// The error stream (1) and data stream (3) of request 0 to port 8080, their header blocks
    /// as zlib (level 9, SPDY/3 dictionary, a sync flush after each) compresses them: the
    /// second refers back into the first.
    pub fn forward_port_8080() -> Vec<u8> {
        let first = hex(concat!(
            "78f9e3c6a7c202253a703a2b294a4dcc851625aca9a0808614cb45e01c6061606100a4398b20d1",
            "98094ade8c0600000000ffff"
        ));
        let second = hex("c2aa19540e2512d60b000000ffff");
        let mut bytes = syn_stream(1, &first);
        bytes.extend(syn_stream(3, &second));
        bytes
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_dictionary_is_spdy_3s() {
        let dictionary = dictionary();
        assert_eq!(dictionary.len(), 1423);
        assert_eq!(super::super::inflate::adler32(&dictionary), 0xe3c6_a7c2);
    }

    #[test]
    fn a_clients_streams_read_with_their_headers_across_frames() {
        let mut reader = Reader::default();
        let mut bytes = fixtures::forward_port_8080();
        bytes.extend(data(3, true, b"hi"));
        bytes.extend(ping(7));
        // Delivered a byte at a time: frames come out only when whole.
        let mut frames = Vec::new();
        for byte in bytes {
            reader.push(&[byte]);
            while let Some(frame) = reader.next_frame().unwrap() {
                frames.push(frame);
            }
        }
        let headers = |kind: &str| {
            vec![
                ("streamtype".to_owned(), kind.to_owned()),
                ("port".to_owned(), "8080".to_owned()),
                ("requestid".to_owned(), "0".to_owned()),
            ]
        };
        assert_eq!(
            frames,
            [
                Frame::SynStream {
                    stream: 1,
                    flags: 0,
                    headers: headers("error")
                },
                Frame::SynStream {
                    stream: 3,
                    flags: 0,
                    headers: headers("data")
                },
                Frame::Data {
                    stream: 3,
                    fin: true,
                    data: b"hi".to_vec()
                },
                Frame::Ping(7),
            ]
        );
    }

    #[test]
    fn the_servers_header_blocks_inflate() {
        let mut writer = Writer::default();
        let first = writer.syn_reply(1);
        let second = writer.syn_reply(3);
        let mut inflater = Inflater::with_dictionary(&dictionary());
        assert_eq!(inflater.inflate(&first[12..]).unwrap(), [0, 0, 0, 0]);
        assert_eq!(inflater.inflate(&second[12..]).unwrap(), [0, 0, 0, 0]);
        assert_eq!(&first[..4], &[0x80, 3, 0, 2]);
    }

    #[test]
    fn control_frames_read() {
        let mut reader = Reader::default();
        reader.push(&window_update(0, 1000));
        reader.push(&rst_stream(5, PROTOCOL_ERROR));
        let mut settings = control(SETTINGS, 0, &1u32.to_be_bytes());
        settings.extend_from_slice(&7u32.to_be_bytes());
        settings.extend_from_slice(&4096u32.to_be_bytes());
        settings[7] = 12;
        reader.push(&settings);
        reader.push(&control(GOAWAY, 0, &[0; 8]));
        assert_eq!(
            reader.next_frame().unwrap(),
            Some(Frame::WindowUpdate {
                stream: 0,
                delta: 1000
            })
        );
        assert_eq!(
            reader.next_frame().unwrap(),
            Some(Frame::RstStream { stream: 5 })
        );
        assert_eq!(
            reader.next_frame().unwrap(),
            Some(Frame::Settings {
                initial_window: Some(4096)
            })
        );
        assert_eq!(reader.next_frame().unwrap(), Some(Frame::GoAway));
        assert_eq!(reader.next_frame().unwrap(), None);
        reader.push(&[0x80, 2, 0, 1, 0, 0, 0, 0]);
        assert_eq!(reader.next_frame(), Err(SpdyError::Version(2)));
    }
}
