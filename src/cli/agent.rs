//! `thinkledger agent "TASK"`: runs the reasoning engine (`thinkledger::agent`) over the
//! configured model provider and thinkledger's own tools (and external MCP servers named in
//! `--mcp-config`), every step recorded in the run's session; prints the model's text as it
//! comes and the final answer, or `{sessionId, status, iterations, answer, reason}` with `--json`.
//! `--resume SESSION` goes on with a run that was cut short, from its recorded steps.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;
use thinkledger::agent::{
    EmbeddingIntentAnalyzer, LedgerRecorder, LedgerTools, LlmMessage, LlmStreamChunk, McpConfig,
    McpTools, ModelLlm, ModelSettings, ReasoningConfig, ReasoningEngine, ReasoningState, RunStatus,
    StatePersistence, StreamHandler, ToolExecutor, ToolSet,
};
use thinkledger::app::AppConfig;
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::events::{Actor, SessionId};
use thinkledger::server;
use thinkledger::tools::{Catalog, SessionSlot, ThinkServer, Toolsets};

/// What `thinkledger agent` was asked.
pub struct AgentArgs {
    pub task: Option<String>,
    pub resume: Option<String>,
    pub max_iterations: u32,
    pub tools: String,
    pub mcp_config: Option<PathBuf>,
    pub json: bool,
    pub breaker_threshold: u32,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub max_total_tokens: Option<u64>,
    pub max_seconds: Option<u64>,
}

/// The instructions every run starts with.
const SYSTEM: &str = "You are a careful assistant with tools. When a tool helps, call it; \
                      when you have the answer, give it plainly.";

/// Prints the model's text to the terminal as it comes (stderr with --json, so stdout stays one
/// JSON document).
struct Terminal {
    json: bool,
}

impl StreamHandler for Terminal {
    fn handle_chunk(&self, chunk: &LlmStreamChunk) {
        let line = match chunk {
            LlmStreamChunk::Text(text) => text.clone(),
            LlmStreamChunk::ToolCall(call) => format!("\n→ {}({})", call.name, call.arguments),
            LlmStreamChunk::Finished { .. } => "\n".to_owned(),
        };
        if self.json {
            let _ = write!(std::io::stderr().lock(), "{line}");
        } else {
            let _ = write!(std::io::stdout().lock(), "{line}");
        }
    }
}

/// Runs the command.
pub fn run(dir: &server::LedgerPlace, args: AgentArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(run_async(dir, args))
}

async fn run_async(dir: &server::LedgerPlace, args: AgentArgs) -> anyhow::Result<ExitCode> {
    let effects: Arc<dyn Effects> = Arc::new(SystemEffects);
    let client = effects
        .model()
        .map_err(|f| anyhow::anyhow!("`thinkledger agent` needs a model: {}", f.message()))?;
    let settings = ModelSettings {
        model: None,
        temperature: args.temperature,
        max_tokens: args.max_tokens,
    };
    let config = ReasoningConfig {
        max_iterations: args.max_iterations,
        breaker_threshold: args.breaker_threshold,
        max_total_tokens: args.max_total_tokens,
        max_duration: args.max_seconds.map(Duration::from_secs),
        ..ReasoningConfig::default()
    };
    let ledger = server::open(dir, AppConfig::default())?;
    let slot = SessionSlot::fresh();
    let session = match &args.resume {
        Some(raw) => SessionId::parse(raw).with_context(|| {
            format!("\"{raw}\" is not a session id (`thinkledger sessions` lists them)")
        })?,
        None => slot.current(),
    };
    slot.continue_with(session.clone());
    let actor = Actor {
        principal: std::env::var("USER").map_or_else(|_| "local".to_owned(), |u| format!("os:{u}")),
        transport: "cli".into(),
        client_name: Some("thinkledger agent".into()),
        client_version: Some(env!("CARGO_PKG_VERSION").into()),
        role: Default::default(),
        user_ids: Vec::new(),
    };
    // The tools' own calls are recorded as the same principal, over the agent's transport (so
    // re-execution treats them as tool calls, not as the operator's commands).
    let tool_actor = Actor {
        transport: "agent".into(),
        ..actor.clone()
    };
    let catalog = Arc::new(Catalog::new(Toolsets::all()));
    let think = ThinkServer::new(ledger.clone(), catalog.clone(), "agent");
    let names: Vec<String> = args
        .tools
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    let own = LedgerTools::new(think, &catalog, &names, tool_actor, slot.clone())
        .map_err(|e| anyhow::anyhow!("--tools: {e}"))?;
    let executor: Arc<dyn ToolExecutor> = match &args.mcp_config {
        None => Arc::new(own),
        Some(path) => {
            let config = McpConfig::read(path)?;
            let external = McpTools::start(&config)
                .await
                .with_context(|| format!("--mcp-config {}", path.display()))?;
            Arc::new(ToolSet::new(vec![Arc::new(own), Arc::new(external)]))
        }
    };
    let recorder = Arc::new(LedgerRecorder::new(
        ledger.clone(),
        effects.clone(),
        actor,
        session.clone(),
        settings.clone(),
        (config.max_iterations, config.breaker_threshold),
    ));
    let intent = EmbeddingIntentAnalyzer::local()?;
    let engine = ReasoningEngine::new(config, ModelLlm::new(client, settings), intent, executor)
        .with_stream(Arc::new(Terminal { json: args.json }))
        .with_events(recorder.clone())
        .with_persistence(recorder.clone());
    let outcome = match (&args.resume, &args.task) {
        (Some(_), _) => match recorder.load_state(session.as_str()).await? {
            None => Err(anyhow::anyhow!(
                "session {session} holds no agent run to resume"
            )),
            Some(state) => {
                if let Some(run) = recorder.run().await? {
                    for streak in &run.streaks {
                        engine.tools().remember_failures(
                            &streak.tool,
                            &streak.error_code,
                            streak.failures,
                        );
                    }
                    if !run.open_calls.is_empty() {
                        tracing::warn!(
                            calls = run.open_calls.len(),
                            "tool calls requested before the run was cut short are reported \
                             interrupted, not run again"
                        );
                    }
                }
                engine.resume(state).await.map_err(anyhow::Error::from)
            }
        },
        (None, Some(task)) => engine
            .process(
                session.as_str(),
                vec![LlmMessage::system(SYSTEM), LlmMessage::user(task)],
            )
            .await
            .map_err(anyhow::Error::from),
        (None, None) => Err(anyhow::anyhow!("give a TASK, or --resume SESSION")),
    };
    ledger.shutdown().await;
    let state = outcome?;
    report(&state, args.json)
}

fn report(state: &ReasoningState, json: bool) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(
            out,
            "{}",
            json!({
                "sessionId": state.run_id,
                "status": state.status.as_str(),
                "iterations": state.iterations,
                "answer": state.answer,
                "reason": state.reason,
            })
        )?;
    } else {
        if let Some(answer) = &state.answer {
            writeln!(out, "\nanswer: {answer}")?;
        }
        writeln!(
            out,
            "\n[{}] {} after {} model call(s); session {}",
            state.status.as_str(),
            state.reason,
            state.iterations,
            state.run_id
        )?;
    }
    Ok(match state.status {
        RunStatus::Completed => ExitCode::SUCCESS,
        _ => ExitCode::from(3),
    })
}
