//! Server-sent events of a streamed chat completion, reassembled into one answer: content
//! deltas concatenated, tool-call deltas joined by their `index` (id and name from the first
//! delta that has them, argument fragments concatenated), log-probabilities appended, and the
//! finish reason, model and usage taken from the chunks that carry them. Pure: it reads bytes.

use serde::Deserialize;

use super::wire::{FunctionCall, LogprobsBody, TokenLogprob, ToolCall, Usage};

/// A streamed answer, reassembled.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Reassembled {
    pub model: Option<String>,
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub logprobs: Option<Vec<TokenLogprob>>,
    pub usage: Option<Usage>,
    /// Whether the `[DONE]` sentinel arrived.
    pub done: bool,
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
    #[serde(default)]
    logprobs: Option<LogprobsBody>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: usize,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// The `data` payloads of an SSE stream's complete events, in order (comments, other fields
/// and `event:` names are skipped; multi-line data is joined with `\n`; CRLF and LF both end
/// lines).
fn data_payloads(stream: &str) -> Vec<String> {
    let mut payloads = Vec::new();
    let mut current: Option<String> = None;
    for line in stream.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            payloads.extend(current.take());
            continue;
        }
        if let Some(data) = line.strip_prefix("data:") {
            let data = data.strip_prefix(' ').unwrap_or(data);
            match &mut current {
                Some(buffer) => {
                    buffer.push('\n');
                    buffer.push_str(data);
                }
                None => current = Some(data.to_owned()),
            }
        }
    }
    // An event is dispatched only by the blank line after it: a last one without it was cut
    // off and is dropped, as the SSE specification says.
    payloads
}

/// The text of a stream as it arrives: each piece of bytes read is pushed, and the content
/// deltas of the events it completed come back, in order. Only complete events count (the
/// blank line after each), so a piece that ends mid-event or mid-character hands out nothing
/// of it until the rest arrives.
#[derive(Debug, Default)]
pub(super) struct LiveText {
    received: Vec<u8>,
    handed: usize,
}

impl LiveText {
    /// Adds `piece`; the content deltas of the events completed since the last push.
    pub(super) fn push(&mut self, piece: &[u8]) -> Vec<String> {
        self.received.extend_from_slice(piece);
        let text = String::from_utf8_lossy(&self.received);
        let payloads = data_payloads(&text);
        let fresh = payloads.get(self.handed..).unwrap_or_default();
        self.handed = payloads.len();
        fresh
            .iter()
            .filter_map(|payload| serde_json::from_str::<Chunk>(payload).ok())
            .filter_map(|chunk| chunk.choices.into_iter().next()?.delta?.content)
            .filter(|text| !text.is_empty())
            .collect()
    }
}

/// Reassembles a whole stream. Errors name the first payload that is not a chunk; a stream
/// that stops early is not an error here (`done` and `finish_reason` say how it ended).
pub(super) fn reassemble(stream: &[u8]) -> Result<Reassembled, String> {
    let text = std::str::from_utf8(stream).map_err(|e| format!("the stream is not UTF-8: {e}"))?;
    let mut out = Reassembled::default();
    for payload in data_payloads(text) {
        if payload.trim() == "[DONE]" {
            out.done = true;
            break;
        }
        let chunk: Chunk = serde_json::from_str(&payload)
            .map_err(|e| format!("a stream event is not a completion chunk ({e}): {payload}"))?;
        if chunk.model.is_some() {
            out.model = chunk.model;
        }
        if chunk.usage.is_some() {
            out.usage = chunk.usage;
        }
        let Some(choice) = chunk.choices.into_iter().next() else {
            continue;
        };
        if let Some(delta) = choice.delta {
            if let Some(piece) = delta.content {
                out.content.get_or_insert_with(String::new).push_str(&piece);
            }
            for part in delta.tool_calls {
                merge_tool_call(&mut out.tool_calls, part);
            }
        }
        if let Some(tokens) = choice.logprobs.and_then(|l| l.content) {
            out.logprobs.get_or_insert_with(Vec::new).extend(tokens);
        }
        if choice.finish_reason.is_some() {
            out.finish_reason = choice.finish_reason;
        }
    }
    Ok(out)
}

fn merge_tool_call(calls: &mut Vec<ToolCall>, part: ToolCallDelta) {
    while calls.len() <= part.index {
        calls.push(ToolCall {
            id: String::new(),
            kind: "function".to_owned(),
            function: FunctionCall::default(),
        });
    }
    let Some(call) = calls.get_mut(part.index) else {
        return;
    };
    if let Some(id) = part.id.filter(|id| !id.is_empty()) {
        call.id = id;
    }
    if let Some(function) = part.function {
        if let Some(name) = function.name {
            call.function.name.push_str(&name);
        }
        if let Some(arguments) = function.arguments {
            call.function.arguments.push_str(&arguments);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_text_hands_out_each_complete_event_once_whatever_the_pieces() {
        let stream = "data: {\"choices\":[{\"delta\":{\"content\":\"Par\"}}]}\n\n\
                      data: {\"choices\":[{\"delta\":{\"content\":\"is \\u00e9\"}}]}\n\n\
                      data: [DONE]\n\n";
        for size in [1, 3, 7, stream.len()] {
            let mut live = LiveText::default();
            let mut out = String::new();
            for piece in stream.as_bytes().chunks(size) {
                out.extend(live.push(piece));
            }
            assert_eq!(out, "Paris \u{e9}", "pieces of {size} bytes");
        }
    }

    #[test]
    fn content_and_tool_call_deltas_are_joined() {
        let stream = concat!(
            ": ping\r\n\r\n",
            "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"add\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"total_tokens\":7}}\n\n",
            "data: [DONE]\n\n",
        );
        let out = reassemble(stream.as_bytes()).unwrap();
        assert_eq!(out.model.as_deref(), Some("m"));
        assert_eq!(out.content.as_deref(), Some("Hello"));
        assert_eq!(out.tool_calls.len(), 1);
        assert_eq!(out.tool_calls[0].id, "c1");
        assert_eq!(out.tool_calls[0].function.name, "add");
        assert_eq!(out.tool_calls[0].function.arguments, "{\"a\":1}");
        assert_eq!(out.finish_reason.as_deref(), Some("tool_calls"));
        assert_eq!(out.usage.map(|u| u.total_tokens), Some(7));
        assert!(out.done);
    }

    #[test]
    fn a_cut_stream_says_it_is_not_done_and_garbage_is_named() {
        let out =
            reassemble(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n").unwrap();
        assert!(!out.done && out.finish_reason.is_none());
        let cut =
            reassemble(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"cho")
                .unwrap();
        assert_eq!(cut.content.as_deref(), Some("Hi"));
        let err = reassemble(b"data: {not json\n\n").unwrap_err();
        assert!(err.contains("{not json"), "{err}");
    }
}
