//! AWS's binary event stream (`application/vnd.amazon.eventstream`), the framing of Bedrock's `ConverseStream`.
//!
//! A message is a 12-byte prelude (total length, headers length, both `u32` big-endian, then the prelude's CRC32),
//! its headers (each: name length `u8`, name, value type `u8`, value), its payload, and the CRC32 of everything
//! before it. Both checksums are CRC-32/ISO-HDLC (the zlib one). The decoder is incremental (a message may be split
//! anywhere across chunks) and bounded: a message whose prelude announces more than [`MAX_MESSAGE`] bytes is refused
//! before its body is buffered.
//!
//! [`EventDecoder`] maps each message onto an [`sse::Event`] for the readers: an event message becomes its
//! `:event-type` and its payload; an exception message becomes [`EXCEPTION_PREFIX`] + its `:exception-type` and its
//! payload; an error message becomes [`ERROR_PREFIX`] + its `:error-code`, with `{"message": <:error-message>}` as
//! data.

use std::fmt;

use super::sse;

/// The largest message the decoder accepts, in bytes (Bedrock's events are a few hundred bytes).
pub const MAX_MESSAGE: usize = 1024 * 1024;

/// Prelude: total length, headers length, prelude CRC.
const PRELUDE: usize = 12;
/// Prelude plus the message CRC: the smallest message.
const MIN_MESSAGE: usize = PRELUDE + 4;

/// The event name of an exception message: this prefix, then its `:exception-type` (`exception:throttlingException`).
pub const EXCEPTION_PREFIX: &str = "exception:";
/// The event name of an error message: this prefix, then its `:error-code`.
pub const ERROR_PREFIX: &str = "error:";

/// The CRC-32/ISO-HDLC table (reflected polynomial `0xEDB88320`).
const CRC_TABLE: [u32; 256] = {
    let mut table = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        table[i] = c;
        i += 1;
    }
    table
};

/// CRC-32/ISO-HDLC of `bytes`.
pub fn crc32(bytes: &[u8]) -> u32 {
    !bytes.iter().fold(!0u32, |crc, &b| {
        CRC_TABLE[((crc ^ u32::from(b)) & 0xFF) as usize] ^ (crc >> 8)
    })
}

/// A header value, by its wire type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderValue {
    /// Types 0 (true) and 1 (false).
    Bool(bool),
    /// Type 2.
    Byte(i8),
    /// Type 3.
    Short(i16),
    /// Type 4.
    Int(i32),
    /// Type 5.
    Long(i64),
    /// Type 6: `u16` length, bytes.
    Bytes(Vec<u8>),
    /// Type 7: `u16` length, UTF-8.
    String(String),
    /// Type 8: milliseconds since the epoch.
    Timestamp(i64),
    /// Type 9.
    Uuid([u8; 16]),
}

/// One decoded message.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    /// The headers, in order.
    pub headers: Vec<(String, HeaderValue)>,
    /// The payload.
    pub payload: Vec<u8>,
}

impl Message {
    /// A string header's value.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.headers.iter().find_map(|(n, v)| match v {
            HeaderValue::String(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Why a body cannot be read as an AWS event stream.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The prelude's checksum does not match.
    PreludeCrc,
    /// The message's checksum does not match.
    MessageCrc,
    /// The prelude announces a message over the limit.
    TooLong {
        /// The announced length.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// The lengths of the prelude do not fit together.
    BadLengths {
        /// The announced total length.
        total: usize,
        /// The announced headers length.
        headers: usize,
    },
    /// A header cannot be parsed.
    BadHeader(String),
    /// The body ended inside a message.
    Truncated {
        /// The bytes of the unfinished message.
        buffered: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::PreludeCrc => {
                f.write_str("an AWS event stream message has a bad prelude checksum")
            }
            FrameError::MessageCrc => f.write_str("an AWS event stream message has a bad checksum"),
            FrameError::TooLong { length, limit } => write!(
                f,
                "an AWS event stream message announces {length} bytes, more than the {limit} the probe reads"
            ),
            FrameError::BadLengths { total, headers } => write!(
                f,
                "an AWS event stream message announces {total} bytes with {headers} bytes of headers, which cannot be"
            ),
            FrameError::BadHeader(why) => {
                write!(f, "an AWS event stream header cannot be read: {why}")
            }
            FrameError::Truncated { buffered } => write!(
                f,
                "the AWS event stream ended inside a message ({buffered} bytes of it came)"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// Cuts a byte stream into [`Message`]s.
#[derive(Debug)]
pub struct Decoder {
    buf: Vec<u8>,
    limit: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::with_limit(MAX_MESSAGE)
    }
}

impl Decoder {
    /// A decoder that refuses messages over `limit` bytes.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            buf: Vec::new(),
            limit: limit.max(MIN_MESSAGE),
        }
    }

    /// Consumes a chunk; every message it completes goes to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Message>) -> Result<(), FrameError> {
        self.buf.extend_from_slice(chunk);
        let mut pos = 0;
        let result = loop {
            match self.next_message(&self.buf[pos..]) {
                Ok(Some((message, used))) => {
                    out.push(message);
                    pos += used;
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.buf.drain(..pos);
        if result.is_err() {
            // Nothing after a broken frame can be trusted.
            self.buf.clear();
        }
        result
    }

    /// Ends the body: an unfinished message is an error.
    pub fn finish(&mut self) -> Result<(), FrameError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            let buffered = self.buf.len();
            self.buf.clear();
            Err(FrameError::Truncated { buffered })
        }
    }

    /// The message at the start of `bytes` and its length, or `None` when more bytes are needed.
    fn next_message(&self, bytes: &[u8]) -> Result<Option<(Message, usize)>, FrameError> {
        if bytes.len() < PRELUDE {
            return Ok(None);
        }
        let total = be_u32(&bytes[0..4]) as usize;
        let headers_len = be_u32(&bytes[4..8]) as usize;
        if crc32(&bytes[0..8]) != be_u32(&bytes[8..12]) {
            return Err(FrameError::PreludeCrc);
        }
        if total > self.limit {
            return Err(FrameError::TooLong {
                length: total,
                limit: self.limit,
            });
        }
        if total < MIN_MESSAGE || headers_len > total - MIN_MESSAGE {
            return Err(FrameError::BadLengths {
                total,
                headers: headers_len,
            });
        }
        if bytes.len() < total {
            return Ok(None);
        }
        let frame = &bytes[..total];
        if crc32(&frame[..total - 4]) != be_u32(&frame[total - 4..]) {
            return Err(FrameError::MessageCrc);
        }
        let headers = parse_headers(&frame[PRELUDE..PRELUDE + headers_len])?;
        let payload = frame[PRELUDE + headers_len..total - 4].to_vec();
        Ok(Some((Message { headers, payload }, total)))
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn parse_headers(mut b: &[u8]) -> Result<Vec<(String, HeaderValue)>, FrameError> {
    fn take<'a>(b: &mut &'a [u8], n: usize, what: &str) -> Result<&'a [u8], FrameError> {
        if b.len() < n {
            return Err(FrameError::BadHeader(format!(
                "{what} runs past the headers"
            )));
        }
        let (head, rest) = b.split_at(n);
        *b = rest;
        Ok(head)
    }
    fn fixed<const N: usize>(b: &mut &[u8], what: &str) -> Result<[u8; N], FrameError> {
        let mut a = [0u8; N];
        a.copy_from_slice(take(b, N, what)?);
        Ok(a)
    }
    let mut headers = Vec::new();
    while !b.is_empty() {
        let name_len = take(&mut b, 1, "a header name length")?[0] as usize;
        if name_len == 0 {
            return Err(FrameError::BadHeader("an empty header name".to_owned()));
        }
        let name = std::str::from_utf8(take(&mut b, name_len, "a header name")?)
            .map_err(|_| FrameError::BadHeader("a header name is not UTF-8".to_owned()))?
            .to_owned();
        let kind = take(&mut b, 1, "a header type")?[0];
        let value = match kind {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(i8::from_be_bytes(fixed::<1>(&mut b, "a byte header")?)),
            3 => HeaderValue::Short(i16::from_be_bytes(fixed::<2>(&mut b, "a short header")?)),
            4 => HeaderValue::Int(i32::from_be_bytes(fixed::<4>(&mut b, "an integer header")?)),
            5 => HeaderValue::Long(i64::from_be_bytes(fixed::<8>(&mut b, "a long header")?)),
            6 | 7 => {
                let len = u16::from_be_bytes(fixed::<2>(&mut b, "a header value length")?) as usize;
                let bytes = take(&mut b, len, "a header value")?;
                if kind == 6 {
                    HeaderValue::Bytes(bytes.to_vec())
                } else {
                    HeaderValue::String(String::from_utf8(bytes.to_vec()).map_err(|_| {
                        FrameError::BadHeader(format!("header {name} is not UTF-8"))
                    })?)
                }
            }
            8 => HeaderValue::Timestamp(i64::from_be_bytes(fixed::<8>(
                &mut b,
                "a timestamp header",
            )?)),
            9 => HeaderValue::Uuid(fixed::<16>(&mut b, "a UUID header")?),
            other => {
                return Err(FrameError::BadHeader(format!(
                    "header {name} has the unknown type {other}"
                )));
            }
        };
        headers.push((name, value));
    }
    Ok(headers)
}

/// The [`super::FrameDecoder`] of Bedrock's stream: messages as [`sse::Event`]s.
#[derive(Debug, Default)]
pub struct EventDecoder {
    decoder: Decoder,
    messages: Vec<Message>,
}

impl EventDecoder {
    fn drain(&mut self, out: &mut Vec<sse::Event>) -> Result<(), String> {
        for m in self.messages.drain(..) {
            out.push(to_event(m)?);
        }
        Ok(())
    }
}

fn to_event(m: Message) -> Result<sse::Event, String> {
    let payload = || {
        String::from_utf8(m.payload.clone())
            .map_err(|_| "an AWS event stream payload is not UTF-8".to_owned())
    };
    let message_type = m.header_str(":message-type").unwrap_or("event");
    match message_type {
        "event" => {
            let Some(kind) = m.header_str(":event-type") else {
                return Err("an AWS event stream event has no :event-type".to_owned());
            };
            Ok(sse::Event {
                event: kind.to_owned(),
                data: payload()?,
            })
        }
        "exception" => Ok(sse::Event {
            event: format!(
                "{EXCEPTION_PREFIX}{}",
                m.header_str(":exception-type").unwrap_or("unknown")
            ),
            data: payload()?,
        }),
        "error" => Ok(sse::Event {
            event: format!(
                "{ERROR_PREFIX}{}",
                m.header_str(":error-code").unwrap_or("unknown")
            ),
            data: serde_json::json!({"message": m.header_str(":error-message").unwrap_or("")})
                .to_string(),
        }),
        other => Err(format!(
            "an AWS event stream message has the unknown :message-type \"{other}\""
        )),
    }
}

impl super::FrameDecoder for EventDecoder {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<sse::Event>) -> Result<(), String> {
        let pushed = self.decoder.push(chunk, &mut self.messages);
        // Messages completed before a broken frame still count.
        self.drain(out)?;
        pushed.map_err(|e| e.to_string())
    }

    fn finish(&mut self, out: &mut Vec<sse::Event>) -> Result<(), String> {
        self.drain(out)?;
        self.decoder.finish().map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::FrameDecoder;

    /// Encodes a message as AWS does.
    fn encode(headers: &[(&str, HeaderValue)], payload: &[u8]) -> Vec<u8> {
        let mut h = Vec::new();
        for (name, value) in headers {
            h.push(name.len() as u8);
            h.extend_from_slice(name.as_bytes());
            match value {
                HeaderValue::Bool(true) => h.push(0),
                HeaderValue::Bool(false) => h.push(1),
                HeaderValue::Byte(v) => {
                    h.push(2);
                    h.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Short(v) => {
                    h.push(3);
                    h.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Int(v) => {
                    h.push(4);
                    h.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Long(v) => {
                    h.push(5);
                    h.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Bytes(v) => {
                    h.push(6);
                    h.extend_from_slice(&(v.len() as u16).to_be_bytes());
                    h.extend_from_slice(v);
                }
                HeaderValue::String(v) => {
                    h.push(7);
                    h.extend_from_slice(&(v.len() as u16).to_be_bytes());
                    h.extend_from_slice(v.as_bytes());
                }
                HeaderValue::Timestamp(v) => {
                    h.push(8);
                    h.extend_from_slice(&v.to_be_bytes());
                }
                HeaderValue::Uuid(v) => {
                    h.push(9);
                    h.extend_from_slice(v);
                }
            }
        }
        let total = (MIN_MESSAGE + h.len() + payload.len()) as u32;
        let mut m = Vec::new();
        m.extend_from_slice(&total.to_be_bytes());
        m.extend_from_slice(&(h.len() as u32).to_be_bytes());
        let prelude_crc = crc32(&m);
        m.extend_from_slice(&prelude_crc.to_be_bytes());
        m.extend_from_slice(&h);
        m.extend_from_slice(payload);
        let crc = crc32(&m);
        m.extend_from_slice(&crc.to_be_bytes());
        m
    }

    fn s(v: &str) -> HeaderValue {
        HeaderValue::String(v.to_owned())
    }

    fn event(kind: &str, payload: &str) -> Vec<u8> {
        encode(
            &[
                (":event-type", s(kind)),
                (":content-type", s("application/json")),
                (":message-type", s("event")),
            ],
            payload.as_bytes(),
        )
    }

    #[test]
    fn crc32_is_iso_hdlc() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn matches_the_aws_reference_vector() {
        // AWS's published test vector: a message with no headers and the payload `{'foo':'bar'}`.
        let bytes: [u8; 29] = [
            0x00, 0x00, 0x00, 0x1D, 0x00, 0x00, 0x00, 0x00, 0xFD, 0x52, 0x8C, 0x5A, 0x7B, 0x27,
            0x66, 0x6F, 0x6F, 0x27, 0x3A, 0x27, 0x62, 0x61, 0x72, 0x27, 0x7D, 0xC3, 0x65, 0x39,
            0x36,
        ];
        let mut out = Vec::new();
        Decoder::default().push(&bytes, &mut out).unwrap();
        assert_eq!(
            out,
            vec![Message {
                headers: vec![],
                payload: b"{'foo':'bar'}".to_vec()
            }]
        );
        assert_eq!(encode(&[], b"{'foo':'bar'}"), bytes);
    }

    #[test]
    fn every_header_type_parses() {
        let headers = vec![
            ("t", HeaderValue::Bool(true)),
            ("f", HeaderValue::Bool(false)),
            ("b", HeaderValue::Byte(-3)),
            ("sh", HeaderValue::Short(-300)),
            ("i", HeaderValue::Int(70_000)),
            ("l", HeaderValue::Long(-5_000_000_000)),
            ("by", HeaderValue::Bytes(vec![0, 1, 255])),
            ("st", s("héllo")),
            ("ts", HeaderValue::Timestamp(1_700_000_000_000)),
            ("u", HeaderValue::Uuid([7; 16])),
        ];
        let borrowed: Vec<(&str, HeaderValue)> =
            headers.iter().map(|(n, v)| (*n, v.clone())).collect();
        let frame = encode(&borrowed, b"x");
        let mut out = Vec::new();
        Decoder::default().push(&frame, &mut out).unwrap();
        let want: Vec<(String, HeaderValue)> = headers
            .into_iter()
            .map(|(n, v)| (n.to_owned(), v))
            .collect();
        assert_eq!(out[0].headers, want);
        assert_eq!(out[0].header_str("st"), Some("héllo"));
        assert_eq!(out[0].payload, b"x");
    }

    #[test]
    fn split_at_every_byte() {
        let mut body = Vec::new();
        body.extend(event("messageStart", r#"{"role":"assistant"}"#));
        body.extend(event(
            "contentBlockStart",
            r#"{"contentBlockIndex":0,"start":{"toolUse":{"name":"probe","toolUseId":"t1"}}}"#,
        ));
        body.extend(encode(&[], b""));
        body.extend(event("messageStop", r#"{"stopReason":"tool_use"}"#));
        let mut whole = Vec::new();
        Decoder::default().push(&body, &mut whole).unwrap();
        assert_eq!(whole.len(), 4);
        for cut in 0..=body.len() {
            let mut d = Decoder::default();
            let mut out = Vec::new();
            d.push(&body[..cut], &mut out).unwrap();
            d.push(&body[cut..], &mut out).unwrap();
            d.finish().unwrap();
            assert_eq!(out, whole, "cut at {cut}");
        }
        // One byte at a time.
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for b in &body {
            d.push(std::slice::from_ref(b), &mut out).unwrap();
        }
        assert_eq!(out, whole);
    }

    #[test]
    fn bad_checksums_are_refused() {
        let good = event("messageStop", r#"{"stopReason":"end_turn"}"#);
        let mut bad = good.clone();
        bad[9] ^= 1;
        assert_eq!(
            Decoder::default().push(&bad, &mut Vec::new()),
            Err(FrameError::PreludeCrc)
        );
        let mut bad = good.clone();
        let n = bad.len();
        bad[n - 6] ^= 0x20; // a payload byte
        assert_eq!(
            Decoder::default().push(&bad, &mut Vec::new()),
            Err(FrameError::MessageCrc)
        );
        let mut bad = good;
        let n = bad.len();
        bad[n - 1] ^= 1; // the checksum itself
        assert_eq!(
            Decoder::default().push(&bad, &mut Vec::new()),
            Err(FrameError::MessageCrc)
        );
    }

    #[test]
    fn oversize_is_refused_from_its_prelude() {
        let big = encode(&[], &vec![b'a'; 2000]);
        let mut d = Decoder::with_limit(1024);
        // The prelude alone is enough to refuse it: nothing past it is buffered.
        assert_eq!(
            d.push(&big[..12], &mut Vec::new()),
            Err(FrameError::TooLong {
                length: big.len(),
                limit: 1024
            })
        );
        // A forged prelude that announces 4 GiB.
        let mut forged = Vec::new();
        forged.extend_from_slice(&u32::MAX.to_be_bytes());
        forged.extend_from_slice(&0u32.to_be_bytes());
        let crc = crc32(&forged);
        forged.extend_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            Decoder::default().push(&forged, &mut Vec::new()),
            Err(FrameError::TooLong { .. })
        ));
        // The default limit takes 1 MiB.
        let mut out = Vec::new();
        Decoder::default()
            .push(&encode(&[], &vec![b'a'; MAX_MESSAGE - 16]), &mut out)
            .unwrap();
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn impossible_lengths_and_headers() {
        let mut m = Vec::new();
        m.extend_from_slice(&20u32.to_be_bytes());
        m.extend_from_slice(&10u32.to_be_bytes()); // 10 bytes of headers do not fit in 20
        let crc = crc32(&m);
        m.extend_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            Decoder::default().push(&m, &mut Vec::new()),
            Err(FrameError::BadLengths { .. })
        ));
        // A header with an unknown type.
        let mut frame = encode(&[("x", HeaderValue::Bool(true))], b"");
        frame[13] = b'x';
        frame[14] = 42;
        let n = frame.len();
        let crc = crc32(&frame[..n - 4]);
        frame[n - 4..].copy_from_slice(&crc.to_be_bytes());
        assert!(matches!(
            Decoder::default().push(&frame, &mut Vec::new()),
            Err(FrameError::BadHeader(_))
        ));
    }

    #[test]
    fn truncated_body_is_an_error_at_the_end() {
        let frame = event("messageStart", "{}");
        let mut d = Decoder::default();
        let mut out = Vec::new();
        d.push(&frame[..frame.len() - 1], &mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(
            d.finish(),
            Err(FrameError::Truncated {
                buffered: frame.len() - 1
            })
        );
    }

    #[test]
    fn messages_become_events() {
        let mut body = event("contentBlockDelta", r#"{"delta":{"text":"Hi"}}"#);
        body.extend(encode(
            &[
                (":exception-type", s("throttlingException")),
                (":content-type", s("application/json")),
                (":message-type", s("exception")),
            ],
            br#"{"message":"Too many tokens"}"#,
        ));
        body.extend(encode(
            &[
                (":message-type", s("error")),
                (":error-code", s("InternalFailure")),
                (":error-message", s("boom \"quoted\"")),
            ],
            b"",
        ));
        let mut d = EventDecoder::default();
        let mut out = Vec::new();
        FrameDecoder::push(&mut d, &body, &mut out).unwrap();
        FrameDecoder::finish(&mut d, &mut out).unwrap();
        assert_eq!(
            out,
            vec![
                sse::Event {
                    event: "contentBlockDelta".into(),
                    data: r#"{"delta":{"text":"Hi"}}"#.into()
                },
                sse::Event {
                    event: "exception:throttlingException".into(),
                    data: r#"{"message":"Too many tokens"}"#.into()
                },
                sse::Event {
                    event: "error:InternalFailure".into(),
                    data: r#"{"message":"boom \"quoted\""}"#.into()
                },
            ]
        );
        // An event without its type, and a payload that is not UTF-8.
        let mut d = EventDecoder::default();
        let no_type = encode(&[(":message-type", s("event"))], b"{}");
        assert!(FrameDecoder::push(&mut d, &no_type, &mut Vec::new()).is_err());
        let mut d = EventDecoder::default();
        let latin = encode(
            &[(":message-type", s("event")), (":event-type", s("x"))],
            &[0xFF, 0xFE],
        );
        assert!(FrameDecoder::push(&mut d, &latin, &mut Vec::new()).is_err());
    }
}
