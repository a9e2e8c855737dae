//! The framing room: how a 200's body is cut into events, before any API reads them.
//!
//! Two framings carry every stream the probe reads: Server-Sent Events ([`sse`], every API but one) and AWS's
//! binary event stream ([`aws_event_stream`], Bedrock's). Both decoders are incremental and bounded, and both yield
//! [`sse::Event`]s, so the wires' readers (`api/`) see one shape whatever the bytes were.

pub mod aws_event_stream;
pub mod sse;

/// How a 200's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `text/event-stream`.
    Sse,
    /// AWS's binary event stream (`application/vnd.amazon.eventstream`): Bedrock.
    AwsEventStream,
}

/// Cuts a 200's body into events, whatever its framing. SSE events come as they are; other framings (AWS's event
/// stream) map each message onto an [`sse::Event`] (`event`: its event type, `data`: its payload).
pub trait FrameDecoder: Send {
    /// Consumes a chunk.
    fn push(&mut self, chunk: &[u8], out: &mut Vec<sse::Event>) -> Result<(), String>;
    /// Ends the body.
    fn finish(&mut self, out: &mut Vec<sse::Event>) -> Result<(), String>;
}

impl FrameDecoder for sse::Decoder {
    fn push(&mut self, chunk: &[u8], out: &mut Vec<sse::Event>) -> Result<(), String> {
        sse::Decoder::push(self, chunk, out).map_err(|e| e.to_string())
    }

    fn finish(&mut self, out: &mut Vec<sse::Event>) -> Result<(), String> {
        sse::Decoder::finish(self, out).map_err(|e| e.to_string())
    }
}

/// A fresh decoder of `framing`, with its default limits.
pub fn decoder(framing: Framing) -> Box<dyn FrameDecoder> {
    match framing {
        Framing::Sse => Box::new(sse::Decoder::default()),
        Framing::AwsEventStream => Box::new(aws_event_stream::EventDecoder::default()),
    }
}
