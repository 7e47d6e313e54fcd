//! The OpenAI-compatible wire format: what a call asks ([`ChatRequest`], [`EmbeddingsRequest`])
//! and the parts of an answer that are kept (messages, tool calls, log-probabilities, usage).
//! Requests are encoded here, once, into the bytes that are sent and digested.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ModelError;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions.
    System,
    /// The caller.
    User,
    /// The model.
    Assistant,
    /// A tool's result.
    Tool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The text (absent on an assistant turn that only calls tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Tools the assistant called in this turn.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message: which call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    fn text(role: Role, content: &str) -> Self {
        Self {
            role,
            content: Some(content.to_owned()),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// A system message.
    pub fn system(content: &str) -> Self {
        Self::text(Role::System, content)
    }

    /// A user message.
    pub fn user(content: &str) -> Self {
        Self::text(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: &str) -> Self {
        Self::text(Role::Assistant, content)
    }

    /// A tool's result for the call `tool_call_id`.
    pub fn tool_result(tool_call_id: &str, content: &str) -> Self {
        Self {
            tool_call_id: Some(tool_call_id.to_owned()),
            ..Self::text(Role::Tool, content)
        }
    }
}

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionDefinition {
    /// Its name.
    pub name: String,
    /// What it does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A JSON Schema of its arguments.
    pub parameters: Value,
}

/// A tool offered to the model (`{"type": "function", "function": …}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function.
    pub function: FunctionDefinition,
}

impl ToolDefinition {
    /// A function tool.
    pub fn function(name: &str, description: &str, parameters: Value) -> Self {
        Self {
            kind: "function".to_owned(),
            function: FunctionDefinition {
                name: name.to_owned(),
                description: Some(description.to_owned()),
                parameters,
            },
        }
    }
}

/// The function part of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The function's name.
    #[serde(default)]
    pub name: String,
    /// Its arguments, a JSON text as the model wrote it (not parsed: it may be malformed).
    #[serde(default)]
    pub arguments: String,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id, to answer it with a `tool` message.
    #[serde(default)]
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    /// What was called, with which arguments.
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".to_owned()
}

/// `response_format`: free text, any JSON object, or JSON matching a schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Free text (the default).
    Text,
    /// Any JSON object.
    JsonObject,
    /// JSON matching `json_schema.schema`.
    JsonSchema {
        /// `{"name": …, "schema": …, "strict": …}`.
        json_schema: Value,
    },
}

impl ResponseFormat {
    /// JSON matching `schema`, named `name`, strictly.
    pub fn json_schema(name: &str, schema: Value) -> Self {
        Self::JsonSchema {
            json_schema: serde_json::json!({ "name": name, "schema": schema, "strict": true }),
        }
    }
}

/// A chat completion request. `model: None` takes the configured default; `max_tokens` is
/// capped by the configuration (and set to the cap when absent).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    /// The model asked for; honoured as given.
    pub model: Option<String>,
    /// The conversation.
    pub messages: Vec<Message>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The most tokens to generate.
    pub max_tokens: Option<u32>,
    /// A sampling seed, for servers that honour one.
    pub seed: Option<u64>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Tools the model may call.
    pub tools: Vec<ToolDefinition>,
    /// `tool_choice` as the server takes it (`"auto"`, `"required"`, or a named function).
    pub tool_choice: Option<Value>,
    /// Ask for each generated token's log-probability.
    pub logprobs: bool,
    /// And for this many alternatives per token (0–20).
    pub top_logprobs: Option<u8>,
    /// The answer's format.
    pub response_format: Option<ResponseFormat>,
}

impl ChatRequest {
    /// A request of these messages, all else default.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }
}

impl ChatRequest {
    /// Whether `sent` (the exact bytes of a recorded request) asks what this request asks: the
    /// same conversation, sampling, tools and answer format, and the same model when this
    /// request names one. The model resolved from the configuration and the token cap are the
    /// sender's and are not compared. Pure: how a decision checks that a recorded answer
    /// answers the prompt it would send now.
    pub fn was_sent_as(&self, sent: &[u8]) -> bool {
        let Ok(Value::Object(sent)) = serde_json::from_slice::<Value>(sent) else {
            return false;
        };
        let same = |name: &str, ours: Option<Value>| sent.get(name) == ours.as_ref();
        let model_matches = self
            .model
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .is_none_or(|m| sent.get("model").and_then(Value::as_str) == Some(m));
        model_matches
            && same("messages", json(&self.messages))
            && same("temperature", self.temperature.map(Value::from))
            && same("seed", self.seed.map(Value::from))
            && same("stop", non_empty(&self.stop))
            && same("tools", non_empty(&self.tools))
            && same("tool_choice", self.tool_choice.clone())
            && same(
                "logprobs",
                (self.logprobs || self.top_logprobs.is_some()).then_some(Value::Bool(true)),
            )
            && same("top_logprobs", self.top_logprobs.map(Value::from))
            && same(
                "response_format",
                self.response_format.as_ref().and_then(json),
            )
    }
}

fn json<T: Serialize + ?Sized>(value: &T) -> Option<Value> {
    serde_json::to_value(value).ok()
}

/// A list as it is sent: absent when empty.
fn non_empty<T: Serialize>(items: &[T]) -> Option<Value> {
    if items.is_empty() { None } else { json(items) }
}

/// What is actually sent: the request with its model resolved and its token cap applied.
#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: &'a [Message],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    stop: &'a [String],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [ToolDefinition],
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'a Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    logprobs: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<&'a ResponseFormat>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<Value>,
}

/// The bytes of a chat request for `model`, capped at `cap` tokens, streamed or not.
pub(super) fn encode_chat(
    request: &ChatRequest,
    model: &str,
    cap: u32,
    stream: bool,
) -> Result<Vec<u8>, ModelError> {
    let body = ChatBody {
        model,
        messages: &request.messages,
        temperature: request.temperature,
        max_tokens: request.max_tokens.map_or(cap, |m| m.min(cap)),
        seed: request.seed,
        stop: &request.stop,
        tools: &request.tools,
        tool_choice: request.tool_choice.as_ref(),
        logprobs: request.logprobs || request.top_logprobs.is_some(),
        top_logprobs: request.top_logprobs,
        response_format: request.response_format.as_ref(),
        stream,
        stream_options: stream.then(|| serde_json::json!({ "include_usage": true })),
    };
    serde_json::to_vec(&body).map_err(|e| ModelError::Encode {
        reason: e.to_string(),
    })
}

/// An embeddings request: the texts, and the model (`None`: the configured default).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EmbeddingsRequest {
    /// The model asked for; honoured as given.
    pub model: Option<String>,
    /// The texts to embed, in order.
    pub input: Vec<String>,
}

/// The bytes of an embeddings request.
pub(super) fn encode_embeddings(
    request: &EmbeddingsRequest,
    model: &str,
) -> Result<Vec<u8>, ModelError> {
    let body = serde_json::json!({
        "model": model,
        "input": request.input,
        "encoding_format": "float",
    });
    serde_json::to_vec(&body).map_err(|e| ModelError::Encode {
        reason: e.to_string(),
    })
}

/// Token counts as the server reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Tokens generated.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Both.
    #[serde(default)]
    pub total_tokens: u64,
}

/// One alternative token and its log-probability.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural log-probability.
    pub logprob: f64,
}

/// One generated token, its log-probability and the top alternatives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenLogprob {
    /// The token's text.
    pub token: String,
    /// Its natural log-probability.
    pub logprob: f64,
    /// The alternatives asked for with `top_logprobs`.
    #[serde(default)]
    pub top_logprobs: Vec<TopLogprob>,
}

/// The parts of a non-streamed answer that are read.
#[derive(Deserialize)]
pub(super) struct CompletionBody {
    #[serde(default)]
    pub model: Option<String>,
    pub choices: Vec<ChoiceBody>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[derive(Deserialize)]
pub(super) struct ChoiceBody {
    #[serde(default)]
    pub message: Option<MessageBody>,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub logprobs: Option<LogprobsBody>,
}

#[derive(Deserialize)]
pub(super) struct MessageBody {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
}

#[derive(Deserialize, Default)]
pub(super) struct LogprobsBody {
    #[serde(default)]
    pub content: Option<Vec<TokenLogprob>>,
}

/// The parts of an embeddings answer that are read.
#[derive(Deserialize)]
pub(super) struct EmbeddingsBody {
    #[serde(default)]
    pub model: Option<String>,
    pub data: Vec<EmbeddingItem>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[derive(Deserialize)]
pub(super) struct EmbeddingItem {
    #[serde(default)]
    pub index: usize,
    pub embedding: Vec<f32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_call_s_model_is_sent_and_max_tokens_is_capped() {
        let mut request = ChatRequest::new(vec![Message::user("hi")]);
        request.max_tokens = Some(5000);
        request.top_logprobs = Some(2);
        let body: Value =
            serde_json::from_slice(&encode_chat(&request, "m", 64, true).unwrap()).unwrap();
        assert_eq!(body["model"], "m");
        assert_eq!(body["max_tokens"], 64);
        assert_eq!(body["logprobs"], true);
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert!(body.get("tools").is_none() && body.get("temperature").is_none());
        request.max_tokens = None;
        let plain: Value =
            serde_json::from_slice(&encode_chat(&request, "m", 64, false).unwrap()).unwrap();
        assert_eq!(plain["max_tokens"], 64);
        assert!(plain.get("stream").is_none());
    }

    #[test]
    fn a_request_is_recognised_in_its_sent_bytes_and_any_change_is_not() {
        let mut request = ChatRequest::new(vec![Message::system("s"), Message::user("hi")]);
        request.temperature = Some(0.0);
        request.top_logprobs = Some(1);
        for stream in [false, true] {
            let sent = encode_chat(&request, "served", 64, stream).unwrap();
            assert!(request.was_sent_as(&sent), "stream {stream}");
        }
        let sent = encode_chat(&request, "served", 64, false).unwrap();
        let mut other = request.clone();
        other.messages.push(Message::assistant("more"));
        assert!(!other.was_sent_as(&sent), "another conversation");
        let mut other = request.clone();
        other.temperature = Some(0.5);
        assert!(!other.was_sent_as(&sent), "another temperature");
        let mut other = request.clone();
        other.model = Some("named".to_owned());
        assert!(!other.was_sent_as(&sent), "another model named");
        other.model = Some("served".to_owned());
        assert!(other.was_sent_as(&sent), "the model named and sent");
        assert!(!request.was_sent_as(b"not json"));
    }

    #[test]
    fn response_formats_and_tools_have_the_openai_shape() {
        let format = ResponseFormat::json_schema("answer", serde_json::json!({"type": "object"}));
        assert_eq!(
            serde_json::to_value(&format).unwrap(),
            serde_json::json!({"type": "json_schema", "json_schema": {
                "name": "answer", "schema": {"type": "object"}, "strict": true}})
        );
        let tool = ToolDefinition::function("f", "does f", serde_json::json!({}));
        assert_eq!(serde_json::to_value(&tool).unwrap()["type"], "function");
        let result = serde_json::to_value(Message::tool_result("c1", "42")).unwrap();
        assert_eq!(
            result,
            serde_json::json!({"role": "tool", "content": "42", "tool_call_id": "c1"})
        );
    }
}
