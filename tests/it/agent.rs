//! The reasoning engine (`thinkledger agent`, `thinkledger::agent`): against the real local
//! model when `THINKLEDGER_TEST_LLM_GGUF` is set (few, short), and for the rare paths against
//! transcripts recorded from that real server (`tests/fixtures/agent/`, see its README): a tool
//! call then an answer, a repeatedly failing tool stopped by the breaker, a plan nudged, the
//! iteration bound, a run cut short and resumed from its events. Every run goes through a real
//! ledger on disk, and every recorded run re-executes with zero divergences.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use thinkledger::agent::{
    BoxFuture, EmbeddingIntentAnalyzer, EventEmitter, LedgerRecorder, LedgerTools, LlmClient,
    LlmMessage, LlmResponse, LlmToolCall, McpConfig, McpServerConfig, McpTools, ModelLlm,
    ModelSettings, ReasoningConfig, ReasoningEngine, ReasoningError, ReasoningEvent,
    ReasoningState, RunStatus, StatePersistence, ToolDefinition, ToolExecutor, ToolOutcome,
    ToolSet, chat_request, response_of,
};
use thinkledger::app::{App, AppConfig};
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::events::{Actor, SessionId};
use thinkledger::ledger::LedgerHandle;
use thinkledger::model::{ChatOutcome, Exchange, ModelClient, ProviderConfig, Timeouts};
use thinkledger::server;
use thinkledger::tools::{Catalog, SessionSlot, ThinkServer, Toolsets};

use super::model::llm_or_skip;

const BIN: &str = env!("CARGO_BIN_EXE_thinkledger");

/// The sampling a recorded run asks with.
fn settings(max_tokens: u32) -> ModelSettings {
    ModelSettings {
        model: None,
        temperature: Some(0.0),
        max_tokens: Some(max_tokens),
    }
}

fn actor(transport: &str) -> Actor {
    Actor {
        principal: "local".into(),
        transport: transport.into(),
        client_name: Some("agent-test".into()),
        client_version: None,
        role: Default::default(),
        user_ids: Vec::new(),
    }
}

/// A model answering from a recorded transcript: the n-th call gets the n-th recorded answer,
/// and only if it asks exactly what was asked when it was recorded.
struct Transcript {
    exchanges: Vec<Exchange>,
    next: AtomicUsize,
    max_tokens: u32,
}

impl Transcript {
    fn load(name: &str) -> Self {
        let max_tokens = scenario(name).max_tokens;
        let path = fixture(name);
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        let file: Value = serde_json::from_str(&text).expect("a transcript is JSON");
        let exchanges = serde_json::from_value(file["exchanges"].clone()).expect("exchanges");
        Self {
            exchanges,
            next: AtomicUsize::new(0),
            max_tokens,
        }
    }

    fn from(&self, index: usize) -> Self {
        Self {
            exchanges: self.exchanges.clone(),
            next: AtomicUsize::new(index),
            max_tokens: self.max_tokens,
        }
    }
}

impl LlmClient for Transcript {
    fn generate<'a>(
        &'a self,
        messages: &'a [LlmMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmResponse, ReasoningError>> {
        Box::pin(async move {
            let k = self.next.fetch_add(1, Ordering::SeqCst);
            let exchange = self.exchanges.get(k).cloned().ok_or_else(|| {
                ReasoningError::Llm(format!("the transcript has no answer {}", k + 1))
            })?;
            let request = chat_request(messages, tools, &settings(self.max_tokens));
            assert!(
                request.was_sent_as(&exchange.request_bytes.0),
                "call {} asks another prompt than the transcript recorded:\n{:#?}",
                k + 1,
                request.messages
            );
            let outcome = ChatOutcome::from_exchange(exchange).expect("a recorded answer reads");
            Ok(response_of(outcome))
        })
    }
}

/// The real model, each answer kept for a transcript.
struct Recording {
    inner: ModelLlm,
    kept: Mutex<Vec<Exchange>>,
}

impl LlmClient for Recording {
    fn generate<'a>(
        &'a self,
        messages: &'a [LlmMessage],
        tools: &'a [ToolDefinition],
    ) -> BoxFuture<'a, Result<LlmResponse, ReasoningError>> {
        Box::pin(async move {
            let response = self.inner.generate(messages, tools).await?;
            if let (Some(outcome), Ok(mut kept)) = (&response.exchange, self.kept.lock()) {
                kept.push(outcome.exchange.clone());
            }
            Ok(response)
        })
    }
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agent")
        .join(format!("{name}.json"))
}

/// A tool that is down: every call fails the same way (what the breaker is for).
struct DownTool;

impl ToolExecutor for DownTool {
    fn definitions(&self) -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "lookup".into(),
            description: "Look up a fact by its key".into(),
            parameters: json!({
                "type": "object",
                "properties": { "key": { "type": "string" } },
                "required": ["key"]
            }),
        }]
    }

    fn execute<'a>(
        &'a self,
        _name: &'a str,
        _arguments: &'a Value,
    ) -> BoxFuture<'a, Result<ToolOutcome, ReasoningError>> {
        Box::pin(async {
            Ok(ToolOutcome::failed(
                "service_unavailable",
                "the lookup service is unavailable",
            ))
        })
    }
}

/// One scenario: its conversation, bounds and tools.
struct Scenario {
    history: Vec<LlmMessage>,
    config: ReasoningConfig,
    /// thinkledger tools (through the ledger), or the tool that is down.
    down: bool,
    /// The most tokens of one answer.
    max_tokens: u32,
}

/// An example request and the call that answered it: SmolLM2-135M calls tools only after
/// seeing one call earlier in the conversation (the pattern of tests/it/model.rs).
fn example(question: &str, tool: &str, arguments: Value) -> Vec<LlmMessage> {
    vec![
        LlmMessage::user(question),
        LlmMessage::assistant(
            "",
            vec![LlmToolCall {
                id: "example".into(),
                name: tool.into(),
                arguments: arguments.to_string(),
            }],
        ),
    ]
}

fn thought_example() -> Vec<LlmMessage> {
    example(
        "Think about Paris.",
        "sequentialthinking",
        json!({"thought": "Paris is in France.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}),
    )
}

/// The system prompt of a scenario that needs no tools.
const SYSTEM_PLAIN: &str = "You are a helpful assistant.";

fn scenario(name: &str) -> Scenario {
    let config = |max_iterations, breaker_threshold| ReasoningConfig {
        max_iterations,
        breaker_threshold,
        ..ReasoningConfig::default()
    };
    let with = |mut lead: Vec<LlmMessage>, task: &str| {
        lead.push(LlmMessage::user(task));
        lead
    };
    match name {
        "tool_then_answer" => Scenario {
            history: with(thought_example(), "Think about Rome."),
            config: config(3, 3),
            down: false,
            max_tokens: 96,
        },
        // The model calls the tool that is down once and then talks: a threshold of 1 stops it
        // at the first failure (counting to higher thresholds is the orchestrator's unit test).
        "breaker" => Scenario {
            history: with(
                example(
                    "Capital of Spain?",
                    "lookup",
                    json!({"key": "capital of Spain"}),
                ),
                "Capital of Italy?",
            ),
            config: config(4, 1),
            down: true,
            max_tokens: 48,
        },
        "nudge" => Scenario {
            history: vec![
                LlmMessage::system(
                    "You are a helpful assistant with tools. Before you use a tool, say in one \
                     sentence what you will do.",
                ),
                LlmMessage::user(
                    "Use the sequentialthinking tool to think about why the sky is blue.",
                ),
            ],
            config: config(3, 3),
            down: false,
            max_tokens: 48,
        },
        // The model's first answer calls a tool; one model call is all the run may make.
        "max_iterations" => Scenario {
            history: with(thought_example(), "Think about Rome."),
            config: config(1, 3),
            down: false,
            max_tokens: 96,
        },
        // The model's final answer runs past its token limit: no tools needed, a long answer
        // asked for, 12 tokens allowed.
        "cut_off" => Scenario {
            history: vec![
                LlmMessage::system(SYSTEM_PLAIN),
                LlmMessage::user(
                    "Explain in detail, in several paragraphs, why the sky is blue during the day \
                     and red at sunset.",
                ),
            ],
            config: config(2, 3),
            down: false,
            max_tokens: 12,
        },
        other => panic!("no scenario {other}"),
    }
}

/// A ledger in `dir` and a run's session in it, with the tools of `scenario`.
struct Rig {
    ledger: LedgerHandle<App>,
    session: SessionId,
    recorder: Arc<LedgerRecorder>,
    tools: Arc<dyn ToolExecutor>,
}

fn rig(dir: &Path, scenario: &Scenario, session: Option<SessionId>) -> Rig {
    let ledger = server::open(dir, AppConfig::default()).expect("open the ledger");
    let slot = SessionSlot::fresh();
    // A fixed session, so the tools' answers (which name it) are the ones recorded.
    let session = session.unwrap_or_else(|| {
        SessionId::parse("5e55a000-0000-4000-8000-000000000014").expect("a session id")
    });
    slot.continue_with(session.clone());
    let tools: Arc<dyn ToolExecutor> = if scenario.down {
        Arc::new(DownTool)
    } else {
        let catalog = Arc::new(Catalog::new(Toolsets::all()));
        let think = ThinkServer::new(ledger.clone(), catalog.clone(), "agent");
        Arc::new(
            LedgerTools::new(
                think,
                &catalog,
                &["sequentialthinking".to_owned()],
                Actor {
                    transport: "agent".into(),
                    ..actor("agent")
                },
                slot,
            )
            .expect("sequentialthinking is a tool"),
        )
    };
    let effects: Arc<dyn Effects> = Arc::new(SystemEffects);
    let recorder = Arc::new(LedgerRecorder::new(
        ledger.clone(),
        effects,
        actor("cli"),
        session.clone(),
        settings(scenario.max_tokens),
        (
            scenario.config.max_iterations,
            scenario.config.breaker_threshold,
        ),
    ));
    Rig {
        ledger,
        session,
        recorder,
        tools,
    }
}

fn engine<L: LlmClient + 'static>(
    llm: L,
    scenario: &Scenario,
    rig: &Rig,
    events: Arc<dyn EventEmitter>,
) -> ReasoningEngine<L, EmbeddingIntentAnalyzer> {
    ReasoningEngine::new(
        scenario.config.clone(),
        llm,
        EmbeddingIntentAnalyzer::local().expect("the local embedder"),
        rig.tools.clone(),
    )
    .with_events(events)
    .with_persistence(rig.recorder.clone())
}

/// Runs `name` from its transcript on a fresh ledger; the state, the data dir and the session.
async fn replayed(name: &str) -> (ReasoningState, tempfile::TempDir, SessionId) {
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = scenario(name);
    let rig = rig(dir.path(), &scenario, None);
    let state = engine(
        Transcript::load(name),
        &scenario,
        &rig,
        rig.recorder.clone(),
    )
    .process(rig.session.as_str(), scenario.history.clone())
    .await
    .expect("the run is recorded");
    rig.ledger.shutdown().await;
    (state, dir, rig.session)
}

/// The steps of a session as `replay --reexecute --json` reports them, after checking they
/// re-execute with no divergence and none skipped.
fn reexecuted(dir: &Path, session: &SessionId) -> Vec<String> {
    let out = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir)
        .args(["replay", session.as_str(), "--reexecute", "--json"])
        .output()
        .expect("run replay");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "replay's JSON: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let summary = &report["reexecution"];
    assert_eq!(summary["diverged"], 0, "{summary:#}");
    assert_eq!(summary["skipped"], 0, "{summary:#}");
    assert_eq!(summary["matched"], summary["calls"], "{summary:#}");
    report["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|e| e["tool"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_recorded_tool_call_then_answer_is_recorded_step_by_step_and_reexecutes() {
    let (state, dir, session) = replayed("tool_then_answer").await;
    assert!(state.iterations <= 3, "{state:#?}");
    assert_ne!(state.status, RunStatus::Running);
    let steps = reexecuted(dir.path(), &session);
    assert_eq!(steps.first().map(String::as_str), Some("agent_start"));
    assert_eq!(steps.last().map(String::as_str), Some("agent_end"));
    let at = |tool: &str| steps.iter().position(|s| s == tool).unwrap_or(usize::MAX);
    assert!(
        at("agent_model") < at("agent_tool_requested")
            && at("agent_tool_requested") < at("sequentialthinking")
            && at("sequentialthinking") < at("agent_tool_returned"),
        "the tool call is its own event between its request and its return: {steps:?}"
    );
}

#[tokio::test]
async fn a_tool_failing_the_same_way_is_stopped_by_the_breaker_and_reported_as_failed() {
    let (state, dir, session) = replayed("breaker").await;
    assert_eq!(state.status, RunStatus::StoppedByBreaker, "{state:#?}");
    assert!(
        state.reason.contains("service_unavailable"),
        "{}",
        state.reason
    );
    let steps = reexecuted(dir.path(), &session);
    let returned = steps.iter().filter(|s| *s == "agent_tool_returned").count();
    assert_eq!(
        returned, 1,
        "the first failure trips a threshold of 1: {steps:?}"
    );
    assert!(
        state
            .history
            .iter()
            .any(|m| m.content.starts_with("Error: the lookup service")),
        "the model is shown the failure as a failure"
    );
}

#[tokio::test]
async fn a_plan_without_action_is_nudged() {
    let (state, dir, session) = replayed("nudge").await;
    assert!(state.nudges >= 1, "{state:#?}");
    let steps = reexecuted(dir.path(), &session);
    assert!(steps.iter().any(|s| s == "agent_intent") && steps.iter().any(|s| s == "agent_nudge"));
    assert!(state.iterations <= 3);
}

#[tokio::test]
async fn a_model_that_keeps_calling_tools_ends_at_the_iteration_bound() {
    let (state, dir, session) = replayed("max_iterations").await;
    assert_eq!(state.status, RunStatus::MaxIterations, "{state:#?}");
    assert_eq!(state.iterations, 1);
    assert_eq!(state.answer, None, "no answer is invented");
    reexecuted(dir.path(), &session);
}

#[tokio::test]
async fn an_answer_cut_off_at_its_token_limit_is_not_a_completed_run() {
    let (state, dir, session) = replayed("cut_off").await;
    assert_eq!(state.status, RunStatus::BudgetExhausted, "{state:#?}");
    assert!(state.reason.contains("cut off"), "{}", state.reason);
    assert!(
        state.answer.is_some(),
        "the partial answer is kept, marked as such"
    );
    reexecuted(dir.path(), &session);
}

/// Records every step until `left` run out, then fails as a crash would: that step and all
/// after it are never recorded.
struct CutShort {
    inner: Arc<LedgerRecorder>,
    left: AtomicUsize,
}

impl EventEmitter for CutShort {
    fn emit<'a>(
        &'a self,
        event: &'a ReasoningEvent<'a>,
    ) -> BoxFuture<'a, Result<(), ReasoningError>> {
        Box::pin(async move {
            if self.left.load(Ordering::SeqCst) == 0 {
                return Err(ReasoningError::Record("the process died here".into()));
            }
            self.left.fetch_sub(1, Ordering::SeqCst);
            self.inner.emit(event).await
        })
    }
}

#[tokio::test]
async fn a_run_cut_short_resumes_from_its_events_and_asks_what_it_would_have_asked() {
    let name = "tool_then_answer";
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = scenario(name);
    let transcript = Transcript::load(name);
    let session = {
        let rig = rig(dir.path(), &scenario, None);
        // Started, asked (not recorded), answered, tool requested, tool returned: then dead.
        let cut = Arc::new(CutShort {
            inner: rig.recorder.clone(),
            left: AtomicUsize::new(5),
        });
        let cut_short = engine(transcript.from(0), &scenario, &rig, cut)
            .process(rig.session.as_str(), scenario.history.clone())
            .await;
        assert!(
            matches!(cut_short, Err(ReasoningError::Record(_))),
            "{cut_short:?}"
        );
        rig.ledger.shutdown().await;
        rig.session
    };
    // A new process: the ledger opened again, the run read back from its events.
    let rig = rig(dir.path(), &scenario, Some(session.clone()));
    let state = rig
        .recorder
        .load_state(session.as_str())
        .await
        .expect("load")
        .expect("the run is in the ledger");
    assert_eq!(state.status, RunStatus::Running);
    assert_eq!(state.iterations, 1);
    // The resumed run's next prompt must be the one the uncut run sent (the transcript checks).
    let done = engine(transcript.from(1), &scenario, &rig, rig.recorder.clone())
        .resume(state)
        .await
        .expect("the resumed run is recorded");
    assert_ne!(done.status, RunStatus::Running);
    rig.ledger.shutdown().await;
    let steps = reexecuted(dir.path(), &session);
    assert_eq!(steps.last().map(String::as_str), Some("agent_end"));
    assert_eq!(
        steps.iter().filter(|s| *s == "agent_start").count(),
        1,
        "one run, resumed: {steps:?}"
    );
}

#[tokio::test]
async fn a_tool_call_cut_short_is_reported_interrupted_on_resume_not_run_twice() {
    let name = "tool_then_answer";
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = scenario(name);
    let session = {
        let rig = rig(dir.path(), &scenario, None);
        // Started, asked, answered, tool requested; the tool ran; its return never recorded.
        let cut = Arc::new(CutShort {
            inner: rig.recorder.clone(),
            left: AtomicUsize::new(4),
        });
        let cut_short = engine(Transcript::load(name), &scenario, &rig, cut)
            .process(rig.session.as_str(), scenario.history.clone())
            .await;
        assert!(
            matches!(cut_short, Err(ReasoningError::Record(_))),
            "{cut_short:?}"
        );
        rig.ledger.shutdown().await;
        rig.session
    };
    let rig = rig(dir.path(), &scenario, Some(session.clone()));
    let state = rig
        .recorder
        .load_state(session.as_str())
        .await
        .expect("load")
        .expect("the run");
    assert_eq!(state.interrupted_calls.len(), 1, "{state:#?}");
    // Resumed with no model call left: the interrupted call is reported, nothing is asked.
    let bounded = Scenario {
        config: ReasoningConfig {
            max_iterations: 1,
            ..scenario.config.clone()
        },
        ..scenario
    };
    let done = engine(
        Transcript::load(name).from(1),
        &bounded,
        &rig,
        rig.recorder.clone(),
    )
    .resume(state)
    .await
    .expect("recorded");
    assert_eq!(done.status, RunStatus::MaxIterations, "{done:#?}");
    assert!(
        done.history
            .iter()
            .any(|m| m.content.starts_with("Error: the run was cut short")),
        "the model would be told the call was interrupted"
    );
    let run = rig.recorder.run().await.expect("read").expect("the run");
    assert!(run.open_calls.is_empty());
    rig.ledger.shutdown().await;
    let steps = reexecuted(dir.path(), &session);
    let thoughts = steps.iter().filter(|s| *s == "sequentialthinking").count();
    assert_eq!(
        thoughts, 1,
        "the interrupted call was not run again: {steps:?}"
    );
}

#[tokio::test]
async fn a_step_out_of_order_is_refused_and_stops_the_run() {
    // A tool result nobody asked for: the ledger refuses it, the engine stops, nothing changes.
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = scenario("breaker");
    let rig = rig(dir.path(), &scenario, None);
    let tools: Vec<ToolDefinition> = rig.tools.definitions();
    rig.recorder
        .emit(&ReasoningEvent::RunStarted {
            history: &scenario.history,
            tools: &tools,
        })
        .await
        .expect("start");
    let call = LlmToolCall {
        id: "never-requested".into(),
        name: "lookup".into(),
        arguments: "{}".into(),
    };
    let refused = rig
        .recorder
        .emit(&ReasoningEvent::ToolReturned {
            iteration: 0,
            call: &call,
            outcome: &ToolOutcome::succeeded("made up"),
            attempts: 1,
            elapsed: Duration::ZERO,
            tripped: None,
        })
        .await;
    match refused {
        Err(ReasoningError::Record(message)) => {
            assert!(message.contains("agent_step_out_of_order"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let run = rig.recorder.run().await.expect("read").expect("the run");
    assert!(run.conversation.len() == 1 && run.open_calls.is_empty());
    rig.ledger.shutdown().await;
}

#[tokio::test]
async fn an_external_mcp_server_is_usable_as_a_tool() {
    let other = tempfile::tempdir().expect("temp dir");
    let mut servers = std::collections::BTreeMap::new();
    servers.insert(
        "tl".to_owned(),
        McpServerConfig {
            command: BIN.to_owned(),
            args: vec![
                "--data-dir".into(),
                other.path().display().to_string(),
                "serve".into(),
            ],
            env: std::collections::BTreeMap::new(),
        },
    );
    let external = McpTools::start(&McpConfig {
        mcp_servers: servers,
    })
    .await
    .expect("the thinkledger binary serves over stdio");
    let set = ToolSet::new(vec![Arc::new(DownTool), Arc::new(external)]);
    let names: Vec<String> = set.definitions().into_iter().map(|d| d.name).collect();
    assert!(
        names.contains(&"lookup".to_owned())
            && names.contains(&"tl__sequentialthinking".to_owned()),
        "{names:?}"
    );
    let answered = set
        .execute(
            "tl__sequentialthinking",
            &json!({"thought": "one", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}),
        )
        .await
        .expect("called");
    assert_eq!(
        answered.status,
        thinkledger::agent::ToolStatus::Succeeded,
        "{answered:?}"
    );
    assert!(
        answered.output.contains("\"thoughtNumber\""),
        "{}",
        answered.output
    );
    let refused = set
        .execute("tl__sequentialthinking", &json!({"thought": ""}))
        .await
        .expect("called");
    assert_eq!(
        refused.status,
        thinkledger::agent::ToolStatus::Failed,
        "a refusal is a failure"
    );
}

#[test]
fn without_a_provider_the_command_refuses_naming_the_variable() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["agent", "--json", "hello"])
        .env_remove("THINKLEDGER_MODEL_PROVIDER_URL")
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("THINKLEDGER_MODEL_PROVIDER_URL"),
        "{stderr}"
    );
}

#[test]
fn while_a_server_holds_the_ledger_the_command_refuses_saying_what_to_do() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut server = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve");
    let refused = (0..50).find_map(|_| {
        std::thread::sleep(Duration::from_millis(100));
        let out = std::process::Command::new(BIN)
            .arg("--data-dir")
            .arg(dir.path())
            .args(["agent", "hello"])
            // A provider is configured (never called: the ledger is refused first).
            .env("THINKLEDGER_MODEL_PROVIDER_URL", "http://127.0.0.1:9/v1")
            .env("THINKLEDGER_MODEL", "m")
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        stderr
            .contains("a running thinkledger server holds it")
            .then_some((out.status, stderr))
    });
    let _ = server.kill();
    let _ = server.wait();
    let (status, stderr) = refused.expect("the command saw the server's lock");
    assert!(!status.success());
    assert!(stderr.contains("`thinkledger agent`"), "{stderr}");
}

/// Against the real model: the command runs within its bound over thinkledger's tools, ends
/// with an honest status, and its session re-executes with zero divergences.
#[tokio::test]
async fn the_command_runs_against_the_real_model_and_replays_exactly() {
    let Some(base) = llm_or_skip("the_command_runs_against_the_real_model_and_replays_exactly")
    else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let out = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args([
            "agent",
            "--json",
            "--max-iterations",
            "2",
            "--max-tokens",
            "40",
            "--temperature",
            "0",
            "What is the capital of France?",
        ])
        .env("THINKLEDGER_MODEL_PROVIDER_URL", &base)
        .env("THINKLEDGER_MODEL", "smollm2")
        .output()
        .await
        .expect("run agent");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "agent's JSON: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let status = report["status"].as_str().unwrap_or_default();
    assert!(
        [
            "completed",
            "max_iterations",
            "failed",
            "stopped_by_breaker",
            "needs_input",
            "budget_exhausted"
        ]
        .contains(&status),
        "{report}"
    );
    let iterations = report["iterations"].as_u64().unwrap_or(99);
    assert!((1..=2).contains(&iterations), "{report}");
    assert_eq!(out.status.success(), status == "completed");
    // At temperature 0 this model answers with a plain statement naming Paris: a final answer
    // must end the run `completed` (the intent analyzer once read it as ambiguous).
    assert_eq!(status, "completed", "{report}");
    assert!(
        report["answer"]
            .as_str()
            .unwrap_or_default()
            .contains("Paris"),
        "{report}"
    );
    let session = SessionId::parse(report["sessionId"].as_str().unwrap_or_default()).expect("id");
    let steps = reexecuted(dir.path(), &session);
    let models = steps.iter().filter(|s| *s == "agent_model").count();
    assert_eq!(
        models as u64, iterations,
        "every model call is an event: {steps:?}"
    );
    assert_eq!(steps.last().map(String::as_str), Some("agent_end"));

    // With --mcp-config the external server's tools are offered beside thinkledger's own.
    let other = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"tl": {"command": BIN, "args": ["--data-dir", other.path(), "serve"]}}})
            .to_string(),
    )
    .expect("write the config");
    let out = tokio::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args([
            "agent",
            "--json",
            "--max-iterations",
            "1",
            "--max-tokens",
            "24",
        ])
        .arg("--mcp-config")
        .arg(&config)
        .arg("Say hello.")
        .env("THINKLEDGER_MODEL_PROVIDER_URL", &base)
        .env("THINKLEDGER_MODEL", "smollm2")
        .output()
        .await
        .expect("run agent");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "agent's JSON: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let session = SessionId::parse(report["sessionId"].as_str().unwrap_or_default()).expect("id");
    let replay = std::process::Command::new(BIN)
        .arg("--data-dir")
        .arg(dir.path())
        .args(["replay", session.as_str(), "--json"])
        .output()
        .expect("replay");
    let timeline: Value = serde_json::from_slice(&replay.stdout).expect("timeline");
    let started = timeline["timeline"][0]["summary"]
        .as_str()
        .unwrap_or_default();
    let offered: usize = started
        .split("run started with ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        offered > 1,
        "sequentialthinking and the external server's tools: {started}"
    );
}

/// Records the transcripts of `tests/fixtures/agent/` from a real server (see its README): runs
/// only when `THINKLEDGER_AGENT_RECORD_URL` names one.
#[tokio::test]
async fn record_transcripts_when_asked() {
    let Ok(base) = std::env::var("THINKLEDGER_AGENT_RECORD_URL") else {
        return;
    };
    let config = ProviderConfig::new(&base)
        .expect("url")
        .with_default_model("smollm2")
        .with_timeouts(Timeouts {
            connect: Duration::from_secs(5),
            total: Duration::from_secs(600),
        });
    let client = Arc::new(ModelClient::new(config, 7).expect("client"));
    let only = std::env::var("THINKLEDGER_AGENT_RECORD_ONLY").unwrap_or_default();
    for name in [
        "tool_then_answer",
        "breaker",
        "nudge",
        "max_iterations",
        "cut_off",
    ] {
        if !only.is_empty() && !only.split(',').any(|o| o == name) {
            continue;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let scenario = scenario(name);
        let rig = rig(dir.path(), &scenario, None);
        let llm = Recording {
            inner: ModelLlm::new(client.clone(), settings(scenario.max_tokens)),
            kept: Mutex::new(Vec::new()),
        };
        let engine = engine(llm, &scenario, &rig, rig.recorder.clone());
        let state = engine
            .process(rig.session.as_str(), scenario.history.clone())
            .await
            .expect("recorded");
        rig.ledger.shutdown().await;
        let kept = std::mem::take(&mut *engine.llm().kept.lock().expect("kept"));
        let file = json!({
            "scenario": name,
            "recordedFrom": "SmolLM2-135M-Instruct Q4_1 served by tests/llm/serve.py (llama.cpp, xllamacpp), temperature 0",
            "endedAs": state.status.as_str(),
            "exchanges": kept,
        });
        std::fs::write(
            fixture(name),
            serde_json::to_string_pretty(&file).expect("json"),
        )
        .expect("write the transcript");
        eprintln!(
            "{name}: {} after {} call(s): {}",
            state.status.as_str(),
            state.iterations,
            state.reason
        );
    }
}
