//! What the reviewer's page shows of what was recorded, over real HTTP on 127.0.0.1 (the rig of
//! `review.rs`): every call's arguments and facts with their texts, refused probes to an
//! auditor (and not to the member probed), search across the sessions a viewer may see, pages
//! of calls, filters that say what is wrong, and an export since a checkpoint the reviewer
//! kept that `verify-export --since-checkpoint` passes.

use std::sync::Arc;

use serde_json::{Value, json};
use thinkledger::tools::{
    Call, Catalog, EnabledToolsets, Reporter, SessionSlot, ThinkServer, Toolsets,
};

use crate::common::cli;
use crate::review::{Rig, actor, call, client, get, think};

pub fn server(rig: &Rig) -> ThinkServer {
    ThinkServer::new(
        rig.ledger.clone(),
        Arc::new(Catalog::new(Toolsets::all())),
        "test",
    )
}

/// A call that may be refused: its body as the client saw it.
pub async fn attempt(
    server: &ThinkServer,
    principal: &str,
    slot: &SessionSlot,
    tool: &str,
    args: Value,
) -> Value {
    let result = server
        .call(
            Call {
                tool: tool.into(),
                arguments: args,
                actor: actor(principal),
                slot: slot.clone(),
                toolsets: EnabledToolsets::new(Toolsets::all()),
                idempotency_key: None,
                reporter: Reporter::silent(),
                origin: Default::default(),
            },
            None,
        )
        .await;
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect();
    serde_json::from_str(&text).expect("a JSON body")
}

/// `text` as an `application/x-www-form-urlencoded` value.
fn form_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                (b as char).to_string()
            }
            b' ' => "+".to_owned(),
            other => format!("%{other:02X}"),
        })
        .collect()
}

/// The page's text without tags (entities decoded enough for the checks here).
fn text_of(page: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in page.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
}

/// A call recorded with its caller's trace context shows the trace id and the caller's span,
/// which join it with the agent's trace; a call without one shows none.
#[tokio::test]
async fn a_call_shows_the_trace_it_was_recorded_with() {
    let rig = Rig::start().await;
    let server = server(&rig);
    let slot = SessionSlot::fresh();
    let (trace, _) = thinkledger::events::TraceContext::parse(
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        None,
    )
    .expect("a well-formed traceparent");
    let body = server
        .call(
            Call {
                tool: "sequentialthinking".into(),
                arguments: json!({"thought": "Traced", "thoughtNumber": 1, "totalThoughts": 2,
                    "nextThoughtNeeded": true}),
                actor: actor("bob"),
                slot: slot.clone(),
                toolsets: EnabledToolsets::new(Toolsets::all()),
                idempotency_key: None,
                reporter: Reporter::silent(),
                origin: thinkledger::tools::CallOrigin {
                    trace: Some(trace),
                    ..Default::default()
                },
            },
            None,
        )
        .await
        .structured_content
        .expect("a result");
    let session = body["sessionId"].as_str().expect("sessionId").to_owned();
    think(&server, "bob", &slot, (2, 2), "Untraced", json!({})).await;
    let (status, _, page) = get(
        &rig,
        Some(rig.token("bob")),
        &format!("/review/session/{session}"),
    )
    .await;
    assert_eq!(status, 200, "{page}");
    let seen = text_of(&page);
    assert!(
        seen.contains("Trace  4bf92f3577b34da6a3ce929d0e0e4736 , caller's span  00f067aa0ba902b7"),
        "{seen}"
    );
    assert_eq!(page.matches("class=\"note trace\"").count(), 1, "{page}");
}

#[tokio::test]
async fn a_probe_of_another_principals_session_shows_to_an_auditor_and_not_to_the_member_probed() {
    let rig = Rig::start().await;
    let server = server(&rig);
    let bobs = SessionSlot::fresh();
    think(&server, "bob", &bobs, (1, 1), "Bob looks around", json!({})).await;
    let probe = attempt(
        &server,
        "bob",
        &bobs,
        "export",
        json!({ "sessionId": rig.alice, "format": "json" }),
    )
    .await;
    assert_eq!(probe["code"], "unknown_session", "{probe}");
    let seq = probe["seq"].as_u64().expect("the refusal is recorded");

    let (status, _, page) = get(&rig, Some(rig.token("carol")), "/review/refusals").await;
    assert_eq!(status, 200, "{page}");
    let seen = text_of(&page);
    assert!(seen.contains("unknown_session"), "{seen}");
    let row = seen
        .lines()
        .find(|_| true)
        .map(|_| seen.contains(&format!(" {seq} ")))
        .unwrap_or(false);
    assert!(row, "the probe's seq {seq} is listed: {seen}");
    assert!(page.contains("id=\"refusals-by-principal\""));

    // The member probed sees neither the refusals page nor the probe in her session.
    let (status, _, _) = get(&rig, Some(rig.token("alice")), "/review/refusals").await;
    assert_eq!(status, 404);
    let (_, _, alices) = get(
        &rig,
        Some(rig.token("alice")),
        &format!("/review/session/{}", rig.alice),
    )
    .await;
    assert!(
        !alices.contains(&format!("id=\"call-{seq}\"")),
        "probe in alice's page"
    );
    // The prober's own session shows it, with its code and message.
    let bob_session = probe["sessionId"].as_str().map(str::to_owned);
    let bobs_page = match bob_session {
        Some(id) => id,
        None => {
            let (_, _, list) = get(&rig, Some(rig.token("bob")), "/review").await;
            let at = list.find("/review/session/").expect("bob has sessions");
            list[at + 16..at + 16 + 36].to_owned()
        }
    };
    let (_, _, page) = get(
        &rig,
        Some(rig.token("carol")),
        &format!("/review/session/{bobs_page}?seq={seq}"),
    )
    .await;
    assert!(page.contains(&format!("id=\"call-{seq}\"")), "{page}");
    assert!(text_of(&page).contains("unknown_session"));
    rig.stop().await;
}

#[tokio::test]
async fn a_search_lists_the_texts_of_the_sessions_the_viewer_may_see() {
    let rig = Rig::start().await;
    let server = server(&rig);
    for i in 0..3 {
        let slot = SessionSlot::fresh();
        let text = format!("Zebracorn audit note {i} for the SOC2 file");
        think(&server, "alice", &slot, (1, 1), &text, json!({})).await;
    }
    let slot = SessionSlot::fresh();
    think(&server, "bob", &slot, (1, 1), "bob's zebracorn", json!({})).await;

    let sessions_found = |page: &str| {
        let at = page.find("id=\"hits\"").expect("a hits table");
        let mut ids: Vec<&str> = page[at..]
            .match_indices("/review/session/")
            .map(|(i, _)| &page[at + i + 16..at + i + 16 + 36])
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.len()
    };
    for (who, expected) in [("alice", 3), ("bob", 1), ("carol", 4)] {
        let (status, _, page) = get(&rig, Some(rig.token(who)), "/review/search?q=ZEBRACORN").await;
        assert_eq!(status, 200);
        assert_eq!(sessions_found(&page), expected, "{who}: {page}");
        assert!(page.contains("<mark>"), "matches are highlighted");
    }
    let (_, _, page) = get(
        &rig,
        Some(rig.token("alice")),
        "/review/search?q=zebracorn+soc2",
    )
    .await;
    assert_eq!(sessions_found(&page), 3);
    let (_, _, page) = get(&rig, Some(rig.token("alice")), "/review/search?q=x").await;
    assert!(
        page.contains("id=\"search-problem\""),
        "a one-letter word is refused: {page}"
    );
    rig.stop().await;
}

#[tokio::test]
async fn each_call_shows_what_it_recorded_and_long_sessions_come_a_page_at_a_time() {
    let rig = Rig::start().await;
    let server = server(&rig);
    let slot = SessionSlot::fresh();
    let session = think(
        &server,
        "alice",
        &slot,
        (1, 250),
        "Opening thought",
        json!({}),
    )
    .await;
    call(
        &server,
        "alice",
        &slot,
        "store_memory",
        json!({"content": "Acme wants quarterly SOC2 evidence", "userId": "alice",
               "sessionId": session, "primarySector": "semantic"}),
    )
    .await;
    for n in 2..=250 {
        think(
            &server,
            "alice",
            &slot,
            (n, 250),
            &format!("Thought number {n}"),
            json!({}),
        )
        .await;
    }
    let path = format!("/review/session/{session}");
    let (status, _, first) = get(&rig, Some(rig.token("alice")), &path).await;
    assert_eq!(status, 200);
    // The memory's content and its fact, under the call that stored it.
    let shown = text_of(&first);
    assert!(shown.contains("MemoryStored"), "the fact is on the page");
    assert!(shown.contains("Acme wants quarterly SOC2 evidence"));
    assert_eq!(
        first.matches("<tr id=\"call-").count(),
        100,
        "a page holds 100 calls"
    );
    assert!(shown.contains("page 1 of 3"), "{shown}");
    let (_, _, last) = get(&rig, Some(rig.token("alice")), &format!("{path}?page=3")).await;
    assert_eq!(last.matches("<tr id=\"call-").count(), 51);
    assert!(text_of(&last).contains("Thought number 250"));
    // A seq jumps to its page.
    let (_, _, jumped) = get(&rig, Some(rig.token("alice")), &format!("{path}?seq=150")).await;
    assert!(jumped.contains("id=\"call-150\""), "seq 150 is on its page");

    // The deliberation's nodes and typed edges are in its calls' facts.
    let (_, _, page) = get(
        &rig,
        Some(rig.token("alice")),
        &format!("/review/session/{}", rig.alice_deliberation),
    )
    .await;
    let shown = text_of(&page);
    for needle in [
        "NodeAdded",
        "EdgeAdded",
        "supports",
        "Measured in the drill",
    ] {
        assert!(shown.contains(needle), "{needle} missing");
    }
    // An erased text says why.
    let (_, _, page) = get(
        &rig,
        Some(rig.token("alice")),
        &format!("/review/session/{}", rig.alice_erased),
    )
    .await;
    assert!(text_of(&page).contains("subject request <#42>"));
    rig.stop().await;
}

#[tokio::test]
async fn a_garbage_date_filter_is_said_not_ignored() {
    let rig = Rig::start().await;
    let (status, _, page) = get(
        &rig,
        Some(rig.token("alice")),
        "/review?from=yesterday&to=2026-02-30",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        page.matches("class=\"refused filter-problem\"").count(),
        2,
        "{page}"
    );
    assert!(text_of(&page).contains("yesterday"));
    rig.stop().await;
}

#[tokio::test]
async fn an_export_since_the_checkpoint_a_reviewer_kept_passes_verify_export_with_it() {
    let rig = Rig::start().await;
    let kept = rig.ledger.checkpoint().await.expect("a checkpoint").note;
    let server = server(&rig);
    let slot = SessionSlot::fresh();
    // As over HTTP: the export's events must be v1 events, whose transports are a closed set.
    let mut session = String::new();
    for (n, thought) in [(1, "After the checkpoint"), (2, "Still after it")] {
        let result = server
            .call(
                Call {
                    tool: "sequentialthinking".into(),
                    arguments: json!({"thought": thought, "thoughtNumber": n, "totalThoughts": 2,
                                      "nextThoughtNeeded": n < 2}),
                    actor: thinkledger::events::Actor {
                        transport: "http".into(),
                        ..actor("alice")
                    },
                    slot: slot.clone(),
                    toolsets: EnabledToolsets::new(Toolsets::all()),
                    idempotency_key: None,
                    reporter: Reporter::silent(),
                    origin: Default::default(),
                },
                None,
            )
            .await;
        let body = result.structured_content.expect("a body");
        session = body["sessionId"].as_str().expect("sessionId").to_owned();
    }

    let response = client()
        .post(format!("{}/review/session/{session}/export", rig.base))
        .header(
            "cookie",
            format!(
                "{}={}",
                thinkledger::server::review::COOKIE_NAME,
                rig.token("alice")
            ),
        )
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!(
            "checkpoint={}",
            form_encoded(&kept.replace('\n', "\r\n"))
        ))
        .send()
        .await
        .expect("POST the export form");
    assert_eq!(response.status().as_u16(), 200);
    let export = response.text().await.expect("the export");
    let doc: Value = serde_json::from_str(&export).expect("JSON");
    assert!(
        doc.get("consistency").is_some(),
        "a consistency proof: {doc}"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("export.json");
    let kept_file = dir.path().join("kept.txt");
    std::fs::write(&file, &export).expect("write");
    std::fs::write(&kept_file, &kept).expect("write");
    let run = cli(
        dir.path(),
        &[
            "verify-export",
            file.to_str().expect("utf-8"),
            "--since-checkpoint",
            kept_file.to_str().expect("utf-8"),
        ],
    )
    .await;
    assert_eq!(run.status.code(), Some(0), "{run:?}");
    rig.stop().await;
}

#[tokio::test]
async fn an_owners_memories_show_every_version_and_deletion_to_whoever_may_read_them() {
    let rig = Rig::start().await;
    let server = server(&rig);
    let slot = SessionSlot::fresh();
    let stored = call(
        &server,
        "alice",
        &slot,
        "store_memory",
        json!({"content": "Prefers the okapi theme", "userId": "alice", "sessionId": "c1",
               "primarySector": "semantic"}),
    )
    .await;
    let id = stored["data"]["memoryId"].as_str().expect("id").to_owned();
    call(
        &server,
        "alice",
        &slot,
        "update_memory",
        json!({"memoryId": id, "userId": "alice", "content": "Prefers the quokka theme now"}),
    )
    .await;
    let other = call(
        &server,
        "alice",
        &slot,
        "store_memory",
        json!({"content": "Lives near the marrowfen", "userId": "alice", "sessionId": "c1",
               "primarySector": "episodic"}),
    )
    .await;
    let other = other["data"]["memoryId"].as_str().expect("id").to_owned();
    call(
        &server,
        "alice",
        &slot,
        "delete_memory",
        json!({"memoryId": other, "userId": "alice", "soft": false}),
    )
    .await;

    let (status, _, page) = get(
        &rig,
        Some(rig.token("alice")),
        "/review/memories?user=alice",
    )
    .await;
    assert_eq!(status, 200);
    let shown = text_of(&page);
    assert!(
        shown.contains("Prefers the okapi theme"),
        "the first version stays"
    );
    assert!(
        shown.contains("Prefers the quokka theme now"),
        "the second version"
    );
    assert!(shown.contains("new version"));
    assert!(shown.contains("erased (hard delete)"));
    assert!(
        shown.contains("delete_memory: hard delete of"),
        "the erasure's reason"
    );
    assert!(!shown.contains("marrowfen"), "erased text is gone");

    let (_, _, page) = get(&rig, Some(rig.token("bob")), "/review/memories?user=alice").await;
    assert!(
        !text_of(&page).contains("okapi"),
        "bob may not read alice's memories"
    );
    let (_, _, page) = get(
        &rig,
        Some(rig.token("carol")),
        "/review/memories?user=alice",
    )
    .await;
    assert!(
        text_of(&page).contains("okapi"),
        "an auditor reads everyone's"
    );
    rig.stop().await;
}

#[tokio::test]
async fn a_deliberation_of_500_nodes_is_drawn_whole_within_the_pages_width() {
    let rig = Rig::start().await;
    let server = server(&rig);
    let slot = SessionSlot::fresh();
    let started = call(
        &server,
        "alice",
        &slot,
        "start_deliberation",
        json!({ "goal": "Pick a rollout plan", "mode": "Test", "profile": "deep" }),
    )
    .await;
    let id = started["session_id"]
        .as_str()
        .expect("session_id")
        .to_owned();
    for n in 0..499 {
        let args = json!({ "session_id": id, "content": format!("Option {n}: stage the rollout by region") });
        call(&server, "alice", &slot, "add_thought_node", args).await;
    }
    let (_, _, page) = get(
        &rig,
        Some(rig.token("alice")),
        &format!("/review/session/{id}"),
    )
    .await;
    let svg = crate::review::svg_of(&page, "deliberation-graph");
    let doc = roxmltree::Document::parse(svg).expect("well-formed");
    let nodes = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("node"))
        .count();
    assert_eq!(nodes, 500, "every node drawn");
    let root = doc.root_element();
    assert_eq!(root.attribute("width"), Some("100%"));
    let style = root.attribute("style").expect("a max width");
    let px: u32 = style
        .trim_start_matches("max-width:")
        .trim_end_matches("px")
        .parse()
        .expect("pixels");
    assert!(px <= 1400, "the drawing fits the page: {style}");
    rig.stop().await;
}

/// Model-backed sessions against the real local model (llama.cpp serving SmolLM2): the page
/// shows the prompt, the model's answer marked as model output with the model's name, and the
/// plan's steps.
#[tokio::test]
async fn model_backed_sessions_show_the_exchange_with_model_output_marked() {
    let Some(base) = crate::model::llm_or_skip("model_backed_sessions_show_the_exchange…") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let env = [
        ("THINKLEDGER_MODEL_PROVIDER_URL", base.as_str()),
        ("THINKLEDGER_MODEL", "smollm2-test"),
        ("THINKLEDGER_MODEL_MAX_TOKENS", "48"),
    ];
    let server = crate::common::HttpServer::start_with_env(
        dir.path(),
        &crate::common::with_every_family(&[]),
        &env,
    )
    .await;
    let client = server.connect().await;
    let patience = std::time::Duration::from_secs(900);
    let conferred = tokio::time::timeout(
        patience,
        crate::common::call(
            &client,
            "confer",
            json!({"message": "Name one colour of the sky.", "temperature": 0, "max_tokens": 24}),
        ),
    )
    .await
    .expect("confer in time");
    let conferred = crate::common::ok(&conferred);
    let session = conferred["session_id"]
        .as_str()
        .expect("session")
        .to_owned();
    let answer = conferred["content"]
        .as_str()
        .expect("content")
        .trim()
        .to_owned();
    let model = conferred["model"].as_str().expect("model").to_owned();

    let page = reqwest::get(format!(
        "http://{}/review/session/{session}",
        server.authority()
    ))
    .await
    .expect("GET the session")
    .text()
    .await
    .expect("body");
    let shown = text_of(&page);
    assert!(shown.contains("ModelConferred"), "the fact is shown");
    assert!(shown.contains("Name one colour of the sky."), "the prompt");
    assert!(
        shown.contains(&format!("model output ({model})")),
        "the answer is marked as the model's: {shown}"
    );
    let first_words: String = answer
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        shown.contains(&first_words),
        "the answer {answer:?} is on the page"
    );
    let _ = client.cancel().await;
    server.kill().await;
}
