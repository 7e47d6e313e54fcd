//! How one `tools/call` flows on the caller's side: its effects prepared, the model asked
//! when the tool needs one, the command submitted to the ledger, and the MCP result shaped from
//! what was recorded; what an accepted call changes for its caller (current session, toolsets)
//! and the answer to a call the ledger could not record.
//!
//! Must not know: any rule of a tool (the decision is the ledger's), or a transport.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use rmcp::RoleServer;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::Peer;
use serde_json::{Value, json};

use super::Call;
use super::{
    CallOrigin, CallerEffect, EnabledToolsets, Reporter, SessionSlot, ThinkServer, arrival,
    catalog, pretty,
};
use crate::app::call::model::{ModelStep, Plan as ModelPlan};
use crate::app::{App, Command, ErrorCode};
use crate::effects::{ModelFailure, Prepared};
use crate::events::{OutcomeStatus, SessionId, TraceContext};
use crate::ledger::{Admitted, Committed, LedgerError};

impl ThinkServer {
    /// Runs one call through the ledger and shapes the MCP result; tells `peer` when an
    /// accepted `enable_toolset` / `disable_toolset` changed the caller's tool list. A request
    /// of the 2026-07-28 revision passes no peer: that revision's client hears of the change on
    /// its `subscriptions/listen` stream (see [`rmcp::ServerHandler::listen`]), and only there.
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
        let prepared = self.prepare(effect, &actor.principal, &arguments);
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
        self.before_submit(&mut command, effect, &reporter).await;
        let opening = self.ledger.is_opening().then(Instant::now);
        let submitted = arrival::submit(&self.ledger, command).await;
        if let Some(since) = opening {
            reporter.waited_for_open(tool, since.elapsed());
        }
        let took = started.elapsed();
        crate::metrics::process().call_answered(App::counted_tool(tool), took);
        if crate::otel::exporting() {
            self.export_span(tool, &origin, prepared_at, took, &submitted);
        }
        let trace_id = origin.trace.as_ref().map(TraceContext::trace_id);
        match submitted {
            Ok(committed) => {
                log_call(tool, &committed, &principal_name, took, trace_id);
                report_refusal(&reporter, tool, &committed);
                caller_effect(effect, &committed, &slot, &toolsets, peer).await;
                self.result(tool, committed, started)
            }
            Err(e) => {
                tracing::error!(error = %e, tool, trace_id, "call could not be recorded");
                CallToolResult::error(vec![ContentBlock::text(pretty(&unrecorded(&e)))])
            }
        }
    }

    /// Prepare: every effect the call needs, taken before it reaches the writer (the text to
    /// embed, when the tool embeds one), and the principal's quota verdict.
    fn prepare(&self, effect: CallerEffect, principal: &str, arguments: &Value) -> Prepared {
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
        Prepared {
            over_quota: self.quotas.admit(principal, prepared.at, arguments),
            ..prepared
        }
    }

    /// What is done on the caller's side before the command is submitted: the precomputed
    /// work, the model's answers, and the checkpoint an audit export proves against.
    async fn before_submit(
        &self,
        command: &mut Command,
        effect: CallerEffect,
        reporter: &Reporter,
    ) {
        // Precompute (what the decision can check instead of redo) on the latest published
        // state, without waiting for this connection's earlier calls: nothing here is read
        // back to the caller, and a decision that finds it stale does the work itself.
        if matches!(effect, CallerEffect::Embeds(_))
            && command.prepared.over_quota.is_none()
            && let Ok(view) = self.ledger.view_after(Admitted::default()).await
        {
            view.precompute(command);
        }
        // A call over its quota is refused before any model is asked.
        let plan = App::model_plan(command).filter(|_| command.prepared.over_quota.is_none());
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
                self.ask_model(command, plan, reporter).await;
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
    }

    /// The call's OpenTelemetry span: what, from where, when, how long, and how it ended.
    fn export_span(
        &self,
        tool: &str,
        origin: &CallOrigin,
        prepared_at: DateTime<Utc>,
        took: Duration,
        submitted: &Result<Committed, LedgerError>,
    ) {
        let error_type = match submitted {
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

/// One line per call for the operator: what, who, how it ended, how long, the caller's trace;
/// never the caller's or a model's text.
fn log_call(
    tool: &str,
    committed: &Committed,
    principal: &str,
    took: Duration,
    trace_id: Option<&str>,
) {
    tracing::info!(
        target: "thinkledger::call",
        seq = committed.seq,
        tool,
        outcome = match committed.status {
            OutcomeStatus::Ok => "ok",
            OutcomeStatus::Rejected => "rejected",
            OutcomeStatus::Failed => "failed",
        },
        principal = %principal,
        latency_us = u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        trace_id,
        "call"
    );
}

/// Tells the caller's client of a call that did not succeed: cancelled (with how far it got),
/// or refused with its code.
fn report_refusal(reporter: &Reporter, tool: &str, committed: &Committed) {
    if committed.status == OutcomeStatus::Ok {
        return;
    }
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

/// What an accepted call changes on the caller's side: a closed session's slot rotated, a
/// started workspace session continued, a toolset switched (and the peer told its tool list
/// changed).
async fn caller_effect(
    effect: CallerEffect,
    committed: &Committed,
    slot: &SessionSlot,
    toolsets: &EnabledToolsets,
    peer: Option<&Peer<RoleServer>>,
) {
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
pub(super) fn unrecorded(error: &LedgerError) -> Value {
    let answer = unrecorded_answer(error);
    crate::metrics::process().call_unrecorded(answer.0.as_str());
    answer.1
}
