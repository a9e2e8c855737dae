//! An incremental Server-Sent Events decoder with a bound on memory.
//!
//! pi streams every call, so the probe reads `text/event-stream` bodies as they arrive and stops at the first
//! tool-call event. The decoder takes whatever chunks the network delivers (an event can be split anywhere, even
//! inside a UTF-8 sequence or a `\r\n`) and yields whole events. A hostile or broken server can send a line that never
//! ends: the decoder refuses a line longer than its limit instead of buffering it.

use thiserror::Error;

/// The default limit on one line, in bytes. A tool-call chunk is a few hundred bytes; a long text delta a few KiB.
pub const DEFAULT_MAX_LINE: usize = 1024 * 1024;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Event {
    /// The `event:` field, empty when absent (the spec's default type is `message`).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// Why a stream cannot be read as SSE.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SseError {
    /// A line grew past the limit without a line ending.
    #[error("a line of the event stream is longer than {limit} bytes")]
    LineTooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// A line is not UTF-8.
    #[error("the event stream is not valid UTF-8")]
    InvalidUtf8,
}

/// Decodes SSE incrementally. Feed it chunks with [`Decoder::push`]; call [`Decoder::finish`] at the end.
#[derive(Debug)]
pub struct Decoder {
    line: Vec<u8>,
    max_line: usize,
    /// The previous chunk ended in `\r`: a `\n` at the start of the next one belongs to the same line ending.
    pending_cr: bool,
    event: String,
    data: String,
    /// How many `data:` lines the pending event has (an event with one empty `data:` line is still an event).
    data_lines: usize,
    bom_checked: bool,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE)
    }
}

impl Decoder {
    /// A decoder that refuses lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        Self {
            line: Vec::new(),
            max_line,
            pending_cr: false,
            event: String::new(),
            data: String::new(),
            data_lines: 0,
            bom_checked: false,
        }
    }

    /// Consumes a chunk and appends every event it completes to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        if chunk.is_empty() {
            // Nothing came: a `\r` that ended the previous chunk still waits for its `\n`.
            return Ok(());
        }
        if self.pending_cr {
            self.pending_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            match chunk.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(at) => {
                    self.extend_line(&chunk[..at])?;
                    let is_cr = chunk[at] == b'\r';
                    chunk = &chunk[at + 1..];
                    if is_cr {
                        match chunk.first() {
                            Some(b'\n') => chunk = &chunk[1..],
                            None => self.pending_cr = true,
                            Some(_) => {}
                        }
                    }
                    let line = std::mem::take(&mut self.line);
                    self.process_line(&line, out)?;
                }
                None => {
                    self.extend_line(chunk)?;
                    break;
                }
            }
        }
        Ok(())
    }

    /// Ends the stream. A last event without its blank line is still dispatched: some servers close the
    /// connection right after the final `data:` line, and losing that event would misread the answer.
    pub fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), SseError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), SseError> {
        if self.line.len() + bytes.len() > self.max_line {
            return Err(SseError::LineTooLong {
                limit: self.max_line,
            });
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<Event>) -> Result<(), SseError> {
        if line.is_empty() {
            self.bom_checked = true;
            self.dispatch(out);
            return Ok(());
        }
        let mut line = std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8)?;
        if !self.bom_checked {
            // A byte-order mark may start the stream; it can arrive split across chunks, so it is removed here.
            self.bom_checked = true;
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        if line.starts_with(':') {
            return Ok(()); // a comment, e.g. OpenRouter's `: OPENROUTER PROCESSING` keep-alives
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => value.clone_into(&mut self.event),
            "data" => {
                if self.data_lines > 0 {
                    self.data.push('\n');
                }
                if self.data.len() + value.len() > self.max_line {
                    return Err(SseError::LineTooLong {
                        limit: self.max_line,
                    });
                }
                self.data.push_str(value);
                self.data_lines += 1;
            }
            _ => {} // `id`, `retry` and unknown fields do not matter to a single request
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<Event>) {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.data_lines) > 0 {
            out.push(Event { event, data });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], piece: usize) -> Result<Vec<Event>, SseError> {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for chunk in input.chunks(piece.max(1)) {
            d.push(chunk, &mut out)?;
        }
        d.finish(&mut out)?;
        Ok(out)
    }

    fn ev(event: &str, data: &str) -> Event {
        Event {
            event: event.into(),
            data: data.into(),
        }
    }

    #[test]
    fn splits_anywhere_give_the_same_events() {
        let input = "event: message_start\r\ndata: {\"a\":1}\r\n\r\n: keep-alive\n\ndata: x\ndata: y\n\ndata: é€\r\rdata: [DONE]\n\n";
        let want = vec![
            ev("message_start", "{\"a\":1}"),
            ev("", "x\ny"),
            ev("", "é€"),
            ev("", "[DONE]"),
        ];
        for piece in 1..input.len() {
            assert_eq!(
                decode_in_pieces(input.as_bytes(), piece).unwrap(),
                want,
                "piece size {piece}"
            );
        }
    }

    #[test]
    fn empty_data_lines_count() {
        assert_eq!(
            decode_in_pieces(b"data:\ndata:\n\n", 3).unwrap(),
            vec![ev("", "\n")]
        );
        assert_eq!(decode_in_pieces(b"data\n\n", 3).unwrap(), vec![ev("", "")]);
        // An event with no data is not dispatched.
        assert_eq!(decode_in_pieces(b"event: ping\n\n", 3).unwrap(), vec![]);
    }

    #[test]
    fn last_event_without_blank_line_is_kept() {
        assert_eq!(
            decode_in_pieces(b"data: tail", 4).unwrap(),
            vec![ev("", "tail")]
        );
    }

    #[test]
    fn bom_and_field_without_space() {
        assert_eq!(
            decode_in_pieces(b"\xEF\xBB\xBFdata:{}\n\n", 2).unwrap(),
            vec![ev("", "{}")]
        );
    }

    #[test]
    fn refuses_an_endless_line() {
        let mut d = Decoder::new(64);
        let mut out = Vec::new();
        let chunk = [b'a'; 40];
        d.push(&chunk, &mut out).unwrap();
        assert_eq!(
            d.push(&chunk, &mut out),
            Err(SseError::LineTooLong { limit: 64 })
        );
    }

    #[test]
    fn refuses_endless_data_across_lines() {
        let mut d = Decoder::new(64);
        let mut out = Vec::new();
        let line = format!("data: {}\n", "b".repeat(40));
        d.push(line.as_bytes(), &mut out).unwrap();
        assert_eq!(
            d.push(line.as_bytes(), &mut out),
            Err(SseError::LineTooLong { limit: 64 })
        );
    }

    /// Found by the `sse` fuzz target: an empty chunk between a `\r` and its `\n` made the `\n` a blank line of
    /// its own, which dispatched the event early (and split one event in two).
    #[test]
    fn an_empty_chunk_between_cr_and_lf_changes_nothing() {
        let mut d = Decoder::default();
        let mut out = Vec::new();
        for chunk in [&b"data: a\r"[..], b"", b"\ndata: b\n", b"", b"\n"] {
            d.push(chunk, &mut out).unwrap();
        }
        d.finish(&mut out).unwrap();
        assert_eq!(out, vec![ev("", "a\nb")]);
        // The minimized input: whole, the line after `data\r\n` is refused before any event.
        let mut d = Decoder::default();
        let mut out = Vec::new();
        let err = [&b"data\r"[..], b"", b"\n\xff\n"]
            .into_iter()
            .try_for_each(|c| d.push(c, &mut out));
        assert_eq!((out, err), (vec![], Err(SseError::InvalidUtf8)));
    }

    #[test]
    fn refuses_invalid_utf8() {
        assert_eq!(
            decode_in_pieces(b"data: \xff\xfe\n\n", 100),
            Err(SseError::InvalidUtf8)
        );
    }
}
