//! The MCP face of the application: tool definitions (names, schemas, annotations), resources,
//! and the rmcp `ServerHandler` that turns each `tools/call` into one ledger command.
//!
//! One file per tool family holds its definitions; this module joins them. Arguments are not
//! parsed here: they go to `app` as received, so that even a malformed call is decided — and
//! recorded — by the one place that owns the rules. This layer knows rmcp but not sled, axum or
//! any transport detail beyond the name it records.

mod arrival;
mod audit;
mod catalog;
mod cognition;
pub mod connection;
mod current;
mod deliberation;
mod handler;
mod lux;
mod maxential;
mod memory;
mod origin;
mod prompts;
pub mod quotas;
mod reasoning;
mod rejected;
mod replay;
mod resources;
mod thinking;
mod toolsets;
mod utilities;

use std::sync::Arc;
use std::time::Instant;

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock, ProtocolVersion};
use rmcp::service::{Peer, RequestContext};
use serde_json::{Value, json};

pub use arrival::{Admission, ArrivalHook, ConnectionOrder, Ticket};
pub use catalog::{
    CallerEffect, Catalog, DEFAULT_FAMILIES, FAMILIES, ToolEntry, Toolsets, UnknownToolset,
};
pub use current::{CurrentSessions, LOCAL_PRINCIPAL, Principal, Role, SessionSlot};
pub use origin::{CallOrigin, TRACEPARENT, TRACESTATE};
pub use resources::{session_document, sessions_document, summary};
pub use toolsets::{EnabledToolsets, ToolsetsByPrincipal};
pub use utilities::{ConnectionLevel, Reporter};

use crate::app::call::model::{ModelStep, Plan as ModelPlan};
use crate::app::{App, Command, ErrorCode};
use crate::effects::{Effects, ModelFailure, Prepared, SystemEffects};
use crate::events::{Actor, OutcomeStatus, SessionId, TraceContext};
use crate::ledger::{Admitted, Committed, LedgerError, LedgerHandle};
use quotas::Quotas;

/// How long clients may cache the prompt and resource lists (2026-07-28 `ttlMs`): they are
/// fixed for a server's life and the same for every caller (`cacheScope: public`). The tool
/// list is the caller's own (dynamic toolsets): `ttlMs: 0`, `private`. Resource reads are not
/// cached (rmcp fills `ttlMs: 0`, `private`).
const LIST_TTL_MS: u64 = 60_000;

/// The `_meta` key of a `tools/call` that carries its idempotency key.
pub const IDEMPOTENCY_META_KEY: &str = "idempotencyKey";

/// Instructions sent to clients at initialization: every family beyond the default ones is
/// named, from the catalog's list, so the text cannot fall behind it.
static INSTRUCTIONS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let more: Vec<&str> = FAMILIES
        .iter()
        .copied()
        .filter(|family| !DEFAULT_FAMILIES.contains(family))
        .collect();
    format!(
        "thinkledger records every tool call as a hash-chained event. Use sequentialthinking to \
         think step by step (branches and revisions allowed). Every response names its session \
         handle (sessionId; session_id for deliberation and lux tools): pass it back to continue \
         that session, also after a restart. Without it a call continues your current session. \
         Read ledger://sessions for past sessions. More tools are in toolsets ({}): \
         list_toolsets names them and what each costs, enable_toolset adds a set to your tool \
         list.",
        more.join(", ")
    )
});

/// One MCP connection's handler. Cheap to clone; the ledger is shared by all connections.
#[derive(Clone)]
pub struct ThinkServer {
    ledger: LedgerHandle<App>,
    catalog: Arc<Catalog>,
    /// `stdio` or `http`: recorded in every event's actor.
    transport: &'static str,
    /// This connection's current session, for calls that come over a connection of their own.
    connection_session: SessionSlot,
    /// The principals' current sessions, for calls that come without a connection (stateless
    /// HTTP); shared by every handler of the server.
    current: Arc<CurrentSessions>,
    /// Told when each request is admitted into the ledger's queue (`arrival`).
    arrival: Option<ArrivalHook>,
    /// This connection's last admitted command, which its resource reads wait for.
    connection_order: ConnectionOrder,
    /// The families this connection has enabled (starting as `--toolsets`).
    connection_toolsets: EnabledToolsets,
    /// The principals' enabled families, for calls that come without a connection; shared by
    /// every handler of the server.
    principal_toolsets: Arc<ToolsetsByPrincipal>,
    /// Where each call's effects (time, seed) and the providers report's environment come
    /// from: taken here, on the caller's task, before the call is sent to the writer.
    effects: Arc<dyn Effects>,
    /// The log level this connection's client set (`logging/setLevel`).
    log_level: ConnectionLevel,
    /// Every principal's use of its quotas, shared by the handlers of a server.
    quotas: Arc<Quotas>,
    /// A relayed connection's relay, told of each change of the connection's state.
    state_out: Option<connection::StateOut>,
}

impl ThinkServer {
    pub fn new(ledger: LedgerHandle<App>, catalog: Arc<Catalog>, transport: &'static str) -> Self {
        let connection_toolsets = EnabledToolsets::new(catalog.defaults().clone());
        Self {
            ledger,
            catalog,
            transport,
            connection_session: SessionSlot::fresh(),
            current: Arc::new(CurrentSessions::default()),
            arrival: None,
            connection_order: ConnectionOrder::default(),
            connection_toolsets,
            principal_toolsets: Arc::new(ToolsetsByPrincipal::default()),
            effects: Arc::new(SystemEffects),
            log_level: ConnectionLevel::default(),
            quotas: Arc::new(Quotas::default()),
            state_out: None,
        }
    }

    /// Takes up a relayed connection where `state` left it: its current session, its toolsets
    /// (`None`: as `--toolsets` said) and its log level.
    #[must_use]
    pub fn with_connection_state(self, state: &connection::ConnectionState) -> Self {
        if let Some(id) = state.session.as_deref().and_then(SessionId::parse) {
            self.connection_session.continue_with(id);
        }
        if let Some(id) = state.workspace.as_deref().and_then(SessionId::parse) {
            self.connection_session.continue_workspace(id);
        }
        let server = match &state.toolsets {
            Some(names) => Self {
                connection_toolsets: EnabledToolsets::new(Toolsets::of_names(names)),
                ..self
            },
            None => self,
        };
        if let Some(level) = state.log_level {
            server.log_level.set(level);
        }
        server
    }

    /// Tells `out` of every change of this connection's state (a relayed connection).
    #[must_use]
    pub fn with_state_out(mut self, out: connection::StateOut) -> Self {
        self.state_out = Some(out);
        self
    }

    /// This connection's state now.
    pub fn connection_state(&self) -> connection::ConnectionState {
        connection::ConnectionState {
            session: Some(self.connection_session.current().as_str().to_owned()),
            workspace: self
                .connection_session
                .workspace()
                .map(|id| id.as_str().to_owned()),
            toolsets: Some(self.connection_toolsets.get().families().to_vec()),
            log_level: self.log_level.get(),
        }
    }

    /// Tells the relay, if any, the connection's state when it changed.
    async fn report_state(&self) {
        if let Some(out) = &self.state_out {
            out.report(self.connection_state()).await;
        }
    }

    /// Holds every principal to `quotas` (shared by the handlers of a server).
    #[must_use]
    pub fn with_quotas(mut self, quotas: Arc<Quotas>) -> Self {
        self.quotas = quotas;
        self
    }

    /// Takes every call's effects from `effects` instead of the system (a fixed clock and
    /// seeded randomness in tests).
    #[must_use]
    pub fn with_effects(mut self, effects: Arc<dyn Effects>) -> Self {
        self.effects = effects;
        self
    }

    /// Shares the principals' current sessions with the other handlers of a server.
    #[must_use]
    pub fn with_current_sessions(mut self, current: Arc<CurrentSessions>) -> Self {
        self.current = current;
        self
    }

    /// Shares the principals' enabled toolsets with the other handlers of a server.
    #[must_use]
    pub fn with_principal_toolsets(mut self, toolsets: Arc<ToolsetsByPrincipal>) -> Self {
        self.principal_toolsets = toolsets;
        self
    }

    /// Whether a request stands alone (HTTP without an MCP session): it then belongs to its
    /// principal rather than to a connection.
    fn standalone(context: &RequestContext<RoleServer>) -> bool {
        context
            .extensions
            .get::<http::request::Parts>()
            .is_some_and(|parts| !parts.headers.contains_key("mcp-session-id"))
    }

    /// Whether a request speaks the 2026-07-28 revision (per-request `_meta`, no sessions).
    fn stateless_revision(context: &RequestContext<RoleServer>) -> bool {
        context
            .meta
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
    }

    /// The log level a request's client chose: a 2026-07-28 request's own `_meta` logLevel,
    /// else its connection's (`logging/setLevel`); a request that stands alone in an older
    /// revision has neither.
    #[allow(deprecated)] // MCP logging (see `utilities`)
    fn log_level_of(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Option<rmcp::model::LoggingLevel> {
        if Self::stateless_revision(context) {
            context.meta.log_level()
        } else if Self::standalone(context) {
            None
        } else {
            self.log_level.get()
        }
    }

    /// The toolsets a request's caller has enabled: its connection's, or its principal's.
    fn toolsets(&self, context: &RequestContext<RoleServer>) -> EnabledToolsets {
        if Self::standalone(context) {
            self.principal_toolsets
                .of_principal(&principal(context).name, self.catalog.defaults())
        } else {
            self.connection_toolsets.clone()
        }
    }

    /// The current session a request continues when it names none: its connection's, or, for a
    /// request that stands alone (HTTP without an MCP session), its principal's.
    fn slot(&self, context: &RequestContext<RoleServer>, principal: &str) -> SessionSlot {
        if Self::standalone(context) {
            self.current.of_principal(principal)
        } else {
            self.connection_session.clone()
        }
    }

    /// Whether the session `id` ended with a thought that needed no next one, in the latest
    /// published state (which holds every call this connection was answered).
    async fn concluded(&self, id: &SessionId) -> bool {
        let Ok(view) = self.ledger.view_after(Admitted::default()).await else {
            return false;
        };
        matches!(
            view.state().session(id),
            Ok(Some(session)) if session.thoughts.last().is_some_and(|t| !t.next_thought_needed)
        )
    }

    /// Runs one call through the ledger and shapes the MCP result; tells `peer` when an
    /// accepted `enable_toolset` / `disable_toolset` changed the caller's tool list. A request
    /// of the 2026-07-28 revision passes no peer: that revision's client hears of the change on
    /// its `subscriptions/listen` stream (see [`ServerHandler::listen`]), and only there.
    pub async fn call(&self, call: Call, peer: Option<&Peer<RoleServer>>) -> CallToolResult {
        let Call {
            tool,
            arguments,
            actor,
            slot,
            toolsets,
            idempotency_key,
            reporter,
            origin,
        } = call;
        let started = Instant::now();
        let tool = tool.as_str();
        let principal_name = actor.principal.clone();
        let enabled = toolsets.get();
        let effect = self
            .catalog
            .entry(tool)
            .map_or(CallerEffect::None, |entry| entry.caller);
        // Prepare: every effect the call needs, taken before it reaches the writer.
        let prepared = match effect {
            CallerEffect::Embeds(field) => {
                let text = arguments
                    .get(field)
                    .and_then(Value::as_str)
                    .filter(|t| !t.trim().is_empty());
                self.effects.prepare_embedding(text)
            }
            _ => self.effects.prepare(),
        };
        let prepared = Prepared {
            over_quota: self.quotas.admit(&actor.principal, prepared.at, &arguments),
            ..prepared
        };
        let prepared_at = prepared.at;
        let session = slot.current_for(self.catalog.entry(tool).map_or("", |entry| entry.family));
        let mut command = Command {
            tool: tool.to_owned(),
            arguments,
            actor,
            refused_in: Some(session.clone()),
            connection_session: session,
            tool_enabled: self.catalog.is_enabled(tool, &enabled),
            // Only the toolset tools answer with the caller's sets: other calls skip building
            // them (a list of every family and its tools, per call).
            toolsets: if self
                .catalog
                .entry(tool)
                .is_some_and(|e| e.family == catalog::META_FAMILY)
            {
                self.catalog.statuses(&enabled)
            } else {
                Vec::new()
            },
            admin: false,
            idempotency_key,
            trace: origin.trace.clone(),
            prepared,
            watch: reporter.watch(),
            precomputed: Default::default(),
        };
        // Precompute (what the decision can check instead of redo) on the latest published
        // state, without waiting for this connection's earlier calls: nothing here is read
        // back to the caller, and a decision that finds it stale does the work itself.
        if matches!(effect, CallerEffect::Embeds(_))
            && command.prepared.over_quota.is_none()
            && let Ok(view) = self.ledger.view_after(Admitted::default()).await
        {
            view.precompute(&mut command);
        }
        // A call over its quota is refused before any model is asked.
        let plan = App::model_plan(&command).filter(|_| command.prepared.over_quota.is_none());
        if let Some(plan) = plan {
            // A retry whose key is already used is answered with the recorded outcome (or
            // refused, if it is not the same call): the model is not asked again.
            let repeat = match &command.idempotency_key {
                Some(key) => arrival::view(&self.ledger)
                    .await
                    .is_ok_and(|app| app.idempotency_key_used(&command.actor.principal, key)),
                None => false,
            };
            if !repeat {
                self.ask_model(&mut command, plan, &reporter).await;
            }
        }
        if effect == CallerEffect::SignsCheckpointFirst {
            // The export proves events against a signed checkpoint: sign one now if the log
            // grew, so a session's latest calls are covered. A failure here is reported by the
            // export itself (no checkpoint covers the events).
            if let Err(e) = self.ledger.checkpoint().await {
                tracing::warn!(error = %e, "could not sign a checkpoint before an audit export");
            }
        }
        let opening = self.ledger.is_opening().then(Instant::now);
        let submitted = arrival::submit(&self.ledger, command).await;
        if let Some(since) = opening {
            reporter.waited_for_open(tool, since.elapsed());
        }
        let took = started.elapsed();
        crate::metrics::process().call_answered(App::counted_tool(tool), took);
        if crate::otel::exporting() {
            let error_type = match &submitted {
                Ok(committed) if committed.status != OutcomeStatus::Ok => Some(
                    committed
                        .body
                        .get("code")
                        .and_then(Value::as_str)
                        .unwrap_or("failed"),
                ),
                Ok(_) => None,
                Err(e) => Some(unrecorded_answer(e).0.as_str()),
            };
            let committed = submitted.as_ref().ok();
            crate::otel::export_call(&crate::otel::CallSpan {
                tool: App::counted_tool(tool),
                request_id: origin.request_id.as_deref(),
                mcp_session_id: origin.mcp_session_id.as_deref(),
                transport: self.transport,
                trace: origin.trace.as_ref(),
                started_at: prepared_at,
                took,
                seq: committed.map(|c| c.seq),
                event_hash: committed.map(|c| c.hash.as_str()),
                error_type,
            });
        }
        let trace_id = origin.trace.as_ref().map(TraceContext::trace_id);
        match submitted {
            Ok(committed) => {
                // One line per call for the operator: what, who, how it ended, how long, the
                // caller's trace; never the caller's or a model's text.
                tracing::info!(
                    target: "thinkledger::call",
                    seq = committed.seq,
                    tool,
                    outcome = match committed.status {
                        OutcomeStatus::Ok => "ok",
                        OutcomeStatus::Rejected => "rejected",
                        OutcomeStatus::Failed => "failed",
                    },
                    principal = %principal_name,
                    latency_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
                    trace_id,
                    "call"
                );
                if committed.status != OutcomeStatus::Ok {
                    let code = committed
                        .body
                        .get("code")
                        .and_then(Value::as_str)
                        .unwrap_or("failed");
                    if code == ErrorCode::CallCancelled.as_str() {
                        let progress = committed
                            .body
                            .get("error")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        reporter.cancelled_call(tool, progress);
                    } else {
                        reporter.refused(tool, code, committed.seq);
                    }
                }
                if effect == CallerEffect::RotatesClosedSession
                    && committed.status == OutcomeStatus::Ok
                    && let Some(closed) = committed.body.get("sessionId").and_then(Value::as_str)
                {
                    slot.rotate_if(closed);
                }
                if effect == CallerEffect::ContinuesStartedSession
                    && committed.status == OutcomeStatus::Ok
                    && let Some(id) = committed
                        .body
                        .get("session_id")
                        .and_then(Value::as_str)
                        .and_then(SessionId::parse)
                {
                    // Later workspace calls that name no session continue the new one.
                    slot.continue_workspace(id);
                }
                if let CallerEffect::SetsToolset(enable) = effect
                    && committed.status == OutcomeStatus::Ok
                    && !committed.replayed
                    && let Some(family) = committed
                        .body
                        .pointer("/toolset/name")
                        .and_then(Value::as_str)
                    && toolsets.set(family, enable)
                    && let Some(peer) = peer
                    && let Err(e) = peer.notify_tool_list_changed().await
                {
                    // A stateless request has no stream to carry it: the answer says what changed.
                    tracing::debug!(error = %e, "tools/list_changed not delivered");
                }
                self.result(tool, committed, started)
            }
            Err(e) => {
                tracing::error!(error = %e, tool, trace_id, "call could not be recorded");
                CallToolResult::error(vec![ContentBlock::text(pretty(&unrecorded(&e)))])
            }
        }
    }

    /// Prepare for a model-backed tool: runs its plan against the latest state the caller has
    /// seen, asking the provider each chat the plan names (and embedding what it names), until
    /// the plan asks for nothing more or an answer cannot be had. What came back goes in the
    /// command; the decision checks it is still current ([`app::call::model::check`]).
    ///
    /// Each answer is reported as progress. When the client cancels, the pending model request
    /// is dropped (its connection closed) and the call goes to the ledger as cancelled, saying
    /// how far it got, so it is refused and recorded, never answered with a partial result.
    async fn ask_model(&self, command: &mut Command, plan: ModelPlan, reporter: &Reporter) {
        /// More steps than any tool's plan takes: a plan that keeps asking is cut here, and the
        /// decision refuses the call as incomplete.
        const MOST_STEPS: usize = 8;
        let started = Instant::now();
        let Ok(view) = arrival::view(&self.ledger).await else {
            // The ledger cannot be read: the call is refused the same way when it is submitted.
            return;
        };
        let tool = command.tool.clone();
        let cancelled = |step: usize, taken: usize| {
            let progress = format!(
                "{:.1} s, while model call {step} was pending ({taken} answer(s) taken)",
                started.elapsed().as_secs_f64()
            );
            ModelFailure::Cancelled(progress)
        };
        for step in 1..=MOST_STEPS {
            match plan(&view, command) {
                Ok(Some(ModelStep::Chat(request))) => {
                    let taken = command.prepared.model.answers.len();
                    let answer = match self.effects.model() {
                        Ok(client) => {
                            let on_retry = |retry: &crate::model::Retrying| {
                                reporter.model_retry(&tool, retry);
                            };
                            tokio::select! {
                                biased;
                                () = reporter.cancelled() => Err(cancelled(step, taken)),
                                answer = client.chat_observed(&request, &on_retry) => {
                                    answer.map_err(|e| {
                                        reporter.model_failed(&tool, e.kind());
                                        ModelFailure::of(&e)
                                    })
                                }
                            }
                        }
                        Err(failure) => Err(failure),
                    };
                    match answer {
                        Ok(answer) => {
                            #[allow(clippy::cast_precision_loss)] // a handful of steps
                            reporter.progress(
                                step as f64,
                                None,
                                format!(
                                    "model call {step} answered in {} ms",
                                    answer.exchange.latency_ms
                                ),
                            );
                            command.prepared.model.answers.push(answer);
                        }
                        Err(failure) => {
                            tracing::warn!(tool = %command.tool, error = failure.message(), "model call failed");
                            command.prepared.model.failure = Some(failure);
                            return;
                        }
                    }
                }
                Ok(Some(ModelStep::Concurrent {
                    requests,
                    timeout_ms,
                })) => {
                    if let Err(failure) = self
                        .ask_at_once(command, &requests, timeout_ms, reporter)
                        .await
                    {
                        tracing::warn!(tool = %command.tool, error = failure.message(), "model calls failed");
                        command.prepared.model.failure = Some(failure);
                        return;
                    }
                }
                Ok(Some(ModelStep::Embed(text))) => {
                    let embedding = self.effects.embed(&text);
                    let failed = embedding.is_err();
                    command.prepared.embedding = Some(embedding);
                    if failed {
                        return;
                    }
                }
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// Sends `requests` at once and adds their answers to the command in order, each with when
    /// it was sent after the batch started; fails unless all answer within `timeout_ms`.
    async fn ask_at_once(
        &self,
        command: &mut Command,
        requests: &[crate::model::ChatRequest],
        timeout_ms: u64,
        reporter: &Reporter,
    ) -> Result<(), ModelFailure> {
        let client = self.effects.model()?;
        let batch = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for (k, request) in requests.iter().cloned().enumerate() {
            let client = Arc::clone(&client);
            let (tool, reporter) = (command.tool.clone(), reporter.clone());
            tasks.spawn(async move {
                let sent = batch.elapsed();
                let on_retry = |retry: &crate::model::Retrying| reporter.model_retry(&tool, retry);
                (k, sent, client.chat_observed(&request, &on_retry).await)
            });
        }
        let n = requests.len();
        let mut answers = vec![None; n];
        let mut answered = 0usize;
        let limit = std::time::Duration::from_millis(timeout_ms);
        // The seed's synchronisation points, at 25, 50 and 75 % of the timeout: each is
        // reported as progress (1, 2, 3 of 4), all answers in as 4 of 4.
        let mut next_point = 1u32;
        loop {
            let point_at = batch + limit * next_point / 4;
            tokio::select! {
                biased;
                () = reporter.cancelled() => {
                    // Dropping the set aborts every pending request.
                    return Err(ModelFailure::Cancelled(format!(
                        "{:.1} s, while {} of {n} model calls sent at once were pending",
                        batch.elapsed().as_secs_f64(),
                        n - answered
                    )));
                }
                () = tokio::time::sleep_until(point_at.into()), if next_point <= 3 => {
                    reporter.progress(
                        f64::from(next_point),
                        Some(4.0),
                        format!("{} % of the timeout: {answered} of {n} streams answered", next_point * 25),
                    );
                    next_point += 1;
                }
                joined = tokio::time::timeout_at((batch + limit).into(), tasks.join_next()) => {
                    let Some(joined) = joined.map_err(|_| {
                        ModelFailure::Failed(format!(
                            "Timeout exceeded: the {n} model calls had not all answered within {timeout_ms} ms"
                        ))
                    })?
                    else {
                        break;
                    };
                    let (k, sent, answer) = joined
                        .map_err(|e| ModelFailure::Failed(format!("a model call stopped: {e}")))?;
                    let mut answer = answer.map_err(|e| {
                        reporter.model_failed(&command.tool, e.kind());
                        ModelFailure::of(&e)
                    })?;
                    answer.exchange.started_after_ms = u64::try_from(sent.as_millis()).ok();
                    answers[k] = Some(answer);
                    answered += 1;
                }
            }
        }
        reporter.progress(4.0, Some(4.0), format!("all {n} streams answered"));
        command
            .prepared
            .model
            .answers
            .extend(answers.into_iter().flatten());
        Ok(())
    }

    fn result(&self, tool: &str, committed: Committed, started: Instant) -> CallToolResult {
        let mut body = committed.body;
        if let Value::Object(map) = &mut body {
            // The seed envelope's `processingTime` (ThoughtMCP's tools): a measurement of this
            // call, like the receipt outside the response digest.
            if let Some(Value::Object(metadata)) = map.get_mut("metadata")
                && metadata.contains_key("componentsUsed")
            {
                let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                metadata.insert("processingTime".into(), json!(ms));
            }
            map.insert("seq".into(), json!(committed.seq));
            map.insert("eventHash".into(), json!(committed.hash));
            if committed.replayed {
                // The recorded answer of an earlier call with the same idempotency key.
                map.insert("idempotentReplay".into(), json!(true));
            }
        }
        if committed.status != OutcomeStatus::Ok {
            return CallToolResult::error(vec![ContentBlock::text(pretty(&body))]);
        }
        let text = self
            .catalog
            .entry(tool)
            .map_or_else(|| pretty(&body), |entry| (entry.render_text)(&body));
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(body);
        result
    }
}

/// The code of a call the ledger could not record, and the answer saying what to do about it.
fn unrecorded_answer(error: &LedgerError) -> (ErrorCode, Value) {
    let (code, suggestion) = match error {
        LedgerError::Opening { .. } => (
            ErrorCode::LedgerOpening,
            "the server is still loading its ledger; send the same call again in a few seconds",
        ),
        LedgerError::Behind { .. } => (
            ErrorCode::LedgerOpening,
            "this server has not yet read the event your request's thinkledger/afterSeq names (another server of the ledger wrote it); send the same call again in a moment",
        ),
        LedgerError::OpenFailed(_) => (
            ErrorCode::LedgerUnavailable,
            "the ledger could not be opened, so nothing can be recorded; tell the user to check the server's log and run `thinkledger verify`",
        ),
        _ => (
            ErrorCode::LedgerUnavailable,
            "the call was not recorded and changed nothing; retry after the server is restarted",
        ),
    };
    let answer = json!({
        "status": "failed",
        "code": code.as_str(),
        "error": error.to_string(),
        "suggestion": suggestion,
    });
    (code, answer)
}

/// The answer to a call the ledger could not record (nothing changed), counted in
/// `thinkledger_calls_unrecorded_total` by its code.
fn unrecorded(error: &LedgerError) -> Value {
    let answer = unrecorded_answer(error);
    crate::metrics::process().call_unrecorded(answer.0.as_str());
    answer.1
}

/// JSON as the reference server prints it: two-space indentation.
pub fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// One `tools/call` as the handler hands it to [`ThinkServer::call`].
pub struct Call {
    pub tool: String,
    pub arguments: Value,
    pub actor: Actor,
    /// The caller's current session.
    pub slot: SessionSlot,
    /// The caller's enabled toolsets.
    pub toolsets: EnabledToolsets,
    pub idempotency_key: Option<String>,
    /// The request's logs, progress and cancellation ([`Reporter::silent`] for none).
    pub reporter: Reporter,
    /// Where the request came from: its ids and the caller's trace context (the default for
    /// a call no MCP request made).
    pub origin: CallOrigin,
}

/// The principal a transport set on the request, `local` when none did.
fn principal(context: &RequestContext<RoleServer>) -> Principal {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Principal>())
        .cloned()
        .unwrap_or_else(|| Principal::member(LOCAL_PRINCIPAL))
}

fn actor(context: &RequestContext<RoleServer>, transport: &'static str) -> Actor {
    let client = context.client_info();
    let principal = principal(context);
    Actor {
        principal: principal.name,
        transport: transport.to_owned(),
        client_name: client.as_ref().map(|c| c.name.clone()),
        client_version: client.as_ref().map(|c| c.version.clone()),
        role: principal.role,
        user_ids: principal.user_ids,
    }
}
