//! The process's OpenTelemetry spans: with an OTLP endpoint configured, each `tools/call` is
//! exported as one span over OTLP/HTTP (protobuf), named and attributed per the OpenTelemetry
//! semantic conventions for MCP, and made a child of the trace its caller sent.
//!
//! The SDK's own batch processor runs on the tokio runtime: a finished span goes into a bounded
//! queue (dropped, with a warning once, when the queue is full) and a background task sends
//! the queue in batches, so exporting adds no wait to a call and a collector that is slow or
//! down fails no call (its errors are logged by the SDK at error level). Configuration is the
//! SDK's standard environment, read by the SDK itself (`OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*`, `OTEL_TRACES_SAMPLER`, …); this module is only
//! told, by [`OtelConfig::from_lookup`], whether to export at all.
//!
//! Knows only the events' trace context; it reads no clock (a span's times are the call's
//! prepared time and its measured duration) and never sees a caller's or a model's text: a
//! span carries the tool's name, the request's ids, the outcome's code and the event's seq and
//! hash.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use opentelemetry::trace::{
    Span as _, SpanContext, SpanId, SpanKind, Status, TraceContextExt as _, TraceFlags, TraceId,
    TraceState, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithHttpConfig as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use crate::events::TraceContext;

/// The variables that turn exporting on: the OTLP endpoint for every signal, or for traces.
pub const ENDPOINT_VARS: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// The SDK's switch that turns it off whatever else is set (OpenTelemetry's general SDK
/// configuration).
const SDK_DISABLED: &str = "OTEL_SDK_DISABLED";

/// The service name when the environment names none (`OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`), instead of the SDK's `unknown_service:<executable>`.
pub const DEFAULT_SERVICE_NAME: &str = "thinkledger";

/// The instrumentation scope of the spans.
const SCOPE: &str = "thinkledger";

/// The MCP method every exported span is of.
const TOOLS_CALL: &str = "tools/call";

/// Why spans cannot be exported as configured.
#[derive(Debug, thiserror::Error)]
pub enum OtelError {
    /// An `https://` endpoint: this build has no TLS (docs/dependencies.md, reqwest).
    #[error(
        "{var} is {endpoint}: this build sends OTLP over plain HTTP only (no TLS); point it at \
         an http:// collector, e.g. a local OpenTelemetry Collector that forwards over TLS"
    )]
    TlsUnavailable { var: &'static str, endpoint: String },
    /// The SDK refused its configuration (an endpoint that is no URL, …).
    #[error("the OTLP exporter cannot be built: {0}")]
    Exporter(String),
}

/// Whether, and where, spans are exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtelConfig {
    /// The variable that configured the endpoint, and its value (for the log; the SDK reads it
    /// itself, with its rules: the traces endpoint as it is, the general one with `/v1/traces`
    /// appended).
    pub var: &'static str,
    pub endpoint: String,
}

impl OtelConfig {
    /// The configuration `lookup` (the process environment) gives: `None` when no OTLP
    /// endpoint is set (blank counts as unset) or `OTEL_SDK_DISABLED` is `true`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Option<Self> {
        if lookup(SDK_DISABLED).is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return None;
        }
        ENDPOINT_VARS.into_iter().find_map(|var| {
            let endpoint = lookup(var)?.trim().to_owned();
            (!endpoint.is_empty()).then_some(Self { var, endpoint })
        })
    }
}

/// The tracer calls are exported with, once [`start`] made one.
static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// The running exporter: shut it down at exit to send what is queued.
pub struct Exporting {
    provider: SdkTracerProvider,
}

/// Starts exporting spans as `config` says; must run on a tokio runtime (the batch task is
/// spawned on it). Every call made afterwards in this process is exported.
pub fn start(config: &OtelConfig) -> Result<Exporting, OtelError> {
    if config.endpoint.to_ascii_lowercase().starts_with("https:") {
        return Err(OtelError::TlsUnavailable {
            var: config.var,
            endpoint: config.endpoint.clone(),
        });
    }
    // The configured URL is the one called: no proxy from the environment, as for the model
    // provider. The SDK's export timeout (OTEL_EXPORTER_OTLP_TIMEOUT, 10 s) bounds each
    // export with its retries; the connection is given less.
    let client = reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| OtelError::Exporter(e.to_string()))?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .build()
        .map_err(|e| OtelError::Exporter(e.to_string()))?;
    // The queue, its batch size and delay are the SDK's (OTEL_BSP_*: 2048 spans, 512 a batch,
    // every 5 s); a full queue drops spans, never holds up a call.
    let processor =
        BatchSpanProcessor::builder(exporter, opentelemetry_sdk::runtime::Tokio).build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource())
        .build();
    let tracer = provider.tracer(SCOPE);
    if TRACER.set(tracer).is_err() {
        tracing::warn!("spans are already exported by this process; the second start is ignored");
    }
    tracing::info!(endpoint = %config.endpoint, from = config.var, "exporting spans over OTLP/HTTP");
    Ok(Exporting { provider })
}

/// The SDK's resource (its detectors read `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`),
/// named [`DEFAULT_SERVICE_NAME`] where the environment names no service.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&opentelemetry::Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    if named {
        detected
    } else {
        Resource::builder()
            .with_service_name(DEFAULT_SERVICE_NAME)
            .build()
    }
}

impl Exporting {
    /// Sends what is queued and stops, waiting at most `patience`: off the runtime's workers,
    /// because the SDK blocks its caller until the batch task answers.
    pub async fn shutdown(self, patience: Duration) {
        let provider = self.provider;
        let done = tokio::task::spawn_blocking(move || provider.shutdown_with_timeout(patience));
        match tokio::time::timeout(patience + Duration::from_secs(1), done).await {
            Ok(Ok(Ok(()))) => tracing::debug!("span exporter shut down"),
            Ok(Ok(Err(e))) => tracing::warn!(error = %e, "span exporter shut down with an error"),
            Ok(Err(e)) => tracing::warn!(error = %e, "span exporter shutdown stopped"),
            Err(_) => tracing::warn!("span exporter did not shut down in time; spans may be lost"),
        }
    }
}

/// One answered `tools/call`, as its span tells it.
#[derive(Debug, Clone)]
pub struct CallSpan<'a> {
    /// The tool, as the metrics name it (a name the server does not have is `unknown`): the
    /// span name's target must be of low cardinality.
    pub tool: &'a str,
    /// The request's JSON-RPC id (`jsonrpc.request.id`).
    pub request_id: Option<&'a str>,
    /// The MCP session (`mcp.session.id`), when the transport has one.
    pub mcp_session_id: Option<&'a str>,
    /// `stdio` or `http` (`network.transport` `pipe` or `tcp`); others set none.
    pub transport: &'a str,
    /// The caller's trace context: the span's parent.
    pub trace: Option<&'a TraceContext>,
    /// When the call was prepared (the span's start) and how long it took to answer.
    pub started_at: DateTime<Utc>,
    pub took: Duration,
    /// The event's seq and hash, when the call was recorded (or answered from the log).
    pub seq: Option<u64>,
    pub event_hash: Option<&'a str>,
    /// The refusal's or failure's code (`error.type`); `None` for a call that succeeded.
    pub error_type: Option<&'a str>,
}

/// Whether calls are exported: [`start`] ran in this process.
pub fn exporting() -> bool {
    TRACER.get().is_some()
}

/// Exports `call` as a span, when [`start`] ran; otherwise does nothing. Never waits: the span
/// is queued for the batch task.
pub fn export_call(call: &CallSpan<'_>) {
    let Some(tracer) = TRACER.get() else {
        return;
    };
    let parent = call
        .trace
        .and_then(remote_parent)
        .map_or_else(Context::new, |parent| {
            Context::new().with_remote_span_context(parent)
        });
    let start = SystemTime::from(call.started_at);
    let mut span = tracer
        .span_builder(format!("{TOOLS_CALL} {}", call.tool))
        .with_kind(SpanKind::Server)
        .with_start_time(start)
        .with_attributes(attributes(call))
        .start_with_context(tracer, &parent);
    if let Some(code) = call.error_type {
        span.set_status(Status::error(code.to_owned()));
    }
    span.end_with_timestamp(start + call.took);
}

/// The span's attributes (OpenTelemetry semantic conventions for MCP, plus the event's).
fn attributes(call: &CallSpan<'_>) -> Vec<KeyValue> {
    let mut out = vec![
        KeyValue::new("mcp.method.name", TOOLS_CALL),
        KeyValue::new("gen_ai.tool.name", call.tool.to_owned()),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
    ];
    let transport = match call.transport {
        "stdio" => Some("pipe"),
        "http" => Some("tcp"),
        _ => None,
    };
    if let Some(transport) = transport {
        out.push(KeyValue::new("network.transport", transport));
    }
    if let Some(id) = call.request_id {
        out.push(KeyValue::new("jsonrpc.request.id", id.to_owned()));
    }
    if let Some(id) = call.mcp_session_id {
        out.push(KeyValue::new("mcp.session.id", id.to_owned()));
    }
    if let Some(code) = call.error_type {
        out.push(KeyValue::new("error.type", code.to_owned()));
    }
    if let Some(seq) = call.seq.and_then(|s| i64::try_from(s).ok()) {
        out.push(KeyValue::new("thinkledger.seq", seq));
    }
    if let Some(hash) = call.event_hash {
        out.push(KeyValue::new("thinkledger.event.hash", hash.to_owned()));
    }
    out
}

/// The caller's span as the SDK's remote parent.
fn remote_parent(trace: &TraceContext) -> Option<SpanContext> {
    let trace_id = TraceId::from_hex(trace.trace_id()).ok()?;
    let span_id = SpanId::from_hex(trace.parent_id()).ok()?;
    let state = trace
        .tracestate
        .as_deref()
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        trace_id,
        span_id,
        TraceFlags::new(trace.flags()),
        true,
        state,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exporting_is_on_only_with_an_endpoint_and_not_disabled() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        assert_eq!(OtelConfig::from_lookup(env(&[])), None);
        assert_eq!(
            OtelConfig::from_lookup(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")])),
            None
        );
        assert_eq!(
            OtelConfig::from_lookup(env(&[(
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                "http://127.0.0.1:4318"
            )])),
            Some(OtelConfig {
                var: "OTEL_EXPORTER_OTLP_ENDPOINT",
                endpoint: "http://127.0.0.1:4318".into()
            })
        );
        // The traces endpoint is the one the SDK sends traces to, when both are set.
        assert_eq!(
            OtelConfig::from_lookup(env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                (
                    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                    "http://b:4318/v1/traces"
                ),
            ]))
            .map(|c| c.var),
            Some("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        );
        assert_eq!(
            OtelConfig::from_lookup(env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
                ("OTEL_SDK_DISABLED", "TRUE"),
            ])),
            None
        );
    }

    #[test]
    fn the_parent_is_the_callers_span() {
        let (trace, _) = TraceContext::parse(
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            Some("congo=t61rcWkgMzE"),
        )
        .unwrap();
        let parent = remote_parent(&trace).unwrap();
        assert_eq!(
            format!("{:032x}", parent.trace_id()),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(format!("{:016x}", parent.span_id()), "00f067aa0ba902b7");
        assert!(parent.is_sampled() && parent.is_remote());
        assert_eq!(parent.trace_state().get("congo"), Some("t61rcWkgMzE"));
    }

    #[test]
    fn a_span_names_the_call_and_its_event() {
        let call = CallSpan {
            tool: "sequentialthinking",
            request_id: Some("7"),
            mcp_session_id: None,
            transport: "stdio",
            trace: None,
            started_at: DateTime::default(),
            took: Duration::from_millis(3),
            seq: Some(12),
            event_hash: Some("ab"),
            error_type: Some("invalid_arguments"),
        };
        let attributes: Vec<(String, String)> = attributes(&call)
            .into_iter()
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect();
        let has = |k: &str, v: &str| attributes.contains(&(k.to_owned(), v.to_owned()));
        assert!(has("mcp.method.name", "tools/call"), "{attributes:?}");
        assert!(has("gen_ai.tool.name", "sequentialthinking"));
        assert!(has("network.transport", "pipe"));
        assert!(has("jsonrpc.request.id", "7"));
        assert!(has("error.type", "invalid_arguments"));
        assert!(has("thinkledger.seq", "12"));
        assert!(has("thinkledger.event.hash", "ab"));
        assert!(!attributes.iter().any(|(k, _)| k == "mcp.session.id"));
    }
}
