//! thinkledger: structured thinking tools for MCP clients on an event-sourced, hash-chained
//! ledger.
//!
//! Layers, innermost first (an arrow means "may import"):
//! `events` ← `effects`, `ledger`, `projections` ← `audit`, `export` ← `app` ← `tools` ← `agent`,
//! `server` ← `main`. `effects` is the one door to the clock, randomness and the environment.
//! `agent` is the reasoning engine (an LLM ⇄ tools loop whose every step is a ledger event).
//! `metrics` (Prometheus) names no other module: any layer records into it. `otel` (the
//! OpenTelemetry spans of the calls) names only `events`; `tools` makes a span of each call.
//! `anchor` (RFC 3161 time-stamps of the checkpoints) names `ledger`, `audit` and `effects`;
//! `main` starts it beside the ledger it follows.
//! See docs/ARCHITECTURE.md for the code map and the invariants each layer keeps.
#![forbid(unsafe_code)]
#![deny(clippy::print_stdout)]

/// jemalloc, for every binary that links the crate (the server, benches, tests): it returns
/// freed memory to the system from a background thread, where glibc's arenas kept what a
/// snapshot or a restart freed (docs/benchmarks.md, "The allocator").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

pub mod agent;
pub mod anchor;
pub mod app;
pub mod audit;
pub mod effects;
pub mod embed;
pub mod events;
pub mod export;
pub mod index;
pub mod ledger;
pub mod metrics;
pub mod model;
pub mod otel;
pub mod projections;
pub mod server;
pub mod tools;
