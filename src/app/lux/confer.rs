//! `confer`: a message to the model, answered in the session's conversation (earlier turns of
//! the session are sent with it).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{TokenUsage, model_used, parse, request, session, temperature, usage_of};
use crate::app::Outcome;
use crate::app::call::model::ModelStep;
use crate::app::call::{Call, PathStep, Refusal};
use crate::app::{App, Command, ErrorCode, Rejection};
use crate::events::Fact;
use crate::events::lux::ModelConferred;
use crate::model::Message;

const USAGE: &str = "pass {\"message\": \"...\"} and optionally model, temperature (0-2), \
                     max_tokens and session_id";

/// The system turn of every conversation.
const SYSTEM: &str = "You are a helpful assistant. Answer clearly and concisely.";

/// Arguments of `confer` (the seed's `ChatRequest`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ConferArgs {
    /// The message to send to the model.
    #[schemars(extend("x-text" = true))]
    pub message: String,
    /// The model (default: the server's THINKLEDGER_MODEL); recorded as the provider reports it.
    #[serde(default)]
    pub model: Option<String>,
    /// 0–2.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Most tokens to generate (capped by the server).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Continue this session's conversation (default: your current session).
    #[serde(default)]
    pub session_id: Option<String>,
}

/// The answer of `confer` (the seed's `ChatResponse`, with the session handle).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConferOutput {
    /// The model's reply.
    pub content: String,
    /// The model that answered, as the provider reported it.
    pub model: String,
    pub usage: Option<TokenUsage>,
    /// Why generation stopped (`stop`, `length`, …).
    pub finish_reason: Option<String>,
    /// Pass back to continue this conversation.
    pub session_id: String,
    /// Turns in this session's conversation, this one included.
    pub turns: u32,
}

fn args(command: &Command) -> Result<ConferArgs, Refusal> {
    let args: ConferArgs = parse(command, USAGE)?;
    if args.message.trim().is_empty() {
        return Err((
            Rejection::new(
                ErrorCode::InvalidArguments,
                "message is empty",
                "pass the text to send in `message`",
            ),
            None,
        ));
    }
    Ok(args)
}

/// One chat call: the session's conversation so far, then the message.
pub(super) fn plan(app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args = args(command)?;
    let temperature = temperature(args.temperature, None)?;
    if !command.prepared.model.answers.is_empty() {
        return Ok(None);
    }
    let (_, lux) = session(app, command, args.session_id.as_deref())?;
    let mut messages = vec![Message::system(SYSTEM)];
    for turn in lux.map(|l| l.conversation.as_slice()).unwrap_or_default() {
        messages.push(Message::user(turn.message.or_erased()));
        messages.push(Message::assistant(turn.reply.or_erased()));
    }
    messages.push(Message::user(&args.message));
    let mut chat = request(messages, args.model.as_deref(), temperature);
    chat.max_tokens = args.max_tokens;
    Ok(Some(ModelStep::Chat(chat)))
}

pub(super) fn decide(call: &mut Call<'_>) -> Outcome {
    let args = args(call.command)?;
    let (target, lux) = session(call.app, call.command, args.session_id.as_deref())?;
    let answer = call
        .model_answers()
        .first()
        .cloned()
        .ok_or_else(|| super::invalid("no model answer", USAGE))?;
    let reply = answer.text().to_owned();
    let model = model_used(&answer);
    let message = call
        .recorded_ref(&[PathStep::Key("message")])
        .ok_or_else(|| super::invalid("the message was not recorded as a text", USAGE))?;
    let reply_ref = call.derive_text(&reply);
    let mut facts = target.start_facts();
    facts.push(Fact::ModelConferred(ModelConferred {
        message,
        reply: reply_ref,
        model: model.clone(),
    }));
    let turns = lux.map_or(0, |l| l.conversation.len()) + 1;
    let body = ConferOutput {
        content: reply,
        model,
        usage: usage_of(&answer),
        finish_reason: answer.exchange.finish_reason.clone(),
        session_id: target.id().to_string(),
        turns: u32::try_from(turns).unwrap_or(u32::MAX),
    };
    call.done(Some(target.id()), facts, body)
}
