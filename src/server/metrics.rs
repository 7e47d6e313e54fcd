//! `GET /metrics`: the process's Prometheus metrics ([`crate::metrics`]) and, read at each
//! scrape from the ledger's handle without asking its writer, the ledger's gauges: its events
//! and bytes, the writer's queue, and the latest signed checkpoint (present or not, and its age
//! only when there is one). The Prometheus text format (0.0.4, what `promtool check metrics`
//! reads), or OpenMetrics 1.0 when the scraper's `Accept` asks for it (Prometheus does).
//!
//! Who may read it is decided where the router is built (`server::router`): anyone who reaches
//! the port, or, with `--auth`, a bearer token that may (`auth::require_metrics_reader`).

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, prometheus_text, text};
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

use crate::app::App;
use crate::effects::{Effects, SystemEffects};
use crate::ledger::{LedgerGauges, LedgerHandle};
use crate::metrics::{PREFIX, process};

/// Where the metrics are served.
pub const METRICS_PATH: &str = "/metrics";

/// The `Content-Type` of an OpenMetrics answer.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The router serving [`METRICS_PATH`] for `ledger`, open to anyone (the caller adds a guard).
pub fn router(ledger: LedgerHandle<App>) -> axum::Router {
    axum::Router::new().route(
        METRICS_PATH,
        axum::routing::get(move |headers: HeaderMap| {
            let gauges = ledger.gauges();
            async move { scrape(&headers, gauges, SystemEffects.now()) }
        }),
    )
}

/// One scrape's answer: every metric, in the format the request asks for.
fn scrape(headers: &HeaderMap, gauges: LedgerGauges, now: DateTime<Utc>) -> Response {
    let mut ledger = Registry::with_prefix(PREFIX);
    ledger.register_collector(Box::new(LedgerCollector { gauges, now }));
    let mut body = String::new();
    let (content_type, encoded) = if wants_openmetrics(headers) {
        let encoded = text::encode_registry(&mut body, process().registry())
            .and_then(|()| text::encode_registry(&mut body, &ledger))
            .and_then(|()| text::encode_eof(&mut body));
        (OPENMETRICS, encoded)
    } else {
        let encoded = prometheus_text::encode(&mut body, process().registry())
            .and_then(|()| prometheus_text::encode(&mut body, &ledger));
        (prometheus_text::CONTENT_TYPE, encoded)
    };
    match encoded {
        Ok(()) => ([(header::CONTENT_TYPE, content_type)], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "the metrics could not be encoded");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the metrics could not be encoded\n",
            )
                .into_response()
        }
    }
}

/// Whether the request's `Accept` names OpenMetrics (Prometheus's scrapes do, ahead of the
/// text format).
fn wants_openmetrics(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|media| {
            media
                .trim()
                .to_ascii_lowercase()
                .starts_with("application/openmetrics-text")
        })
}

/// The ledger's gauges as one scrape read them.
#[derive(Debug)]
struct LedgerCollector {
    gauges: LedgerGauges,
    /// The scrape's time, which the checkpoint's age is counted to.
    now: DateTime<Utc>,
}

impl Collector for LedgerCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let LedgerGauges {
            queued,
            events,
            log_bytes,
            checkpoint_signed_at,
        } = self.gauges;
        gauge(
            &mut encoder,
            "writer_queue_depth",
            "Calls (and other work) waiting in the ledger writer's queue.",
            None,
            u64::try_from(queued).unwrap_or(u64::MAX),
        )?;
        if let Some(events) = events {
            gauge(
                &mut encoder,
                "ledger_events",
                "Events in the ledger (every process's, since it was made).",
                None,
                events,
            )?;
        }
        if let Some(bytes) = log_bytes {
            gauge(
                &mut encoder,
                "ledger",
                "Size of the ledger's log: its events and texts as stored (embedded ledger only).",
                Some(&Unit::Bytes),
                bytes,
            )?;
        }
        gauge(
            &mut encoder,
            "checkpoint_present",
            "1 when the ledger has a signed checkpoint, else 0.",
            None,
            u64::from(checkpoint_signed_at.is_some()),
        )?;
        if let Some(at) = checkpoint_signed_at {
            #[allow(clippy::cast_precision_loss)] // milliseconds: exact up to 285,000 years
            let age = (self.now - at).num_milliseconds().max(0) as f64 / 1000.0;
            gauge(
                &mut encoder,
                "checkpoint_age",
                "Time since the latest signed checkpoint was signed (absent when there is none).",
                Some(&Unit::Seconds),
                age,
            )?;
        }
        Ok(())
    }
}

/// Encodes one gauge named `name` (after the prefix, before the unit).
fn gauge<N>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: N,
) -> Result<(), std::fmt::Error>
where
    ConstGauge<N>: EncodeMetric,
{
    let gauge = ConstGauge::new(value);
    let metric = encoder.encode_descriptor(name, help, unit, gauge.metric_type())?;
    gauge.encode(metric)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(response: Response) -> String {
        let bytes = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(axum::body::to_bytes(response.into_body(), usize::MAX))
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_790_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn the_ledgers_gauges_say_what_is_known_and_omit_what_is_not() {
        let known = LedgerGauges {
            queued: 3,
            events: Some(42),
            log_bytes: Some(4096),
            checkpoint_signed_at: Some(at(0)),
        };
        let text = body(scrape(&HeaderMap::new(), known, at(90)));
        for line in [
            "thinkledger_writer_queue_depth 3",
            "thinkledger_ledger_events 42",
            "thinkledger_ledger_bytes 4096",
            "thinkledger_checkpoint_present 1",
            "thinkledger_checkpoint_age_seconds 90.0",
        ] {
            assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
        }
        assert!(!text.contains("# EOF"), "the text format has no EOF line");
        let opening = LedgerGauges {
            queued: 0,
            events: None,
            log_bytes: None,
            checkpoint_signed_at: None,
        };
        let text = body(scrape(&HeaderMap::new(), opening, at(90)));
        assert!(
            text.lines()
                .any(|l| l == "thinkledger_checkpoint_present 0")
        );
        for absent in ["ledger_events", "ledger_bytes", "checkpoint_age"] {
            assert!(!text.contains(absent), "{absent} in\n{text}");
        }
    }

    #[test]
    fn a_scraper_that_asks_for_openmetrics_gets_it() {
        let gauges = LedgerGauges {
            queued: 0,
            events: Some(1),
            log_bytes: None,
            checkpoint_signed_at: None,
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
                .parse()
                .unwrap(),
        );
        let response = scrape(&headers, gauges, at(0));
        assert_eq!(response.headers()[header::CONTENT_TYPE], OPENMETRICS);
        let text = body(response);
        assert!(text.ends_with("# EOF\n"), "{text}");
        assert!(
            text.contains("# TYPE thinkledger_ledger_events gauge"),
            "{text}"
        );
        let plain = scrape(&HeaderMap::new(), gauges, at(0));
        assert_eq!(
            plain.headers()[header::CONTENT_TYPE],
            prometheus_text::CONTENT_TYPE
        );
    }
}
