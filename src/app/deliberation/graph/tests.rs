//! Tests of the graph tools, one file per file under test (`tests/nodes.rs` tests `nodes.rs`,
//! …), made as a client makes calls, with the fixtures they share.

mod expand;
mod nodes;
mod registry;
mod scoring;

use serde_json::{Value, json};

use super::super::testing::{Given, given};

/// A deliberation started in the connection's session, with optional budget overrides.
async fn started(budgets: Value) -> Given {
    let g = given();
    g.ok(
        "start_deliberation",
        json!({"goal": "Choose a database for the ledger service", "budgets": budgets}),
    )
    .await;
    g
}

/// The node ids of a response's `nodes`, in order.
fn ids(nodes: &Value) -> Vec<String> {
    nodes
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n["node_id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}
