//! The process's Prometheus metrics, kept as cheap atomic handles and recorded where things
//! happen: the ledger's writer once a batch is durable (calls by tool and outcome, events per
//! batch, sync time), the tools layer when a call is answered (latency by tool, calls that
//! could not be recorded), the model client around each call (latency, failures by kind) and
//! the owner's socket as relays come and go, the memory index when it fails and is rebuilt. `server/metrics.rs` serves them at `/metrics`,
//! with what it reads of the ledger at each scrape (its size, queue and latest checkpoint).
//!
//! Knows no other module of the crate, so every layer may record into it; it reads no clock,
//! ledger or environment, and never sees a caller's text: every label value is one of a fixed
//! set (tool names the server has, outcomes, failure kinds) handed in by its caller.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::{Registry, Unit};

/// What every metric's name starts with (`thinkledger_calls_total`, …).
pub const PREFIX: &str = "thinkledger";

/// The `tool` label of a call that names no tool this server has: one value for all of them,
/// so a client cannot grow the metrics by inventing tool names.
pub const UNKNOWN_TOOL_LABEL: &str = "unknown";

/// The `kind` of a model call whose caller stopped waiting for it (a cancelled tool call).
pub const MODEL_CALL_DROPPED: &str = "dropped";

/// Bucket bounds (seconds) of a tool call's latency: sub-millisecond durable calls up to model
/// calls of minutes.
const CALL_SECONDS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
    60.0, 120.0,
];

/// Bucket bounds (seconds) of one batch's sync: an `fdatasync` on a quiet disk to a stalled one.
const SYNC_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Bucket bounds of events per batch, up to the writer's largest batch (512).
const BATCH_EVENTS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0];

/// Bucket bounds (seconds) of one model call, retries included.
const MODEL_SECONDS: &[f64] = &[
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: &'static str,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabel {
    stage: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointLabel {
    endpoint: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ModelFailureLabels {
    endpoint: &'static str,
    kind: &'static str,
}

/// Histograms by label set, each made with its family's bucket bounds.
type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

fn call_histogram() -> Histogram {
    Histogram::new(CALL_SECONDS.iter().copied())
}

fn model_histogram() -> Histogram {
    Histogram::new(MODEL_SECONDS.iter().copied())
}

/// One process's metrics and the registry that encodes them.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    /// Events appended by this process, by the tool they record and their outcome.
    calls: Family<CallLabels, Counter>,
    /// Calls answered without an event (the ledger opening, unavailable, or its writer gone).
    unrecorded: Family<ReasonLabel, Counter>,
    /// A call's latency at the tools layer, from its arrival to its answer.
    call_seconds: Histograms<ToolLabel>,
    /// Events per durable batch (group commit).
    batch_events: Histogram,
    /// How long each batch's sync took (the store's flush and `fdatasync`, or its commit).
    sync_seconds: Histogram,
    /// Each model call's latency, retries included, whatever its end.
    model_seconds: Histograms<EndpointLabel>,
    /// Model calls that ended without an answer, by kind of failure.
    model_failures: Family<ModelFailureLabels, Counter>,
    /// Relays connected to this process's socket now.
    relays: Gauge,
    /// Failures of the memory index (a derived index: dropped and rebuilt from the state), by
    /// what was being done.
    memory_index_failures: Family<StageLabel, Counter>,
    /// 1 from a failure of the memory index until it is next built, else 0.
    memory_index_failed: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh set of metrics, all at zero (the process's is [`process`]; tests make their own).
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix(PREFIX);
        let calls = Family::<CallLabels, Counter>::default();
        registry.register(
            "calls",
            "Tool calls recorded in the ledger by this process (one event each), by tool and \
             outcome as the event records it (ok, rejected, failed; a cancelled call is \
             rejected)",
            calls.clone(),
        );
        let unrecorded = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "calls_unrecorded",
            "Tool calls answered with an error and no event, by reason (the ledger opening, \
             unavailable, or its writer stopped)",
            unrecorded.clone(),
        );
        let call_seconds: Histograms<ToolLabel> = Family::new_with_constructor(call_histogram);
        registry.register_with_unit(
            "call_duration",
            "Latency of a tool call from its arrival at the tools layer to its answer, by tool",
            Unit::Seconds,
            call_seconds.clone(),
        );
        let batch_events = Histogram::new(BATCH_EVENTS.iter().copied());
        registry.register(
            "writer_batch_events",
            "Events made durable together by one sync of the ledger's writer (group commit)",
            batch_events.clone(),
        );
        let sync_seconds = Histogram::new(SYNC_SECONDS.iter().copied());
        registry.register_with_unit(
            "writer_sync_duration",
            "Time to make one batch durable: the log's flush and fdatasync (a database store: \
             its commit)",
            Unit::Seconds,
            sync_seconds.clone(),
        );
        let model_seconds: Histograms<EndpointLabel> =
            Family::new_with_constructor(model_histogram);
        registry.register_with_unit(
            "model_call_duration",
            "Latency of a call to the model provider, retries included, by endpoint",
            Unit::Seconds,
            model_seconds.clone(),
        );
        let model_failures = Family::<ModelFailureLabels, Counter>::default();
        registry.register(
            "model_call_failures",
            "Model provider calls that ended without an answer, by endpoint and kind \
             (unreachable, timed_out, status, malformed, …; dropped: the caller cancelled)",
            model_failures.clone(),
        );
        let relays = Gauge::default();
        registry.register(
            "relays_connected",
            "Relays (other processes' MCP clients) connected to this process's socket",
            relays.clone(),
        );
        let memory_index_failures = Family::<StageLabel, Counter>::default();
        registry.register(
            "memory_index_failures",
            "Failures of the memory index, a derived index that is then dropped and rebuilt \
             from the state at its next use, by stage (build, feed, commit)",
            memory_index_failures.clone(),
        );
        let memory_index_failed = Gauge::default();
        registry.register(
            "memory_index_failed",
            "1 from a failure of the memory index until it is built again, else 0",
            memory_index_failed.clone(),
        );
        Self {
            registry,
            calls,
            unrecorded,
            call_seconds,
            batch_events,
            sync_seconds,
            model_seconds,
            model_failures,
            relays,
            memory_index_failures,
            memory_index_failed,
        }
    }

    /// The registry to encode (`/metrics`).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A batch of `calls` (each its tool's label and its outcome) was made durable; its sync
    /// took `sync`.
    pub fn batch_durable(&self, calls: &[(&'static str, &'static str)], sync: Duration) {
        for &(tool, outcome) in calls {
            self.calls
                .get_or_create(&CallLabels { tool, outcome })
                .inc();
        }
        #[allow(clippy::cast_precision_loss)] // at most the writer's batch size
        self.batch_events.observe(calls.len() as f64);
        self.sync_seconds.observe(sync.as_secs_f64());
    }

    /// A call to `tool` (its label) was answered after `took`.
    pub fn call_answered(&self, tool: &'static str, took: Duration) {
        self.call_seconds
            .get_or_create(&ToolLabel { tool })
            .observe(took.as_secs_f64());
    }

    /// A call was answered with an error and no event, for `reason` (an error code).
    pub fn call_unrecorded(&self, reason: &'static str) {
        self.unrecorded.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// A model call to `endpoint` ended after `took`: answered, or failed with `failure` (its
    /// kind).
    pub fn model_call(
        &self,
        endpoint: &'static str,
        took: Duration,
        failure: Option<&'static str>,
    ) {
        self.model_seconds
            .get_or_create(&EndpointLabel { endpoint })
            .observe(took.as_secs_f64());
        if let Some(kind) = failure {
            self.model_failures
                .get_or_create(&ModelFailureLabels { endpoint, kind })
                .inc();
        }
    }

    /// The memory index failed while at `stage` (`build`, `feed`, `commit`) and was dropped.
    pub fn memory_index_failed(&self, stage: &'static str) {
        self.memory_index_failures
            .get_or_create(&StageLabel { stage })
            .inc();
        self.memory_index_failed.set(1);
    }

    /// The memory index was built (or reopened) and holds the state's memories.
    pub fn memory_index_built(&self) {
        self.memory_index_failed.set(0);
    }

    /// A relay connected: counted until the returned guard is dropped (its connection ended,
    /// or its task was dropped).
    pub fn relay_connected(&self) -> RelayConnected<'_> {
        self.relays.inc();
        RelayConnected(&self.relays)
    }
}

/// A connected relay, counted in `thinkledger_relays_connected` while it lives.
#[must_use = "the relay is counted while this lives"]
pub struct RelayConnected<'a>(&'a Gauge);

impl Drop for RelayConnected<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The metrics of this process (one set, as it has one ledger and one `/metrics`).
pub fn process() -> &'static Metrics {
    static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);
    &METRICS
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    fn text(metrics: &Metrics) -> String {
        let mut out = String::new();
        encode(&mut out, metrics.registry()).unwrap();
        out
    }

    #[test]
    fn what_is_recorded_is_encoded_under_its_name_and_labels() {
        let metrics = Metrics::new();
        metrics.batch_durable(
            &[
                ("sequentialthinking", "ok"),
                ("sequentialthinking", "ok"),
                ("search", "rejected"),
            ],
            Duration::from_micros(300),
        );
        metrics.call_answered("search", Duration::from_millis(2));
        metrics.call_unrecorded("ledger_opening");
        metrics.model_call("chat", Duration::from_secs(1), Some("timed_out"));
        let relay = metrics.relay_connected();
        metrics.memory_index_failed("commit");
        let out = text(&metrics);
        for line in [
            "thinkledger_calls_total{tool=\"sequentialthinking\",outcome=\"ok\"} 2",
            "thinkledger_calls_total{tool=\"search\",outcome=\"rejected\"} 1",
            "thinkledger_calls_unrecorded_total{reason=\"ledger_opening\"} 1",
            "thinkledger_call_duration_seconds_count{tool=\"search\"} 1",
            "thinkledger_writer_batch_events_count 1",
            "thinkledger_writer_batch_events_sum 3.0",
            "thinkledger_writer_sync_duration_seconds_count 1",
            "thinkledger_model_call_duration_seconds_count{endpoint=\"chat\"} 1",
            "thinkledger_model_call_failures_total{endpoint=\"chat\",kind=\"timed_out\"} 1",
            "thinkledger_relays_connected 1",
            "thinkledger_memory_index_failures_total{stage=\"commit\"} 1",
            "thinkledger_memory_index_failed 1",
        ] {
            assert!(out.lines().any(|l| l == line), "no {line:?} in\n{out}");
        }
        drop(relay);
        assert!(
            text(&metrics)
                .lines()
                .any(|l| l == "thinkledger_relays_connected 0")
        );
    }
}
