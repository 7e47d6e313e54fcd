//! The client: sends a request's bytes, retries what is worth retrying, reads the answer
//! (whole, or as an SSE stream reassembled) and returns it with its [`Exchange`].

use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, CONTENT_TYPE, DATE, HeaderMap, RETRY_AFTER};

use super::ModelError;
use super::config::ProviderConfig;
use super::exchange::{Bytes, Endpoint, Exchange, request_digest};
use super::retry::{Jitter, parse_retry_after, retryable_status};
use super::sse::reassemble;
use super::wire::{
    ChatRequest, CompletionBody, EmbeddingsBody, EmbeddingsRequest, TokenLogprob, Usage,
    encode_chat, encode_embeddings,
};

/// A chat answer: its record, and the per-token log-probabilities when they were asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatOutcome {
    /// The call as it happened; text, tool calls, finish reason, usage and model are in it.
    pub exchange: Exchange,
    /// Each generated token's log-probability, when the call asked and the server answered.
    pub logprobs: Option<Vec<TokenLogprob>>,
}

impl ChatOutcome {
    /// The generated text ("" when the model only called tools).
    pub fn text(&self) -> &str {
        self.exchange.response_text.as_deref().unwrap_or_default()
    }

    /// The outcome of a recorded chat exchange, read again from its exact response bytes (a
    /// re-execution's input): the same text, tool calls and log-probabilities the call had.
    /// Pure: nothing is sent.
    pub fn from_exchange(exchange: Exchange) -> Result<Self, ModelError> {
        let logprobs = match exchange.endpoint {
            Endpoint::ChatCompletions => {
                let parsed: CompletionBody = serde_json::from_slice(&exchange.response_bytes.0)
                    .map_err(|e| ModelError::Malformed {
                        reason: format!("not a chat completion: {e}"),
                    })?;
                parsed
                    .choices
                    .into_iter()
                    .next()
                    .and_then(|c| c.logprobs)
                    .and_then(|l| l.content)
            }
            Endpoint::ChatCompletionsStream => {
                reassemble(&exchange.response_bytes.0)
                    .map_err(|reason| ModelError::Malformed { reason })?
                    .logprobs
            }
            Endpoint::Embeddings => {
                return Err(ModelError::Malformed {
                    reason: "an embeddings exchange is not a chat answer".to_owned(),
                });
            }
        };
        Ok(Self { exchange, logprobs })
    }
}

/// An embeddings answer: one vector per input text, in input order, and the record.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingsOutcome {
    /// The call as it happened.
    pub exchange: Exchange,
    /// The vectors, in the order of the request's texts.
    pub vectors: Vec<Vec<f32>>,
}

/// Runs one model call to `endpoint`, timed into the process's metrics
/// (`thinkledger_model_call_duration_seconds`, and `thinkledger_model_call_failures_total` by
/// the failure's kind); a call dropped before it ends (its caller cancelled) counts as failed,
/// [`crate::metrics::MODEL_CALL_DROPPED`].
async fn measured<T>(
    endpoint: Endpoint,
    call: impl Future<Output = Result<T, ModelError>>,
) -> Result<T, ModelError> {
    struct Timed {
        endpoint: &'static str,
        started: Instant,
        /// `None` until the call ends; then its failure's kind, if it failed.
        ended: Option<Option<&'static str>>,
    }
    impl Drop for Timed {
        fn drop(&mut self) {
            let failure = self
                .ended
                .unwrap_or(Some(crate::metrics::MODEL_CALL_DROPPED));
            crate::metrics::process().model_call(self.endpoint, self.started.elapsed(), failure);
        }
    }
    let mut timed = Timed {
        endpoint: endpoint.label(),
        started: Instant::now(),
        ended: None,
    };
    let result = call.await;
    timed.ended = Some(result.as_ref().err().map(ModelError::kind));
    result
}

/// An OpenAI-compatible client. Cheap to share (`reqwest::Client` pools connections).
#[derive(Debug)]
pub struct ModelClient {
    config: ProviderConfig,
    http: reqwest::Client,
    jitter: Mutex<Jitter>,
}

/// A 2xx answer's bytes and how it was got.
struct Received {
    status: u16,
    bytes: Vec<u8>,
    attempts: u32,
    latency: Duration,
}

/// A retry the client is about to make: what failed, without any text the provider sent (it
/// may echo the prompt).
#[derive(Debug, Clone)]
pub struct Retrying {
    /// The attempt that failed (1 for the first).
    pub failed_attempt: u32,
    /// How long the client waits before the next attempt.
    pub wait: Duration,
    /// What kind of failure ([`ModelError::kind`]).
    pub kind: &'static str,
    /// The HTTP status, when the provider answered with one.
    pub status: Option<u16>,
}

/// Why one attempt failed, and whether another is worth it.
enum Failure {
    Retry {
        error: ModelError,
        retry_after: Option<Duration>,
    },
    Final(ModelError),
}

impl ModelClient {
    /// A client for `config`; `jitter_seed` seeds the backoff jitter (take it from the call's
    /// effects). Proxy variables of the environment are not read: the configured URL is the
    /// one called.
    pub fn new(config: ProviderConfig, jitter_seed: u64) -> Result<Self, ModelError> {
        let timeouts = config.timeouts();
        let http = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .timeout(timeouts.total)
            .no_proxy()
            .build()
            .map_err(|e| ModelError::Unreachable {
                base_url: config.base_url().to_owned(),
                attempts: 0,
                reason: format!("the HTTP client could not be built: {}", chain(&e)),
            })?;
        Ok(Self {
            config,
            http,
            jitter: Mutex::new(Jitter::new(jitter_seed)),
        })
    }

    /// The configuration (its `Debug` shows no key).
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    fn model_for(&self, asked: Option<&str>) -> Result<String, ModelError> {
        asked
            .filter(|m| !m.trim().is_empty())
            .or(self.config.default_model())
            .map(str::to_owned)
            .ok_or(ModelError::NoModel)
    }

    /// A chat completion, answered in one JSON body.
    pub async fn chat(&self, request: &ChatRequest) -> Result<ChatOutcome, ModelError> {
        self.chat_observed(request, &|_| {}).await
    }

    /// [`ModelClient::chat`], telling `on_retry` before each retry why the attempt before it
    /// failed and how long the client waits.
    pub async fn chat_observed(
        &self,
        request: &ChatRequest,
        on_retry: &(dyn Fn(&Retrying) + Sync),
    ) -> Result<ChatOutcome, ModelError> {
        measured(Endpoint::ChatCompletions, self.chat_once(request, on_retry)).await
    }

    async fn chat_once(
        &self,
        request: &ChatRequest,
        on_retry: &(dyn Fn(&Retrying) + Sync),
    ) -> Result<ChatOutcome, ModelError> {
        let model = self.model_for(request.model.as_deref())?;
        let body = encode_chat(request, &model, self.config.max_tokens_cap(), false)?;
        let received = self
            .send("chat/completions", &body, false, on_retry)
            .await?;
        let parsed: CompletionBody =
            serde_json::from_slice(&received.bytes).map_err(|e| ModelError::Malformed {
                reason: format!("not a chat completion: {e}"),
            })?;
        let choice = parsed
            .choices
            .into_iter()
            .next()
            .ok_or(ModelError::Malformed {
                reason: "a chat completion without choices".to_owned(),
            })?;
        let message = choice.message.ok_or(ModelError::Malformed {
            reason: "a choice without a message".to_owned(),
        })?;
        let exchange = self.exchange(
            Endpoint::ChatCompletions,
            model,
            parsed.model,
            Answer {
                text: message.content,
                tool_calls: message.tool_calls,
                finish_reason: choice.finish_reason,
                usage: parsed.usage,
            },
            body,
            received,
        );
        Ok(ChatOutcome {
            exchange,
            logprobs: choice.logprobs.and_then(|l| l.content),
        })
    }

    /// A chat completion streamed as server-sent events and reassembled; the exchange keeps
    /// the whole stream as received. A stream that ends before `[DONE]` or a finish reason is
    /// retried like a server error (nothing was handed out yet).
    pub async fn chat_streamed(&self, request: &ChatRequest) -> Result<ChatOutcome, ModelError> {
        self.chat_streamed_live(request, &|_| {}).await
    }

    /// [`ModelClient::chat_streamed`], handing each piece of generated text to `on_text` as
    /// its event arrives (before the answer is complete). A stream that breaks and is retried
    /// hands its text out again from the start; the returned outcome is the whole answer.
    pub async fn chat_streamed_live(
        &self,
        request: &ChatRequest,
        on_text: &(dyn Fn(&str) + Sync),
    ) -> Result<ChatOutcome, ModelError> {
        let streamed = self.chat_streamed_once(request, on_text);
        measured(Endpoint::ChatCompletionsStream, streamed).await
    }

    async fn chat_streamed_once(
        &self,
        request: &ChatRequest,
        on_text: &(dyn Fn(&str) + Sync),
    ) -> Result<ChatOutcome, ModelError> {
        let model = self.model_for(request.model.as_deref())?;
        let body = encode_chat(request, &model, self.config.max_tokens_cap(), true)?;
        let live = std::sync::Mutex::new(super::sse::LiveText::default());
        let on_piece = |piece: &[u8]| {
            let texts = live.lock().map(|mut l| l.push(piece)).unwrap_or_default();
            for text in texts {
                on_text(&text);
            }
        };
        let on_attempt = || {
            if let Ok(mut l) = live.lock() {
                *l = super::sse::LiveText::default();
            }
        };
        let received = self
            .send_observed(
                "chat/completions",
                &body,
                true,
                &|_| {},
                &on_piece,
                &on_attempt,
            )
            .await?;
        let stream =
            reassemble(&received.bytes).map_err(|reason| ModelError::Malformed { reason })?;
        let exchange = self.exchange(
            Endpoint::ChatCompletionsStream,
            model,
            stream.model,
            Answer {
                text: stream.content,
                tool_calls: stream.tool_calls,
                finish_reason: stream.finish_reason,
                usage: stream.usage,
            },
            body,
            received,
        );
        Ok(ChatOutcome {
            exchange,
            logprobs: stream.logprobs,
        })
    }

    /// Embeddings of the request's texts (`/v1/embeddings`), one vector per text, in order.
    pub async fn embeddings(
        &self,
        request: &EmbeddingsRequest,
    ) -> Result<EmbeddingsOutcome, ModelError> {
        measured(Endpoint::Embeddings, self.embeddings_once(request)).await
    }

    async fn embeddings_once(
        &self,
        request: &EmbeddingsRequest,
    ) -> Result<EmbeddingsOutcome, ModelError> {
        let model = self.model_for(request.model.as_deref())?;
        let body = encode_embeddings(request, &model)?;
        let received = self.send("embeddings", &body, false, &|_| {}).await?;
        let parsed: EmbeddingsBody =
            serde_json::from_slice(&received.bytes).map_err(|e| ModelError::Malformed {
                reason: format!("not an embeddings answer: {e}"),
            })?;
        let mut items = parsed.data;
        items.sort_by_key(|item| item.index);
        if items.len() != request.input.len() {
            return Err(ModelError::Malformed {
                reason: format!("{} vectors for {} texts", items.len(), request.input.len()),
            });
        }
        let vectors = items.into_iter().map(|item| item.embedding).collect();
        let exchange = self.exchange(
            Endpoint::Embeddings,
            model,
            parsed.model,
            Answer {
                usage: parsed.usage,
                ..Answer::default()
            },
            body,
            received,
        );
        Ok(EmbeddingsOutcome { exchange, vectors })
    }

    fn exchange(
        &self,
        endpoint: Endpoint,
        model_requested: String,
        model_reported: Option<String>,
        answer: Answer,
        request: Vec<u8>,
        received: Received,
    ) -> Exchange {
        Exchange {
            provider: self.config.kind(),
            base_url: self.config.base_url().to_owned(),
            endpoint,
            model_requested,
            model_reported,
            request_digest: request_digest(&request),
            response_text: answer.text,
            tool_calls: answer.tool_calls,
            finish_reason: answer.finish_reason,
            usage: answer.usage,
            status: received.status,
            attempts: received.attempts,
            latency_ms: u64::try_from(received.latency.as_millis()).unwrap_or(u64::MAX),
            started_after_ms: None,
            request_bytes: Bytes(request),
            response_bytes: Bytes(received.bytes),
        }
    }

    /// Sends `body` to `path` until an attempt succeeds, fails for good, or attempts run out.
    async fn send(
        &self,
        path: &str,
        body: &[u8],
        stream: bool,
        on_retry: &(dyn Fn(&Retrying) + Sync),
    ) -> Result<Received, ModelError> {
        self.send_observed(path, body, stream, on_retry, &|_| {}, &|| {})
            .await
    }

    /// [`Self::send`], handing each piece of a successful answer's body to `on_piece` as it is
    /// read, after `on_attempt` at the start of each attempt.
    async fn send_observed(
        &self,
        path: &str,
        body: &[u8],
        stream: bool,
        on_retry: &(dyn Fn(&Retrying) + Sync),
        on_piece: &(dyn Fn(&[u8]) + Sync),
        on_attempt: &(dyn Fn() + Sync),
    ) -> Result<Received, ModelError> {
        let url = self.config.endpoint_url(path)?;
        let policy = self.config.retry().clone();
        let max_attempts = policy.max_attempts.max(1);
        let started = Instant::now();
        let mut attempt = 1;
        loop {
            on_attempt();
            let failure = match self
                .attempt(url.clone(), body, stream, attempt, on_piece)
                .await
            {
                Ok((status, bytes)) => {
                    return Ok(Received {
                        status,
                        bytes,
                        attempts: attempt,
                        latency: started.elapsed(),
                    });
                }
                Err(failure) => failure,
            };
            let (error, retry_after) = match failure {
                Failure::Final(error) => return Err(error),
                Failure::Retry { error, retry_after } => (error, retry_after),
            };
            if attempt >= max_attempts {
                return Err(error);
            }
            let wait = {
                let mut jitter = self.jitter.lock().unwrap_or_else(|e| e.into_inner());
                policy.delay(attempt, retry_after, &mut jitter)
            };
            let Some(wait) = wait else {
                return Err(error);
            };
            tracing::debug!(attempt, ?wait, %error, "model call: retrying");
            on_retry(&Retrying {
                failed_attempt: attempt,
                wait,
                kind: error.kind(),
                status: match &error {
                    ModelError::Status { status, .. } => Some(*status),
                    _ => None,
                },
            });
            tokio::time::sleep(wait).await;
            attempt += 1;
        }
    }

    async fn attempt(
        &self,
        url: reqwest::Url,
        body: &[u8],
        stream: bool,
        attempt: u32,
        on_piece: &(dyn Fn(&[u8]) + Sync),
    ) -> Result<(u16, Vec<u8>), Failure> {
        let base_url = self.config.base_url().to_owned();
        let mut request = self
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(
                ACCEPT,
                if stream {
                    "text/event-stream"
                } else {
                    "application/json"
                },
            )
            .body(body.to_vec());
        if let Some(key) = self.config.api_key() {
            request = request.bearer_auth(key.expose());
        } else if let Some((user, password)) = self.config.basic_auth() {
            request = request.basic_auth(user, password);
        }
        let timeout = self.config.timeouts().total;
        let transport = |e: reqwest::Error| {
            if e.is_timeout() {
                Failure::Final(ModelError::TimedOut {
                    base_url: base_url.clone(),
                    after: timeout,
                })
            } else {
                Failure::Retry {
                    error: ModelError::Unreachable {
                        base_url: base_url.clone(),
                        attempts: attempt,
                        reason: chain(&e),
                    },
                    retry_after: None,
                }
            }
        };
        let mut response = request.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let retry_after = retry_after(response.headers());
        let mut bytes = Vec::new();
        let answered = (200..300).contains(&status);
        let read = loop {
            match response.chunk().await {
                Ok(Some(piece)) => {
                    if answered {
                        on_piece(&piece);
                    }
                    bytes.extend_from_slice(&piece);
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        if !(200..300).contains(&status) {
            let error = status_error(status, attempt, &bytes);
            return Err(if retryable_status(status) {
                Failure::Retry { error, retry_after }
            } else {
                Failure::Final(error)
            });
        }
        if let Err(e) = read {
            if e.is_timeout() {
                return Err(transport(e));
            }
            return Err(Failure::Retry {
                error: ModelError::TornStream {
                    attempts: attempt,
                    reason: format!(
                        "the connection broke after {} bytes: {}",
                        bytes.len(),
                        chain(&e)
                    ),
                },
                retry_after: None,
            });
        }
        if stream {
            let complete = reassemble(&bytes)
                .map(|r| r.done || r.finish_reason.is_some())
                .unwrap_or(true);
            if !complete {
                return Err(Failure::Retry {
                    error: ModelError::TornStream {
                        attempts: attempt,
                        reason: format!("{} bytes without a finish reason or [DONE]", bytes.len()),
                    },
                    retry_after: None,
                });
            }
        }
        Ok((status, bytes))
    }
}

/// The parts of an answer an [`Exchange`] keeps beside the bytes.
#[derive(Default)]
struct Answer {
    text: Option<String>,
    tool_calls: Vec<super::wire::ToolCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    let date = headers.get(DATE).and_then(|d| d.to_str().ok());
    parse_retry_after(value, date)
}

/// An error status as a [`ModelError::Status`] with a hint and the start of the body.
fn status_error(status: u16, attempts: u32, body: &[u8]) -> ModelError {
    let hint = match status {
        401 | 403 => " (the server refused the credentials: check THINKLEDGER_MODEL_API_KEY)",
        404 => " (check that THINKLEDGER_MODEL_PROVIDER_URL is the /v1 base and the model exists)",
        429 => " (rate limited, retries exhausted: try again later)",
        500..=599 => " (server error, retries exhausted)",
        _ => " (the server refused the request)",
    };
    let text = String::from_utf8_lossy(body);
    let body: String = text.chars().take(400).collect();
    ModelError::Status {
        status,
        attempts,
        hint,
        body,
    }
}

/// An error and its sources, joined: reqwest's own message is rarely the useful part.
fn chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::config::{API_KEY_VAR, PROVIDER_URL_VAR};

    #[test]
    fn status_errors_say_what_to_check() {
        assert!(status_error(401, 1, b"").to_string().contains(API_KEY_VAR));
        assert!(
            status_error(404, 1, b"")
                .to_string()
                .contains(PROVIDER_URL_VAR)
        );
        let long = status_error(500, 4, "x".repeat(1000).as_bytes()).to_string();
        assert!(
            long.contains("after 4 attempt(s)") && long.len() < 600,
            "{long}"
        );
    }
}
