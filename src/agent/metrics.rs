//! `InMemoryMetrics`: a `MetricsCollector` that keeps counts and summed durations in memory,
//! for a command's report or a test.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::traits::MetricsCollector;

/// Counts and durations by name, as measured.
#[derive(Debug, Default)]
pub struct InMemoryMetrics {
    counts: Mutex<BTreeMap<String, u64>>,
    durations: Mutex<BTreeMap<String, (u64, Duration)>>,
}

impl InMemoryMetrics {
    /// How many of `name` were counted.
    pub fn count(&self, name: &str) -> u64 {
        self.counts
            .lock()
            .map(|c| c.get(name).copied().unwrap_or(0))
            .unwrap_or(0)
    }

    /// How many durations of `name` were recorded, and their sum.
    pub fn duration(&self, name: &str) -> (u64, Duration) {
        self.durations
            .lock()
            .map(|d| d.get(name).copied().unwrap_or_default())
            .unwrap_or_default()
    }
}

impl MetricsCollector for InMemoryMetrics {
    fn record_duration(&self, name: &str, elapsed: Duration) {
        if let Ok(mut durations) = self.durations.lock() {
            let entry = durations.entry(name.to_owned()).or_default();
            entry.0 = entry.0.saturating_add(1);
            entry.1 = entry.1.saturating_add(elapsed);
        }
    }

    fn increment(&self, name: &str) {
        if let Ok(mut counts) = self.counts.lock() {
            let entry = counts.entry(name.to_owned()).or_default();
            *entry = entry.saturating_add(1);
        }
    }
}
