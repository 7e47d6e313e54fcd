//! How the application decides one call on the writer: the arguments checked and recorded
//! (texts committed), the tool resolved, refusals for what no tool decides (undecodable params,
//! size, a disabled or unknown tool, quota, a read-only role, a text over the limit), then the
//! tool's own decision; the event's draft built around it with the effects the call took.
//!
//! Owns the order of those refusals and the draft; knows no family (each tool is reached
//! through its [`call::ToolSpec`]).

use serde_json::{Map, Value, json};

use super::call::{self, ArgsShape, ToolSpec};
use super::{
    App, Command, ErrorCode, Outcome, RANDOMNESS_UNAVAILABLE, Rejection, TOOL_FAMILIES, TextPolicy,
    UNDECODABLE_CALL, draws, idempotency, providers, registry, rejection_body,
};
use crate::events::{
    Call, ErrorRecord, OutcomeStatus, Provenance, RecordedEffects, RecordedEmbedding,
    RecordedModelCall, SessionId,
};
use crate::ledger::canonical::canonical_bytes;
use crate::ledger::{Decider, Draft, LogView, NewText};

impl App {
    pub(super) fn policy<'d>(&self, draws: &'d draws::Draws) -> TextPolicy<'d> {
        TextPolicy {
            max_text_bytes: self.config.max_text_bytes,
            draws,
        }
    }

    /// The effects the call took that a re-execution must be given back: its vector, committed
    /// as an erasable text (a vector is derived from the text it embeds).
    fn record_effects(
        &self,
        command: &Command,
        draws: &draws::Draws,
        texts: &mut Vec<NewText>,
    ) -> Option<RecordedEffects> {
        let embedding = match &command.prepared.embedding {
            Some(Ok(embedding)) => {
                let (vector, new) = self.policy(draws).commit(&embedding.to_base64());
                texts.push(new);
                Some(RecordedEmbedding {
                    model: embedding.model().to_owned(),
                    dimension: u32::try_from(embedding.dimension()).unwrap_or(u32::MAX),
                    vector,
                })
            }
            _ => None,
        };
        let model_calls: Vec<RecordedModelCall> = command
            .prepared
            .model
            .answers
            .iter()
            .map(|answer| call::model::record(&self.policy(draws), answer, texts))
            .collect();
        (embedding.is_some() || !model_calls.is_empty()).then_some(RecordedEffects {
            embedding,
            model_calls,
        })
    }

    /// Whether `command`'s tool is held to the tool time limit: the tools decided `InContext`
    /// (the deliberation tools), when the call reaches them.
    pub(super) fn time_limited(command: &Command) -> bool {
        let spec = if command.admin {
            registry::admin_spec(&command.tool)
        } else {
            registry::spec(&command.tool).filter(|_| command.tool_enabled)
        };
        spec.is_some_and(|spec| {
            matches!(
                spec.decide,
                call::Decide::InContext(_) | call::Decide::WithModel(_)
            )
        })
    }

    /// The decision time: the `recordedAt` the event will carry (the writer's stamp, or the
    /// recorded one in a re-execution), else the time the call was prepared. Never the clock.
    pub(super) fn decided_at(command: &Command, log: &dyn LogView) -> String {
        log.decided_at().map_or_else(
            || crate::ledger::format_timestamp(command.prepared.at),
            str::to_owned,
        )
    }

    /// Decides `command`; with `slow` (the session the too-slow decision acted on), refuses a
    /// time-limited tool with `time_limit_exceeded` instead of deciding it again.
    pub(super) fn decide_within(
        &self,
        command: &Command,
        log: &dyn LogView,
        slow: Option<Option<SessionId>>,
    ) -> Draft {
        let seed = match &command.prepared.seed {
            Ok(seed) => seed,
            Err(reason) => return Self::without_randomness(command, reason),
        };
        let draws = draws::Draws::new(seed);
        let mut texts = Vec::new();
        let (recorded, mut outcome) = self.decide_call(command, log, &draws, slow, &mut texts);
        if let Some(key) = &command.idempotency_key {
            match self.idempotency.check(
                &command.actor.principal,
                key,
                &command.tool,
                &recorded,
                &texts,
                log,
            ) {
                idempotency::Check::New => {}
                idempotency::Check::Repeat(committed) => {
                    return Draft {
                        replay_of: Some(committed),
                        ..self.failed(command, "not recorded: a repeat")
                    };
                }
                idempotency::Check::Refused(rejection) => outcome = Err((rejection, None)),
            }
        }
        let (status, error, body, session_id, facts) = match outcome {
            Ok(decided) => {
                texts.extend(decided.texts);
                (
                    OutcomeStatus::Ok,
                    None,
                    decided.body,
                    decided.session_id,
                    decided.facts,
                )
            }
            Err((rejection, session_id)) => (
                OutcomeStatus::Rejected,
                Some(ErrorRecord {
                    code: rejection.code.as_str().to_owned(),
                    message: rejection.message.clone(),
                    suggestion: rejection.suggestion.clone(),
                }),
                rejection_body(&rejection),
                session_id.or_else(|| command.refused_in.clone()),
                Vec::new(),
            ),
        };
        // With an idempotency key the body itself is kept (as erasable text), so that a retry
        // is answered with exactly what the first call was.
        let response_ref = command.idempotency_key.as_ref().and_then(|_| {
            let canonical = canonical_bytes(&body).ok()?;
            let text = String::from_utf8(canonical).ok()?;
            let (text_ref, new) = self.policy(&draws).commit(&text);
            texts.push(new);
            Some(text_ref)
        });
        let effects = self.record_effects(command, &draws, &mut texts);
        Draft {
            session_id,
            actor: command.actor.clone(),
            call: Call {
                tool: command.tool.clone(),
                arguments: recorded,
                idempotency_key: command.idempotency_key.clone(),
                effects,
            },
            facts,
            status,
            error,
            body,
            provenance: Provenance::rules("thinkledger.thinking"),
            texts,
            response_ref,
            replay_of: None,
            trace: command.trace.clone(),
        }
    }

    /// The refusal of a call prepared without randomness: nothing can be committed without a
    /// fresh salt, so the arguments are not recorded (`{"omitted": {"reason":
    /// "randomness_unavailable"}}`), nor is the idempotency key (the retry must be decided), and
    /// nothing changes. Never a weaker commitment.
    fn without_randomness(command: &Command, reason: &str) -> Draft {
        let rejection = Rejection::new(
            ErrorCode::RandomnessUnavailable,
            format!(
                "thinkledger could not draw the random salt this call needs ({reason}); the \
                 call was not decided, its arguments were not recorded and nothing changed"
            ),
            "retry the call (with the same idempotency key, if it had one: the key was not \
             used); if this persists, check the operating system's random source \
             on the server",
        );
        Draft {
            session_id: None,
            actor: command.actor.clone(),
            call: Call {
                tool: command.tool.clone(),
                arguments: json!({ "omitted": { "reason": RANDOMNESS_UNAVAILABLE } }),
                idempotency_key: None,
                effects: None,
            },
            facts: Vec::new(),
            status: OutcomeStatus::Rejected,
            error: Some(ErrorRecord {
                code: rejection.code.as_str().to_owned(),
                message: rejection.message.clone(),
                suggestion: rejection.suggestion.clone(),
            }),
            body: rejection_body(&rejection),
            provenance: Provenance::rules("thinkledger.thinking"),
            texts: Vec::new(),
            response_ref: None,
            replay_of: None,
            trace: command.trace.clone(),
        }
    }

    /// Records the arguments (text committed, never inline) and decides the call: the
    /// arguments an object within the size limit, the tool one the caller may call, the
    /// arguments recorded (or the call refused for quota, role or text size), then the tool's
    /// decision.
    fn decide_call(
        &self,
        command: &Command,
        log: &dyn LogView,
        draws: &draws::Draws,
        slow: Option<Option<SessionId>>,
        texts: &mut Vec<NewText>,
    ) -> (Value, Outcome) {
        let policy = self.policy(draws);
        let args = match self.arguments_of(command, &policy, texts) {
            Ok(args) => args,
            Err(refused) => return Self::refused(*refused),
        };
        let spec = match Self::spec_of(command, &policy, texts) {
            Ok(spec) => spec,
            Err(refused) => return Self::refused(*refused),
        };
        let shape = registry::shape(spec);
        let recorded = match self.record_or_refuse(command, shape, &args, &policy, texts) {
            Ok(recorded) => recorded,
            Err(refused) => return Self::refused(*refused),
        };
        let deciding = Deciding {
            app: self,
            command,
            log,
            draws,
            slow,
            shape,
            sent: Value::Object(args),
            recorded,
        };
        let outcome = deciding.decide(spec.decide);
        match outcome {
            Ok(decided) => (deciding.recorded, Ok(decided)),
            Err(err) => {
                // A call that did not parse may hold anything in any field: keep it erasable.
                let recorded = if err.0.code == ErrorCode::InvalidArguments {
                    texts.clear();
                    policy.opaque(&command.arguments.to_string(), texts)
                } else {
                    deciding.recorded
                };
                (recorded, Err(err))
            }
        }
    }

    /// A refusal before the tool decided, as `decide_call` answers it.
    fn refused((recorded, refusal): (Value, call::Refusal)) -> (Value, Outcome) {
        (recorded, Err(refusal))
    }

    /// The call's arguments as an object, or its refusal: undecodable params, arguments that
    /// are not an object, or more bytes than accepted.
    fn arguments_of(
        &self,
        command: &Command,
        policy: &TextPolicy<'_>,
        texts: &mut Vec<NewText>,
    ) -> Result<Map<String, Value>, Refused> {
        if command.tool == UNDECODABLE_CALL {
            let recorded = policy.opaque(&command.arguments.to_string(), texts);
            let rejection = Rejection::new(
                ErrorCode::InvalidParams,
                "the tools/call params could not be decoded",
                "send {\"name\": \"<tool>\", \"arguments\": {...}} with a string name and an object",
            );
            return Err(Box::new((recorded, (rejection, None))));
        }
        let args = match &command.arguments {
            Value::Null => Map::new(),
            Value::Object(map) => map.clone(),
            other => {
                let recorded = policy.opaque(&other.to_string(), texts);
                let rejection = Rejection::new(
                    ErrorCode::InvalidArguments,
                    "arguments must be a JSON object",
                    "send the tool's parameters as an object, e.g. {\"thought\": \"...\", ...}",
                );
                return Err(Box::new((recorded, (rejection, None))));
            }
        };
        let raw_len = command.arguments.to_string().len();
        if raw_len > self.config.max_arguments_bytes() {
            let recorded = json!({ "omitted": { "reason": "too_large", "bytes": raw_len } });
            let rejection = Rejection::new(
                ErrorCode::ArgumentsTooLarge,
                format!(
                    "the arguments are {raw_len} bytes; at most {} are accepted",
                    self.config.max_arguments_bytes()
                ),
                "split the content over several calls",
            );
            return Err(Box::new((recorded, (rejection, None))));
        }
        Ok(args)
    }

    /// The spec of the call's tool, or its refusal: a tool of a toolset the caller has not
    /// enabled, or no such tool (the operator's commands only from the operator).
    fn spec_of(
        command: &Command,
        policy: &TextPolicy<'_>,
        texts: &mut Vec<NewText>,
    ) -> Result<&'static ToolSpec, Refused> {
        let spec = if command.admin {
            registry::admin_spec(&command.tool)
        } else {
            registry::spec(&command.tool).filter(|_| command.tool_enabled)
        };
        if spec.is_none() && registry::spec(&command.tool).is_some() {
            let recorded = policy.opaque(&command.arguments.to_string(), texts);
            let family = registry::toolset_of(&command.tool).unwrap_or("all");
            let rejection = Rejection::new(
                ErrorCode::ToolDisabled,
                format!(
                    "the tool \"{}\" is in the toolset \"{family}\", which is not enabled",
                    command.tool
                ),
                format!(
                    "call enable_toolset with {{\"toolset\": \"{family}\"}}, then call {} \
                     again (list_toolsets shows every set)",
                    command.tool
                ),
            );
            return Err(Box::new((recorded, (rejection, None))));
        }
        spec.ok_or_else(|| {
            let recorded = policy.opaque(&command.arguments.to_string(), texts);
            let known: Vec<&str> = TOOL_FAMILIES
                .iter()
                .flat_map(|(_, t)| t.iter().copied())
                .collect();
            let rejection = Rejection::new(
                ErrorCode::UnknownTool,
                format!("there is no tool named \"{}\"", command.tool),
                format!("call one of: {}", known.join(", ")),
            );
            Box::new((recorded, (rejection, None)))
        })
    }

    /// The arguments as the event records them (`shape`), or the call's refusal with them: over
    /// the caller's quota, an auditor calling a tool that changes something, or a text over the
    /// limit (recorded without it).
    fn record_or_refuse(
        &self,
        command: &Command,
        shape: &ArgsShape,
        args: &Map<String, Value>,
        policy: &TextPolicy<'_>,
        texts: &mut Vec<NewText>,
    ) -> Result<Value, Refused> {
        let recorded = policy.record(args, shape, texts);
        if let Some(over) = &command.prepared.over_quota {
            let recorded =
                recorded.unwrap_or_else(|_| policy.record_without_texts(args, shape, texts));
            let rejection = Rejection::new(
                ErrorCode::QuotaExceeded,
                over.message.clone(),
                over.suggestion.clone(),
            );
            // Shown in the caller's current session's timeline, when it has one.
            let session = call::owned_session(self, command, &command.connection_session)
                .map(|s| s.id.clone());
            return Err(Box::new((recorded, (rejection, session))));
        }
        if call::access::is_auditor(&command.actor) && !registry::auditor_may_call(&command.tool) {
            let recorded =
                recorded.unwrap_or_else(|_| policy.record_without_texts(args, shape, texts));
            let rejection = Rejection::new(
                ErrorCode::ReadOnlyRole,
                format!(
                    "{} is an auditor: it reads every session and memory and changes none, so \
                     it may not call {}",
                    command.actor.principal, command.tool
                ),
                format!(
                    "an auditor may call {}; use a member's token to make changes",
                    registry::AUDITOR_TOOLS.join(", ")
                ),
            );
            return Err(Box::new((recorded, (rejection, None))));
        }
        recorded.map_err(|oversized| {
            let recorded = policy.record_without_texts(args, shape, texts);
            let rejection = Rejection::new(
                ErrorCode::TextTooLarge,
                format!(
                    "`{}` is {} bytes; at most {} are accepted",
                    oversized.field, oversized.bytes, self.config.max_text_bytes
                ),
                "split the text over several calls, or raise the limit with --max-text-bytes",
            );
            Box::new((recorded, (rejection, None)))
        })
    }
}

/// A call refused before its tool decided it: the arguments as recorded, and the refusal.
type Refused = Box<(Value, call::Refusal)>;

/// One call whose arguments are recorded, on its way to its tool's decision.
struct Deciding<'a> {
    app: &'a App,
    command: &'a Command,
    log: &'a dyn LogView,
    draws: &'a draws::Draws,
    /// The session a decision measured over the tool time limit acted on (`Decider::over_time`).
    slow: Option<Option<SessionId>>,
    shape: &'static ArgsShape,
    sent: Value,
    recorded: Value,
}

impl Deciding<'_> {
    /// The tool's decision, as its spec says it is decided.
    fn decide(&self, how: call::Decide) -> Outcome {
        let (app, command) = (self.app, self.command);
        match how {
            call::Decide::Pure(decide) => decide(app, command, &self.sent, &self.recorded),
            call::Decide::WithLog(decide) => {
                decide(app, command, self.log, &self.sent, &self.recorded)
            }
            call::Decide::InContext(decide) => self.in_context(None, decide),
            call::Decide::WithModel(tool) => self.in_context(Some(tool.plan), tool.decide),
        }
    }

    /// A tool decided at the decision time, with a model plan or without: refused when the
    /// writer measured it over the time limit, or when it asks for a provider it cannot use.
    fn in_context(
        &self,
        plan: Option<call::model::Plan>,
        decide: fn(&mut call::Call<'_>) -> Outcome,
    ) -> Outcome {
        let (app, command) = (self.app, self.command);
        if let Some(session) = self.slow.clone() {
            let limit = app.config.tool_time_limit;
            return Err((
                Rejection::new(
                    ErrorCode::TimeLimitExceeded,
                    format!(
                        "{} took longer than its time limit of {} ms; nothing was recorded",
                        command.tool,
                        limit.as_millis()
                    ),
                    "ask for less in one call (fewer nodes, claims or expansions), or \
                     restart thinkledger with a larger --tool-time-limit-ms",
                ),
                session,
            ));
        }
        let at = App::decided_at(command, self.log);
        let mut call = call::Call::new(app, command, &at, self.draws, &self.sent, &self.recorded);
        // A tool that takes a `provider` refuses one it cannot use before anything else:
        // `model_backed` only a tool with a model plan can use.
        if self.shape.records("provider") {
            providers::requested(&self.sent, plan.is_some()).map_err(|r| (r, None))?;
        }
        if let Some(plan) = plan {
            call::model::check(app, command, plan)?;
        }
        decide(&mut call)
    }
}
