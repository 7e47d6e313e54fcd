//! The reasoning engine's runs as ledger calls: the operator's `thinkledger agent` records each
//! step of a run (its start, every model call with the exact exchange, every tool call
//! requested and returned, intents, nudges, the end) as one command of its own in the run's
//! session. CLI only, never offered over MCP (like `erase`).
//!
//! The model call is an effect taken before the writer ([`super::call::model`]): its plan
//! builds the request from the run's conversation *as the ledger holds it* (`projections::agent`)
//! plus the call's tools and sampling, so an answer is accepted only if it answers exactly what
//! the recorded run would have asked (`model_answer_stale` otherwise), and re-execution decides
//! it again from the recorded exchange. The other steps are facts the engine observed (a tool's
//! result, an intent's score) recorded in order: a step out of order or after the run's end is
//! refused and changes nothing.
//!
//! Owns: the steps' arguments, their order, the conversation's wire form. Must not know the
//! engine, the provider client or any other family.

use schemas::{EndArgs, IntentArgs, ModelArgs, ModelFailedArgs, NudgeArgs, StartArgs};
use schemas::{ToolRequestedArgs, ToolReturnedArgs};
use serde_json::{Value, json};

use super::call::model::{ModelStep, ModelTool};
use super::call::{ArgsShape, Call, Decide, PathStep, Refusal, Target, ToolSpec, target};
use super::{App, Command, ErrorCode, Outcome, Rejection};
use crate::events::agent::{
    AgentBreakerTripped, AgentIntentDetected, AgentModelFailed, AgentModelRequested,
    AgentModelResponded, AgentNudged, AgentRunEnded, AgentRunStarted, AgentToolRequested,
    AgentToolReturned,
};
use crate::events::{Fact, SessionId, TextRef, TokenUsage};
use crate::model::{
    ChatOutcome, ChatRequest, FunctionCall, Message, Role, ToolCall, ToolDefinition,
};
use crate::projections::agent::{AgentRun, RunText, Turn};

/// A run begins (its own new session).
pub const AGENT_START_TOOL: &str = "agent_start";
/// The model was asked and answered (the answer is the call's recorded model effect).
pub const AGENT_MODEL_TOOL: &str = "agent_model";
/// The model could not be asked or did not answer.
pub const AGENT_MODEL_FAILED_TOOL: &str = "agent_model_failed";
/// A tool call is about to run.
pub const AGENT_TOOL_REQUESTED_TOOL: &str = "agent_tool_requested";
/// A tool call ended.
pub const AGENT_TOOL_RETURNED_TOOL: &str = "agent_tool_returned";
/// An answer's intent was read.
pub const AGENT_INTENT_TOOL: &str = "agent_intent";
/// The model was nudged to act.
pub const AGENT_NUDGE_TOOL: &str = "agent_nudge";
/// The run ended.
pub const AGENT_END_TOOL: &str = "agent_end";

/// The run's steps: the operator's commands (CLI only).
pub(crate) const ADMIN_SPECS: &[ToolSpec] = &[
    ToolSpec {
        name: AGENT_START_TOOL,
        args: ArgsShape::of::<schemas::StartArgs>,
        decide: Decide::InContext(decide_start),
    },
    ToolSpec {
        name: AGENT_MODEL_TOOL,
        args: ArgsShape::of::<schemas::ModelArgs>,
        decide: Decide::WithModel(ModelTool {
            plan: plan_model,
            decide: decide_model,
        }),
    },
    ToolSpec {
        name: AGENT_MODEL_FAILED_TOOL,
        args: ArgsShape::of::<schemas::ModelFailedArgs>,
        decide: Decide::InContext(decide_model_failed),
    },
    ToolSpec {
        name: AGENT_TOOL_REQUESTED_TOOL,
        args: ArgsShape::of::<schemas::ToolRequestedArgs>,
        decide: Decide::InContext(decide_tool_requested),
    },
    ToolSpec {
        name: AGENT_TOOL_RETURNED_TOOL,
        args: ArgsShape::of::<schemas::ToolReturnedArgs>,
        decide: Decide::InContext(decide_tool_returned),
    },
    ToolSpec {
        name: AGENT_INTENT_TOOL,
        args: ArgsShape::of::<schemas::IntentArgs>,
        decide: Decide::InContext(decide_intent),
    },
    ToolSpec {
        name: AGENT_NUDGE_TOOL,
        args: ArgsShape::of::<schemas::NudgeArgs>,
        decide: Decide::InContext(decide_nudge),
    },
    ToolSpec {
        name: AGENT_END_TOOL,
        args: ArgsShape::of::<schemas::EndArgs>,
        decide: Decide::InContext(decide_end),
    },
];

/// The arguments of each step. Text fields are read only to check they are strings: the
/// decision records their committed form, never the value.
#[allow(dead_code)]
mod schemas {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::Value;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct StartArgs {
        #[schemars(extend("x-text" = true))]
        pub history: String,
        pub tools: Vec<String>,
        pub max_iterations: u32,
        pub breaker_threshold: u32,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ModelArgs {
        pub session_id: String,
        pub iteration: u32,
        #[serde(default)]
        pub tools: Vec<Value>,
        #[serde(default)]
        pub model: Option<String>,
        #[serde(default)]
        pub temperature: Option<f64>,
        #[serde(default)]
        pub max_tokens: Option<u32>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ModelFailedArgs {
        pub session_id: String,
        pub iteration: u32,
        #[schemars(extend("x-text" = true))]
        pub error: String,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ToolRequestedArgs {
        pub session_id: String,
        pub iteration: u32,
        pub call_id: String,
        pub tool: String,
        #[schemars(extend("x-text" = true))]
        pub arguments: String,
        #[serde(default)]
        pub initial: bool,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct ToolReturnedArgs {
        pub session_id: String,
        pub iteration: u32,
        pub call_id: String,
        pub tool: String,
        pub status: String,
        #[serde(default)]
        pub error_code: Option<String>,
        #[schemars(extend("x-text" = true))]
        pub result: String,
        pub attempts: u32,
        pub elapsed_ms: u64,
        #[serde(default)]
        pub tool_seq: Option<u64>,
        #[serde(default)]
        pub tripped: Option<u32>,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct IntentArgs {
        pub session_id: String,
        pub iteration: u32,
        pub intent: String,
        pub score: f64,
        #[serde(default)]
        pub matched: Option<String>,
        pub method: String,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct NudgeArgs {
        pub session_id: String,
        pub iteration: u32,
        #[schemars(extend("x-text" = true))]
        pub message: String,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    pub struct EndArgs {
        pub session_id: String,
        pub status: String,
        #[serde(default)]
        #[schemars(extend("x-text" = true))]
        pub answer: Option<String>,
        #[schemars(extend("x-text" = true))]
        pub reason: String,
    }
}

const USAGE: &str = "the agent's steps are recorded by `thinkledger agent`; they are not typed \
                     by hand";

/// The statuses a run may end with.
const STATUSES: &[&str] = &[
    "completed",
    "max_iterations",
    "budget_exhausted",
    "failed",
    "stopped_by_breaker",
    "needs_input",
];

/// The intents an answer may be read as.
const INTENTS: &[&str] = &[
    "provides_final_answer",
    "provides_plan_without_explicit_action",
    "asks_clarifying_question",
    "general_conversation",
    "ambiguous",
];

fn refuse(code: ErrorCode, message: impl Into<String>, suggestion: &str) -> Refusal {
    (Rejection::new(code, message, suggestion), None)
}

fn parse<T: serde::de::DeserializeOwned>(command: &Command) -> Result<T, Refusal> {
    let args = match &command.arguments {
        Value::Null => json!({}),
        other => other.clone(),
    };
    super::call::parse(&args, USAGE).map_err(|r| (r, None))
}

/// The run of session `raw`, owned by the caller and still going.
fn open_run<'a>(
    app: &'a App,
    command: &Command,
    raw: &str,
) -> Result<(SessionId, &'a AgentRun), Refusal> {
    let session = match target(app, command, Some(raw))? {
        Target::Existing(s) => s.id.clone(),
        Target::New(id) => id,
    };
    let run = app.agent().run(&session).ok_or_else(|| {
        refuse(
            ErrorCode::AgentRunUnknown,
            format!("session {session} holds no agent run"),
            "start a run with `thinkledger agent \"TASK\"`",
        )
    })?;
    if let Some(end) = &run.end {
        return Err(refuse(
            ErrorCode::AgentRunEnded,
            format!(
                "the run of session {session} already ended ({})",
                end.status
            ),
            "start a new run; an ended run is not continued",
        ));
    }
    Ok((session, run))
}

fn out_of_order(message: String) -> Refusal {
    refuse(
        ErrorCode::AgentStepOutOfOrder,
        message,
        "resume the run with `thinkledger agent --resume SESSION`, which goes on from its \
         recorded steps",
    )
}

/// The chat messages of a run's conversation, as the model is sent them; `Err` names a part
/// that cannot be read (erased, or not a message).
pub fn conversation_messages(run: &AgentRun) -> Result<Vec<Message>, String> {
    let text = |t: &RunText| -> Result<String, String> {
        t.text
            .as_deref()
            .map(str::to_owned)
            .ok_or_else(|| format!("text {} of the conversation is erased", t.commitment))
    };
    let mut messages = Vec::new();
    for turn in &run.conversation {
        match turn {
            Turn::Start { messages: m } => {
                let parsed: Vec<Message> = serde_json::from_str(&text(m)?)
                    .map_err(|e| format!("the run's first messages do not parse: {e}"))?;
                messages.extend(parsed);
            }
            Turn::Answer { message } => messages.push(
                serde_json::from_str(&text(message)?)
                    .map_err(|e| format!("an answer of the run does not parse: {e}"))?,
            ),
            Turn::InitialCall {
                call_id,
                tool,
                arguments,
            } => messages.push(Message {
                role: Role::Assistant,
                content: None,
                tool_calls: vec![ToolCall {
                    id: call_id.clone(),
                    kind: "function".to_owned(),
                    function: FunctionCall {
                        name: tool.clone(),
                        arguments: text(arguments)?,
                    },
                }],
                tool_call_id: None,
            }),
            Turn::ToolResult { call_id, result } => {
                messages.push(Message::tool_result(call_id, &text(result)?));
            }
            Turn::Nudge { message } => messages.push(Message::user(&text(message)?)),
        }
    }
    Ok(messages)
}

/// The model's answer as the assistant turn of the conversation.
pub fn answer_message(answer: &ChatOutcome) -> Message {
    let text = answer.text();
    Message {
        role: Role::Assistant,
        // An answer that only calls tools has no content (as the engine sends it back).
        content: (!text.is_empty() || answer.exchange.tool_calls.is_empty())
            .then(|| text.to_owned()),
        tool_calls: answer.exchange.tool_calls.clone(),
        tool_call_id: None,
    }
}

fn decide_start(call: &mut Call<'_>) -> Outcome {
    let args: StartArgs = parse(call.command)?;
    let messages: Vec<Message> = serde_json::from_str(&args.history).map_err(|e| {
        refuse(
            ErrorCode::InvalidArguments,
            format!("history is not a JSON array of chat messages: {e}"),
            USAGE,
        )
    })?;
    if !messages.iter().any(|m| m.role == Role::User) {
        return Err(refuse(
            ErrorCode::InvalidArguments,
            "a run starts from a conversation with a message from the person",
            "give the task as the run's message",
        ));
    }
    if args.max_iterations == 0 || args.breaker_threshold == 0 {
        return Err(refuse(
            ErrorCode::InvalidArguments,
            "maxIterations and breakerThreshold must be at least 1",
            "pass --max-iterations 1 or more",
        ));
    }
    let session = match target(call.app, call.command, None)? {
        Target::New(id) => Target::New(id),
        Target::Existing(s) => {
            return Err(refuse(
                ErrorCode::InvalidArguments,
                format!(
                    "session {} already exists; a run starts its own session",
                    s.id
                ),
                "start the run from a fresh session",
            ));
        }
    };
    let history = call
        .recorded_ref(&[PathStep::Key("history")])
        .ok_or_else(|| {
            refuse(
                ErrorCode::InvalidArguments,
                "history was not recorded",
                USAGE,
            )
        })?;
    let mut facts = session.start_facts();
    facts.push(Fact::AgentRunStarted(AgentRunStarted {
        history,
        tools: args.tools,
        max_iterations: args.max_iterations,
        breaker_threshold: args.breaker_threshold,
    }));
    let id = session.id();
    call.done(
        Some(id.clone()),
        facts,
        json!({ "sessionId": id, "status": "running" }),
    )
}

fn model_request(run: &AgentRun, args: &ModelArgs) -> Result<ChatRequest, Refusal> {
    let messages = conversation_messages(run).map_err(|reason| {
        refuse(
            ErrorCode::AgentRunUnreadable,
            format!("the run's conversation cannot be rebuilt: {reason}"),
            "an erased run cannot be continued; start a new one",
        )
    })?;
    let tools = args
        .tools
        .iter()
        .map(|t| serde_json::from_value::<ToolDefinition>(t.clone()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            refuse(
                ErrorCode::InvalidArguments,
                format!("tools are not tool definitions: {e}"),
                USAGE,
            )
        })?;
    let mut request = ChatRequest::new(messages);
    request.model = args.model.clone().filter(|m| !m.trim().is_empty());
    request.temperature = args.temperature;
    request.max_tokens = args.max_tokens;
    request.tools = tools;
    Ok(request)
}

/// The model call a step asks for: the run's conversation as recorded, its tools and sampling.
fn plan_model(app: &App, command: &Command) -> Result<Option<ModelStep>, Refusal> {
    let args: ModelArgs = parse(command)?;
    let (_, run) = open_run(app, command, &args.session_id)?;
    if args.iteration != run.iterations + 1 {
        return Err(out_of_order(format!(
            "model call {} of a run that made {}",
            args.iteration, run.iterations
        )));
    }
    if args.iteration > run.max_iterations {
        return Err(out_of_order(format!(
            "model call {} of a run bounded to {}",
            args.iteration, run.max_iterations
        )));
    }
    if !command.prepared.model.answers.is_empty() {
        return Ok(None);
    }
    Ok(Some(ModelStep::Chat(model_request(run, &args)?)))
}

fn decide_model(call: &mut Call<'_>) -> Outcome {
    let args: ModelArgs = parse(call.command)?;
    let (session, run) = open_run(call.app, call.command, &args.session_id)?;
    let messages = u32::try_from(model_request(run, &args)?.messages.len()).unwrap_or(u32::MAX);
    let answer = call
        .model_answers()
        .first()
        .cloned()
        .ok_or_else(|| refuse(ErrorCode::InvalidArguments, "no model answer", USAGE))?;
    let message = answer_message(&answer);
    let text = serde_json::to_string(&message).unwrap_or_default();
    let response = call.derive_text(&text);
    let model = answer
        .exchange
        .model_reported
        .clone()
        .unwrap_or_else(|| answer.exchange.model_requested.clone());
    let facts = vec![
        Fact::AgentModelRequested(AgentModelRequested {
            iteration: args.iteration,
            messages,
        }),
        Fact::AgentModelResponded(AgentModelResponded {
            iteration: args.iteration,
            response,
            model: model.clone(),
            tool_calls: message
                .tool_calls
                .iter()
                .map(|c| c.function.name.clone())
                .collect(),
            finish_reason: answer.exchange.finish_reason.clone(),
            usage: answer.exchange.usage.map(|u| TokenUsage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
                total_tokens: u.total_tokens,
            }),
        }),
    ];
    call.done(
        Some(session.clone()),
        facts,
        json!({ "sessionId": session, "iteration": args.iteration, "model": model }),
    )
}

fn step(call: &mut Call<'_>, session: SessionId, facts: Vec<Fact>) -> Outcome {
    call.done(
        Some(session.clone()),
        facts,
        json!({ "sessionId": session }),
    )
}

fn text_ref(call: &Call<'_>, field: &'static str) -> Result<TextRef, Refusal> {
    call.recorded_ref(&[PathStep::Key(field)]).ok_or_else(|| {
        refuse(
            ErrorCode::InvalidArguments,
            format!("{field} was not recorded as a text"),
            USAGE,
        )
    })
}

/// The iteration a step other than a model call belongs to: the run's current one.
fn current(run: &AgentRun, iteration: u32) -> Result<(), Refusal> {
    if iteration == run.iterations {
        Ok(())
    } else {
        Err(out_of_order(format!(
            "a step of model call {iteration} in a run at model call {}",
            run.iterations
        )))
    }
}

fn decide_model_failed(call: &mut Call<'_>) -> Outcome {
    let args: ModelFailedArgs = parse(call.command)?;
    let (session, run) = open_run(call.app, call.command, &args.session_id)?;
    if args.iteration != run.iterations + 1 {
        return Err(out_of_order(format!(
            "model call {} failed in a run that made {}",
            args.iteration, run.iterations
        )));
    }
    let error = text_ref(call, "error")?;
    let fact = Fact::AgentModelFailed(AgentModelFailed {
        iteration: args.iteration,
        error,
    });
    step(call, session, vec![fact])
}

fn decide_tool_requested(call: &mut Call<'_>) -> Outcome {
    let args: ToolRequestedArgs = parse(call.command)?;
    let (session, run) = open_run(call.app, call.command, &args.session_id)?;
    current(run, args.iteration)?;
    if run.open_calls.iter().any(|(id, _)| id == &args.call_id) {
        return Err(out_of_order(format!(
            "call {} is already open",
            args.call_id
        )));
    }
    let arguments = text_ref(call, "arguments")?;
    let fact = Fact::AgentToolRequested(AgentToolRequested {
        iteration: args.iteration,
        call_id: args.call_id,
        tool: args.tool,
        arguments,
        initial: args.initial,
    });
    step(call, session, vec![fact])
}

fn decide_tool_returned(call: &mut Call<'_>) -> Outcome {
    let args: ToolReturnedArgs = parse(call.command)?;
    let (session, run) = open_run(call.app, call.command, &args.session_id)?;
    current(run, args.iteration)?;
    if !run
        .open_calls
        .iter()
        .any(|(id, tool)| id == &args.call_id && tool == &args.tool)
    {
        return Err(out_of_order(format!(
            "{} call {} returned without being requested",
            args.tool, args.call_id
        )));
    }
    let failed = match args.status.as_str() {
        "succeeded" => false,
        "failed" => true,
        other => {
            return Err(refuse(
                ErrorCode::InvalidArguments,
                format!("status {other} is neither succeeded nor failed"),
                USAGE,
            ));
        }
    };
    if failed != args.error_code.is_some() {
        return Err(refuse(
            ErrorCode::InvalidArguments,
            "a failed call has an error code and a successful one none",
            USAGE,
        ));
    }
    let result = text_ref(call, "result")?;
    let mut facts = vec![Fact::AgentToolReturned(AgentToolReturned {
        iteration: args.iteration,
        call_id: args.call_id,
        tool: args.tool.clone(),
        status: args.status,
        error_code: args.error_code.clone(),
        result,
        attempts: args.attempts,
        elapsed_ms: args.elapsed_ms,
        tool_seq: args.tool_seq,
    })];
    if let (Some(failures), Some(code)) = (args.tripped, args.error_code) {
        facts.push(Fact::AgentBreakerTripped(AgentBreakerTripped {
            iteration: args.iteration,
            tool: args.tool,
            error_code: code,
            failures,
        }));
    }
    step(call, session, facts)
}

fn decide_intent(call: &mut Call<'_>) -> Outcome {
    let args: IntentArgs = parse(call.command)?;
    let (session, run) = open_run(call.app, call.command, &args.session_id)?;
    current(run, args.iteration)?;
    if !INTENTS.contains(&args.intent.as_str()) || !args.score.is_finite() {
        return Err(refuse(
            ErrorCode::InvalidArguments,
            format!(
                "intent {} (score {}) is not one the engine reads",
                args.intent, args.score
            ),
            USAGE,
        ));
    }
    let fact = Fact::AgentIntentDetected(AgentIntentDetected {
        iteration: args.iteration,
        intent: args.intent,
        score: args.score,
        matched: args.matched,
        method: args.method,
    });
    step(call, session, vec![fact])
}

fn decide_nudge(call: &mut Call<'_>) -> Outcome {
    let args: NudgeArgs = parse(call.command)?;
    let (session, run) = open_run(call.app, call.command, &args.session_id)?;
    current(run, args.iteration)?;
    let message = text_ref(call, "message")?;
    let fact = Fact::AgentNudged(AgentNudged {
        iteration: args.iteration,
        message,
    });
    step(call, session, vec![fact])
}

fn decide_end(call: &mut Call<'_>) -> Outcome {
    let args: EndArgs = parse(call.command)?;
    let (session, run) = open_run(call.app, call.command, &args.session_id)?;
    if !STATUSES.contains(&args.status.as_str()) {
        return Err(refuse(
            ErrorCode::InvalidArguments,
            format!("status {} is not a run's end", args.status),
            USAGE,
        ));
    }
    let (iterations, tokens) = (run.iterations, run.tokens);
    let answer = match args.answer {
        Some(_) => Some(text_ref(call, "answer")?),
        None => None,
    };
    let reason = text_ref(call, "reason")?;
    let fact = Fact::AgentRunEnded(AgentRunEnded {
        status: args.status.clone(),
        iterations,
        answer,
        reason,
        tokens,
    });
    call.done(
        Some(session.clone()),
        vec![fact],
        json!({ "sessionId": session, "status": args.status, "iterations": iterations }),
    )
}
