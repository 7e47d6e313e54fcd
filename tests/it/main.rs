#![recursion_limit = "1024"]
//! Integration tests: the built `thinkledger` binary driven by real MCP clients (rmcp's client
//! over stdio and Streamable HTTP on 127.0.0.1), real sled on disk in temp dirs.
//! One test binary; one module per concern.

mod agent;
mod audit;
mod audit_stream;
mod backup;
mod cognition;
mod common;
mod deliberation;
mod durability;
mod erasure;
mod fixture_ledger;
mod framing;
mod idempotency;
mod lux;
mod metrics;
mod model;
mod otel;
#[cfg(feature = "postgres")]
#[path = "../postgres/server.rs"]
mod pg_server;
#[cfg(feature = "postgres")]
mod pg_snapshots;
#[cfg(feature = "postgres")]
mod postgres;
mod processes;
mod protocol;
mod replay;
mod review;
mod review_browser;
mod review_content;
mod schemas;
mod tamper;
mod team;
mod tidy;
mod timestamping;
mod utilities;
