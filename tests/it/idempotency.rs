//! Idempotency keys through a real MCP client: a retried call (same `_meta.idempotencyKey`,
//! same tool and arguments) gets the recorded answer and appends nothing, also after a restart;
//! the same key on another call is refused and recorded.

use rmcp::model::{CallToolRequestParams, MetaObject, RequestMetaObject};
use serde_json::{Value, json};

use crate::common::*;

fn thought(n: u32, text: &str) -> Value {
    json!({"thought": text, "thoughtNumber": n, "totalThoughts": 3, "nextThoughtNeeded": true})
}

#[tokio::test]
async fn a_retried_call_gets_the_recorded_answer_and_appends_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let first =
        ok(&call_with_key(&server, "sequentialthinking", thought(1, "Frame it"), "k-1").await);
    let again =
        ok(&call_with_key(&server, "sequentialthinking", thought(1, "Frame it"), "k-1").await);
    assert_eq!(
        again["seq"], first["seq"],
        "the same event answers: {again}"
    );
    assert_eq!(again["eventHash"], first["eventHash"]);
    assert_eq!(again["idempotentReplay"], true);
    assert_eq!(again["thoughtHistoryLength"], first["thoughtHistoryLength"]);
    assert_eq!(first.get("idempotentReplay"), None);

    // Another call under the same key is refused (and that refusal is recorded).
    let refused = rejected(
        &call_with_key(
            &server,
            "sequentialthinking",
            thought(1, "Something else"),
            "k-1",
        )
        .await,
    );
    assert_eq!(refused["code"], "idempotency_key_reused", "{refused}");
    // A new key is a new call.
    let second =
        ok(&call_with_key(&server, "sequentialthinking", thought(2, "Go on"), "k-2").await);
    assert_eq!(second["thoughtHistoryLength"], 2);
    server.stop().await;

    // After a restart the key still answers with the recorded outcome.
    let server = StdioServer::start(dir.path(), &[]).await;
    let after =
        ok(&call_with_key(&server, "sequentialthinking", thought(1, "Frame it"), "k-1").await);
    assert_eq!(after["seq"], first["seq"]);
    let mut recorded = first.clone();
    let mut replayed = after.clone();
    for body in [&mut recorded, &mut replayed] {
        if let Value::Object(map) = body {
            map.remove("idempotentReplay");
        }
    }
    assert_eq!(replayed, recorded, "the very same body");
    server.stop().await;

    let events = stored_events(dir.path());
    assert_eq!(
        events.len(),
        3,
        "first, refused reuse, second: retries append nothing"
    );
    assert_eq!(events[0]["call"]["idempotencyKey"], "k-1");
    assert!(events[0]["outcome"]["responseRef"]["textCommitment"].is_string());
    assert_intact(dir.path(), 3).await;
}

/// A retry of a model-backed call with a used key is answered from the log: the model is asked
/// once (the provider in front of the real local model counts the requests).
#[tokio::test]
async fn a_retried_model_backed_call_is_not_asked_of_the_model_again() {
    let Some(upstream) = crate::model::llm_or_skip("a_retried_model_backed_call…") else {
        return;
    };
    let provider = crate::utilities::slow_provider(upstream, std::time::Duration::ZERO).await;
    let env = crate::utilities::provider_env(&provider.base);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start_with_env(dir.path(), &[], &env).await;
    let ask = || {
        let mut meta = serde_json::Map::new();
        meta.insert("idempotencyKey".into(), json!("confer-1"));
        let mut params = CallToolRequestParams::new("confer")
            .with_arguments(rmcp::object!({"message": "Say hello."}));
        params.meta = Some(RequestMetaObject(MetaObject(meta)));
        tokio::time::timeout(
            std::time::Duration::from_secs(600),
            server.call_tool(params),
        )
    };
    let first = ok(&ask().await.expect("in time").expect("tools/call"));
    let again = ok(&ask().await.expect("in time").expect("tools/call"));
    assert_eq!(again["idempotentReplay"], true, "{again}");
    assert_eq!(again["seq"], first["seq"], "{again}");
    assert_eq!(
        provider.requests.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the model is asked once"
    );
    server.stop().await;
}
