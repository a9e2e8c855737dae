//! The stream judge: what a 200's body says, read synchronously from its bytes.
//!
//! A [`StreamJudge`] takes the body's chunks as the network delivers them, cuts them into events with the wire's
//! framing ([`crate::framing`]), reads those with the wire's reader, and says how the stream ended as soon as the
//! bytes tell ([`StreamEnd`]): the message stopped (its stop reason came), the provider reports an error, the framing
//! or an event cannot be read, or the stream's end marker came. A complete tool call is not the end: pi-agent-core
//! fails every call of a message that the token cap stopped (`failToolCallsFromTruncatedMessage` in its agent loop),
//! so the verdict needs the message's stop reason, which comes after the call (issue 27, item 5). No I/O, no clock, no async: `check`'s loop feeds it what
//! `reqwest` reads and times the result, and the fuzz targets feed it what libFuzzer makes, so both judge a stream
//! by the same code.

use crate::api::{ProviderError, StopKind, StreamEvent, StreamReader, Wire};
use crate::framing::{self, FrameDecoder, sse};

/// The most answer text the judge keeps, in bytes: the verdict shows 300 characters of it, but the whole kept text is
/// redacted before that cut, so a held value split over many deltas is found whole (a Bedrock short-term key is over
/// 1 KB). A text cut here is redacted with [`crate::sanitize::Redactor::redact_cut`].
pub const ANSWER_KEEP_BYTES: usize = 16 * 1024;

/// How a 200's stream ended, as far as its bytes tell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEnd {
    /// A tool call named a tool, its arguments are complete JSON (or the stream said the call ended), and the
    /// message stopped for another reason than the cap (or the stream ended without a stop reason): the verdict.
    ToolCall {
        /// The tool's name as the model sent it.
        name: String,
    },
    /// The model answered in text: it stopped normally, or the stream's end marker came without a stop reason.
    Text {
        /// The stop reason, when one came.
        stop: Option<String>,
    },
    /// The model ran out of tokens: before any tool call, inside the first call's arguments, or after a complete call
    /// (a message a Turn fails every call of); [`StreamJudge::call_complete`] tells the last from the others.
    Length {
        /// The stop reason, in the API's words.
        stop: String,
    },
    /// The model stopped for another reason (`content_filter`, `SAFETY`...) before any tool call.
    Stopped {
        /// The stop reason, in the API's words.
        reason: String,
    },
    /// The provider reported an error inside the stream, after its 200.
    Error(ProviderError),
    /// The framing or an event cannot be read as the API's format.
    Unreadable(String),
    /// The body ended without a stop reason or an end marker.
    Cut,
}

/// Reads one 200's body, chunk by chunk. See the module's documentation.
pub struct StreamJudge<'w> {
    wire: &'w dyn Wire,
    decoder: Box<dyn FrameDecoder>,
    reader: Box<dyn StreamReader>,
    events: Vec<sse::Event>,
    seen: Vec<StreamEvent>,
    answer: String,
    stop: Option<String>,
    done: bool,
    call: Option<String>,
    arguments: String,
    complete: bool,
    reasoned: bool,
    prompt_tokens: Option<u64>,
    /// The last text piece, trimmed (at most [`PIECE_KEEP_BYTES`]; a longer one is never a repeat), and how many
    /// pieces in a row ended the text with it.
    last_piece: Option<String>,
    trailing_repeats: u32,
}

/// The longest text piece whose repeats are counted: one token's, as Ollama counts them.
const PIECE_KEEP_BYTES: usize = 64;

impl<'w> StreamJudge<'w> {
    /// A judge of one body of `wire`'s stream, with the wire's framing and a fresh reader.
    pub fn new(wire: &'w dyn Wire) -> Self {
        Self {
            wire,
            decoder: framing::decoder(wire.framing()),
            reader: wire.reader(),
            events: Vec::new(),
            seen: Vec::new(),
            answer: String::new(),
            stop: None,
            done: false,
            call: None,
            arguments: String::new(),
            complete: false,
            reasoned: false,
            prompt_tokens: None,
            last_piece: None,
            trailing_repeats: 0,
        }
    }

    /// Feeds one chunk. `Some` when the stream's end is known; the caller stops reading then.
    pub fn push(&mut self, chunk: &[u8]) -> Option<StreamEnd> {
        self.push_observed(chunk, &mut |_| {})
    }

    /// The body ended: how the stream ended.
    pub fn finish(&mut self) -> StreamEnd {
        self.finish_observed(&mut |_| {})
    }

    /// [`StreamJudge::push`], showing `observe` every event the reader yields (the fuzz targets check them).
    pub fn push_observed(
        &mut self,
        chunk: &[u8],
        observe: &mut dyn FnMut(&StreamEvent),
    ) -> Option<StreamEnd> {
        let decoded = self.decoder.push(chunk, &mut self.events);
        self.judge(decoded, observe)
            .or_else(|| self.done.then(|| self.conclude()))
    }

    /// [`StreamJudge::finish`], showing `observe` every event the reader yields.
    pub fn finish_observed(&mut self, observe: &mut dyn FnMut(&StreamEvent)) -> StreamEnd {
        let decoded = self.decoder.finish(&mut self.events);
        self.judge(decoded, observe)
            .unwrap_or_else(|| self.conclude())
    }

    /// The start of the answer text seen so far (at most [`ANSWER_KEEP_BYTES`]).
    pub fn answer(&self) -> &str {
        &self.answer
    }

    /// Reasoning was streamed.
    pub fn reasoned(&self) -> bool {
        self.reasoned
    }

    /// The first tool call's arguments so far, when a call began (at most [`ANSWER_KEEP_BYTES`]).
    pub fn call_arguments(&self) -> Option<&str> {
        self.call.as_ref().map(|_| self.arguments.as_str())
    }

    /// The first tool call is complete: its arguments parse, or the stream said it ended. The verdict still waits
    /// for the message's stop reason.
    pub fn call_complete(&self) -> bool {
        self.complete
    }

    /// The first tool call's name, once one began.
    pub fn call_name(&self) -> Option<&str> {
        self.call.as_deref()
    }

    /// The prompt's length as the server counted it, when its stream said (a usage chunk read before the verdict).
    pub fn prompt_tokens(&self) -> Option<u64> {
        self.prompt_tokens
    }

    /// How many text pieces in a row, the same once trimmed, ended the text so far: Ollama ends a generation whose
    /// piece repeats more than 30 times, and closes its stream with no stop reason (issue 38).
    pub fn trailing_repeats(&self) -> u32 {
        self.trailing_repeats
    }

    /// The answer text, taken out of the judge.
    pub fn into_answer(self) -> String {
        self.answer
    }

    /// Reads the events one decode gave; `Some` when one of them ends the stream. A decode that failed ends it,
    /// whatever events it gave before failing.
    fn judge(
        &mut self,
        decoded: Result<(), String>,
        observe: &mut dyn FnMut(&StreamEvent),
    ) -> Option<StreamEnd> {
        if let Err(e) = decoded {
            self.events.clear();
            return Some(StreamEnd::Unreadable(e));
        }
        let events = std::mem::take(&mut self.events);
        for event in &events {
            if let Err(e) = self.reader.on_event(event, &mut self.seen) {
                self.seen.clear();
                return Some(StreamEnd::Unreadable(e.0));
            }
            let mut seen = std::mem::take(&mut self.seen);
            for ev in seen.drain(..) {
                observe(&ev);
                match ev {
                    StreamEvent::ToolCall { name } => {
                        if self.call.is_none() {
                            self.call = Some(name);
                        }
                    }
                    StreamEvent::ToolArguments(piece) if self.call.is_some() && !self.complete => {
                        keep(&mut self.arguments, &piece);
                        self.complete = complete_json(&self.arguments);
                    }
                    StreamEvent::ToolArguments(_) => {}
                    StreamEvent::ToolCallEnd if self.call.is_some() => self.complete = true,
                    StreamEvent::ToolCallEnd => {}
                    StreamEvent::Text(t) => {
                        self.count_repeat(&t);
                        keep(&mut self.answer, &t);
                    }
                    StreamEvent::Reasoning(t) => {
                        self.reasoned = true;
                        keep(&mut self.answer, &t);
                    }
                    StreamEvent::Stop(reason) => {
                        let length = self.wire.stop_kind(&reason) == StopKind::Length;
                        // A call whose stop is not the cap ended there: the stream said so.
                        if self.call.is_some() && !length {
                            return self.called();
                        }
                        // A complete call in a message the cap stopped: every Turn fails it.
                        if self.complete && length {
                            return Some(StreamEnd::Length { stop: reason });
                        }
                        self.stop = Some(reason);
                    }
                    StreamEvent::Error(e) => return Some(StreamEnd::Error(e)),
                    StreamEvent::PromptTokens(n) => self.prompt_tokens = Some(n),
                    StreamEvent::Done => self.done = true,
                }
            }
            self.seen = seen;
        }
        // Keep the buffer's allocation for the next chunk.
        self.events = events;
        self.events.clear();
        None
    }

    /// Counts a text piece against the last (trimmed, as Ollama compares them).
    fn count_repeat(&mut self, piece: &str) {
        let piece = piece.trim();
        if self.last_piece.as_deref() == Some(piece) {
            self.trailing_repeats = self.trailing_repeats.saturating_add(1);
        } else {
            self.last_piece = (piece.len() <= PIECE_KEEP_BYTES).then(|| piece.to_owned());
            self.trailing_repeats = 1;
        }
    }

    /// The call's verdict: it named a tool, and its arguments are complete (or it ended).
    fn called(&self) -> Option<StreamEnd> {
        self.call.clone().map(|name| StreamEnd::ToolCall { name })
    }

    /// The end of a stream that ran out (its body ended, or its end marker came) with no error.
    fn conclude(&mut self) -> StreamEnd {
        let length = self
            .stop
            .as_ref()
            .is_some_and(|r| self.wire.stop_kind(r) == StopKind::Length);
        if let Some(name) = self.call.clone() {
            // A complete call whose stop is not the cap (Gemini can send its stop before the call it ends), or that
            // the stream ended without a stop reason; a call that began and got no stop reason, then the end marker,
            // ended with the stream.
            if (self.complete && !length) || (self.stop.is_none() && self.done) {
                return StreamEnd::ToolCall { name };
            }
        }
        match self.stop.take().map(|r| (self.wire.stop_kind(&r), r)) {
            Some((StopKind::Length, stop)) => StreamEnd::Length { stop },
            Some((StopKind::Normal, stop)) => StreamEnd::Text { stop: Some(stop) },
            Some((StopKind::Other, reason)) => StreamEnd::Stopped { reason },
            None if self.done => StreamEnd::Text { stop: None },
            None => StreamEnd::Cut,
        }
    }
}

/// Appends as much of `piece` as [`ANSWER_KEEP_BYTES`] leaves room for, on a character boundary.
fn keep(into: &mut String, piece: &str) {
    let room = ANSWER_KEEP_BYTES.saturating_sub(into.len());
    let mut take = piece.len().min(room);
    while !piece.is_char_boundary(take) {
        take -= 1;
    }
    into.push_str(&piece[..take]);
}

/// Arguments that parse as one JSON object: the call is complete.
fn complete_json(arguments: &str) -> bool {
    let t = arguments.trim_end();
    t.ends_with('}') && serde_json::from_str::<serde_json::Value>(t).is_ok_and(|v| v.is_object())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{self, ApiKind};

    fn judge(kind: ApiKind, body: &str, piece: usize) -> (StreamEnd, String) {
        let wire = api::wire(kind).unwrap();
        let mut j = StreamJudge::new(wire);
        for chunk in body.as_bytes().chunks(piece) {
            if let Some(end) = j.push(chunk) {
                return (end, j.into_answer());
            }
        }
        let end = j.finish();
        (end, j.into_answer())
    }

    fn chunk(delta: &str, finish: Option<&str>) -> String {
        let finish = finish.map_or("null".to_owned(), |f| format!("\"{f}\""));
        format!(
            "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"finish_reason\":{finish}}}]}}\n\n"
        )
    }

    /// Issue 38: Ollama cuts a generation whose piece repeats more than 30 times; the judge counts the text's last
    /// run of one piece, trimmed, as Ollama does.
    #[test]
    fn the_text_s_last_run_of_one_piece_is_counted() {
        let wire = api::wire(ApiKind::OpenAiCompletions).unwrap();
        let mut j = StreamJudge::new(wire);
        let mut body = chunk(r#"{"content":"\n"}"#, None) + &chunk(r#"{"content":"La"}"#, None);
        for _ in 0..31 {
            body += &chunk(r#"{"content":" la"}"#, None);
        }
        assert_eq!(j.push(body.as_bytes()), None);
        assert_eq!(j.trailing_repeats(), 31);
        assert_eq!(j.push(chunk(r#"{"content":"!"}"#, None).as_bytes()), None);
        assert_eq!(j.trailing_repeats(), 1);
        assert_eq!(j.finish(), StreamEnd::Cut);
    }

    #[test]
    fn a_tool_call_ends_the_stream_however_it_is_cut() {
        let body = chunk(r#"{"role":"assistant","content":"Let me "}"#, None)
            + &chunk(
                r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"probe","arguments":""}}]}"#,
                None,
            )
            + &chunk(
                r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"status\":"}}]}"#,
                None,
            )
            + &chunk(
                r#"{"tool_calls":[{"index":0,"function":{"arguments":"\"ready\"}"}}]}"#,
                None,
            )
            + &chunk("{}", Some("tool_calls"))
            // Never read: the verdict came with the message's stop reason.
            + "data: {not json\n\n";
        for piece in [1, 7, body.len()] {
            let (end, answer) = judge(ApiKind::OpenAiCompletions, &body, piece);
            assert_eq!(
                end,
                StreamEnd::ToolCall {
                    name: "probe".into()
                },
                "{piece}"
            );
            assert_eq!(answer, "Let me ");
        }
    }

    #[test]
    fn stops_and_ends_are_judged_by_the_wire() {
        let text = chunk(r#"{"content":"hi"}"#, None);
        let cases = [
            (
                text.clone() + &chunk("{}", Some("stop")) + "data: [DONE]\n\n",
                StreamEnd::Text {
                    stop: Some("stop".into()),
                },
            ),
            (
                text.clone() + &chunk("{}", Some("length")),
                StreamEnd::Length {
                    stop: "length".into(),
                },
            ),
            (
                text.clone() + &chunk("{}", Some("content_filter")),
                StreamEnd::Stopped {
                    reason: "content_filter".into(),
                },
            ),
            (
                text.clone() + "data: [DONE]\n\n",
                StreamEnd::Text { stop: None },
            ),
            (text.clone(), StreamEnd::Cut),
            (
                "data: {not json\n\n".to_owned(),
                StreamEnd::Unreadable(String::new()),
            ),
        ];
        for (body, want) in cases {
            let (end, _) = judge(ApiKind::OpenAiCompletions, &body, 5);
            match (&end, &want) {
                (StreamEnd::Unreadable(_), StreamEnd::Unreadable(_)) => {}
                _ => assert_eq!(end, want, "{body}"),
            }
        }
    }

    #[test]
    fn the_end_marker_ends_the_stream_before_the_body_does() {
        let wire = api::wire(ApiKind::OpenAiCompletions).unwrap();
        let mut j = StreamJudge::new(wire);
        assert_eq!(j.push(chunk(r#"{"content":"hi"}"#, None).as_bytes()), None);
        assert_eq!(j.answer(), "hi");
        assert_eq!(
            j.push(b"data: [DONE]\n\n"),
            Some(StreamEnd::Text { stop: None })
        );
    }

    #[test]
    fn a_call_waits_for_its_arguments_and_a_cap_that_cuts_them_is_length() {
        let begin = chunk(
            r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"probe","arguments":""}}]}"#,
            None,
        ) + &chunk(
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"{"}}]}"#,
            None,
        );
        let wire = api::wire(ApiKind::OpenAiCompletions).unwrap();
        let mut j = StreamJudge::new(wire);
        // The name alone is no verdict any more: the arguments are not complete.
        assert_eq!(j.push(begin.as_bytes()), None);
        assert_eq!(j.call_arguments(), Some("{"));
        assert_eq!(
            j.push(chunk("{}", Some("length")).as_bytes()),
            None,
            "a length stop waits for the end"
        );
        assert_eq!(
            j.push(b"data: [DONE]\n\n"),
            Some(StreamEnd::Length {
                stop: "length".into()
            })
        );
        // A call with no arguments that the stream ends normally is complete.
        let (end, _) = judge(
            ApiKind::OpenAiCompletions,
            &(begin.clone() + &chunk("{}", Some("tool_calls"))),
            9,
        );
        assert_eq!(
            end,
            StreamEnd::ToolCall {
                name: "probe".into()
            }
        );
        // The arguments of a second call do not complete the first.
        let second = chunk(
            r#"{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"other","arguments":"{}"}}]}"#,
            None,
        );
        let mut j = StreamJudge::new(wire);
        assert_eq!(j.push((begin + &second).as_bytes()), None);
        assert_eq!(j.call_arguments(), Some("{"));
    }

    #[test]
    fn reasoning_is_told_from_text() {
        let wire = api::wire(ApiKind::OpenAiCompletions).unwrap();
        let mut j = StreamJudge::new(wire);
        j.push(chunk(r#"{"content":"hi"}"#, None).as_bytes());
        assert!(!j.reasoned());
        j.push(chunk(r#"{"reasoning_content":"hmm"}"#, None).as_bytes());
        assert!(j.reasoned());
        assert_eq!(j.answer(), "hihmm");
    }

    /// Anthropic: the call completes when its arguments parse or its block stops; a `max_tokens` stop inside the
    /// arguments is `length` with what came.
    #[test]
    fn anthropic_calls_complete_by_their_arguments_or_their_block() {
        let ev = |name: &str, data: &str| format!("event: {name}\ndata: {data}\n\n");
        let start = ev(
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"probe","input":{}}}"#,
        );
        let piece = |p: &str| {
            ev(
                "content_block_delta",
                &format!(
                    r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"input_json_delta","partial_json":{}}}}}"#,
                    serde_json::to_string(p).unwrap()
                ),
            )
        };
        let stop = |reason: &str| {
            ev(
                "message_delta",
                &format!(r#"{{"type":"message_delta","delta":{{"stop_reason":"{reason}"}}}}"#),
            ) + &ev("message_stop", r#"{"type":"message_stop"}"#)
        };
        let called = StreamEnd::ToolCall {
            name: "probe".into(),
        };
        let complete = start.clone() + &piece("{\"status\": ") + &piece("\"ready\"}");
        assert_eq!(judge(ApiKind::AnthropicMessages, &complete, 11).0, called);
        let closed = start.clone()
            + &ev(
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            );
        assert_eq!(judge(ApiKind::AnthropicMessages, &closed, 11).0, called);
        let cut = start + &piece("{\"st") + &stop("max_tokens");
        let wire = api::wire(ApiKind::AnthropicMessages).unwrap();
        let mut j = StreamJudge::new(wire);
        let end = j.push(cut.as_bytes()).unwrap_or_else(|| j.finish());
        assert_eq!(
            end,
            StreamEnd::Length {
                stop: "max_tokens".into()
            }
        );
        assert_eq!(j.call_arguments(), Some("{\"st"));
    }

    /// A complete call is not the verdict: the message's stop reason is. A call in a message the cap stopped is
    /// `length` (pi-agent-core fails every call of such a message), and what follows a complete call is still read.
    #[test]
    fn a_complete_call_waits_for_the_message_s_stop_reason() {
        let call = chunk(
            r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"probe","arguments":"{\"status\": \"ready\"}"}}]}"#,
            None,
        );
        let wire = api::wire(ApiKind::OpenAiCompletions).unwrap();
        let mut j = StreamJudge::new(wire);
        assert_eq!(
            j.push(call.as_bytes()),
            None,
            "the call is complete, the message is not"
        );
        assert!(j.call_complete());
        assert_eq!(j.call_name(), Some("probe"));
        assert_eq!(
            j.push(chunk("{}", Some("length")).as_bytes()),
            Some(StreamEnd::Length {
                stop: "length".into()
            })
        );
        assert_eq!(j.call_arguments(), Some("{\"status\": \"ready\"}"));
        // The end marker without a stop reason, or a body that ends: the call stands.
        for tail in ["data: [DONE]\n\n", ""] {
            let (end, _) = judge(ApiKind::OpenAiCompletions, &(call.clone() + tail), 7);
            assert_eq!(
                end,
                StreamEnd::ToolCall {
                    name: "probe".into()
                },
                "{tail:?}"
            );
        }
        // An error event or garbage after the call: a Turn's client fails on them too.
        let (end, _) = judge(
            ApiKind::OpenAiCompletions,
            &(call.clone() + "data: {not json\n\n"),
            7,
        );
        assert!(matches!(end, StreamEnd::Unreadable(_)), "{end:?}");
    }
}
