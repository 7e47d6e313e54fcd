//! `ModelLlm`: the [`LlmClient`] over thinkledger's provider client (`model::ModelClient`), so
//! every answer carries its exact exchange for the ledger.
//!
//! Also the one conversion of the engine's conversation into the provider's wire messages and
//! tools, which the ledger's recorder uses too, so what is recorded is what is sent.

use std::sync::Arc;

use super::error::ReasoningError;
use super::traits::{
    BoxFuture, LlmClient, LlmMessage, LlmResponse, LlmRole, LlmStreamChunk, LlmToolCall, LlmUsage,
    StreamHandler, ToolDefinition,
};
use crate::model::{self, ChatOutcome, ChatRequest, FunctionCall, Message, ModelClient, Role};

/// The sampling a run asks the model with.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelSettings {
    /// The model (none: the provider's configured default).
    pub model: Option<String>,
    /// Sampling temperature (none: the server's default).
    pub temperature: Option<f64>,
    /// The most tokens of one answer (none: the provider's cap).
    pub max_tokens: Option<u32>,
}

/// The provider client as the engine's model.
#[derive(Clone)]
pub struct ModelLlm {
    client: Arc<ModelClient>,
    settings: ModelSettings,
}

impl ModelLlm {
    /// Asks `client` with `settings`.
    pub fn new(client: Arc<ModelClient>, settings: ModelSettings) -> Self {
        Self { client, settings }
    }

    /// The sampling it asks with.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }
}

/// The engine's conversation as the provider's wire messages.
pub fn wire_messages(messages: &[LlmMessage]) -> Vec<Message> {
    messages
        .iter()
        .map(|m| Message {
            role: match m.role {
                LlmRole::System => Role::System,
                LlmRole::User => Role::User,
                LlmRole::Assistant => Role::Assistant,
                LlmRole::Tool => Role::Tool,
            },
            // An assistant turn that only calls tools has no content (as providers send it).
            content: (!m.content.is_empty() || m.tool_calls.is_empty()).then(|| m.content.clone()),
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| model::ToolCall {
                    id: c.id.clone(),
                    kind: "function".to_owned(),
                    function: FunctionCall {
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                    },
                })
                .collect(),
            tool_call_id: m.tool_call_id.clone(),
        })
        .collect()
}

/// The engine's tools as the provider's tool definitions.
pub fn wire_tools(tools: &[ToolDefinition]) -> Vec<model::ToolDefinition> {
    tools
        .iter()
        .map(|t| model::ToolDefinition::function(&t.name, &t.description, t.parameters.clone()))
        .collect()
}

/// The request of one model call.
pub fn chat_request(
    messages: &[LlmMessage],
    tools: &[ToolDefinition],
    settings: &ModelSettings,
) -> ChatRequest {
    let mut request = ChatRequest::new(wire_messages(messages));
    request.model.clone_from(&settings.model);
    request.temperature = settings.temperature;
    request.max_tokens = settings.max_tokens;
    request.tools = wire_tools(tools);
    request
}

/// The engine's view of a provider answer, its exchange kept.
pub fn response_of(outcome: ChatOutcome) -> LlmResponse {
    let exchange = &outcome.exchange;
    LlmResponse {
        text: outcome.text().to_owned(),
        tool_calls: exchange
            .tool_calls
            .iter()
            .map(|c| LlmToolCall {
                id: c.id.clone(),
                name: c.function.name.clone(),
                arguments: c.function.arguments.clone(),
            })
            .collect(),
        finish_reason: exchange.finish_reason.clone(),
        usage: exchange.usage.map(|u| LlmUsage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
            total_tokens: u.total_tokens,
        }),
        model: exchange
            .model_reported
            .clone()
            .or_else(|| Some(exchange.model_requested.clone())),
        exchange: Some(Box::new(outcome)),
    }
}

impl LlmClient for ModelLlm {
    fn generate<'a>(
        &'a self,
        messages: &'a [LlmMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmResponse, ReasoningError>> {
        Box::pin(async move {
            let request = chat_request(messages, tools, &self.settings);
            self.client
                .chat(&request)
                .await
                .map(response_of)
                .map_err(|e| ReasoningError::Llm(e.to_string()))
        })
    }

    /// A streamed call (`stream: true`, every SSE byte kept in the exchange): the handler gets
    /// each piece of text as its event arrives, then each tool call once the answer is whole.
    /// A stream that broke and was retried hands its text out again from the start.
    fn stream<'a>(
        &'a self,
        messages: &'a [LlmMessage],
        tools: &'a [ToolDefinition],
        handler: &'a dyn StreamHandler,
    ) -> BoxFuture<'a, Result<LlmResponse, ReasoningError>> {
        Box::pin(async move {
            let request = chat_request(messages, tools, &self.settings);
            let on_text = |text: &str| handler.handle_chunk(&LlmStreamChunk::Text(text.to_owned()));
            let response = self
                .client
                .chat_streamed_live(&request, &on_text)
                .await
                .map(response_of)
                .map_err(|e| ReasoningError::Llm(e.to_string()))?;
            for call in &response.tool_calls {
                handler.handle_chunk(&LlmStreamChunk::ToolCall(call.clone()));
            }
            handler.handle_chunk(&LlmStreamChunk::Finished {
                finish_reason: response.finish_reason.clone(),
            });
            Ok(response)
        })
    }
}
