//! The MAXential Thinking v2.2 scenario end to end over stdio: a chain with a revision and a
//! branch, then `tag`, `search`, `export`, `visualize` and `reset` on it, and the CLI reading the
//! same ledger afterwards.

use serde_json::{Value, json};

use super::numbers_of;
use crate::common::*;

/// The chain every phase works on: thought N is `TEXTS[N - 1]`; 5 and 6 form branch `alt-db`
/// from thought 3; 4 revises 2.
const TEXTS: [&str; 7] = [
    "Symptom: the dashboard shows stale numbers after each deploy.",
    "Hypothesis: the CDN caches API responses for too long.",
    "Evidence: the origin sends Cache-Control max-age=86400.",
    "Revision: the CDN is fine; the origin's max-age is wrong.",
    "Alternative: is the database replica lagging?",
    "Replica lag is under one second: not the cause.",
    "Decision: set max-age = 60 at the origin.",
];

#[tokio::test]
async fn a_full_think_through_with_branches_revisions_tags_search_export_visualize_and_reset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = StdioServer::start(dir.path(), &[]).await;
    let session = record_chain(&server).await;
    tag_thoughts(&server).await;
    search_thoughts(&server, &session).await;
    let markdown = export_markdown(&server).await;
    let exported = export_json(&server, &session).await;
    visualize(&server).await;
    let (closed, last_seq) = reset_and_start_over(&server, &session).await;
    assert_eq!(
        (&closed["thoughts"], &closed["branches"]),
        (&exported["thoughts"], &exported["branches"]),
        "a reset loses nothing"
    );
    server.stop().await;

    // The CLI reads the same ledger: same sessions, same documents.
    let listed = sessions_json(dir.path()).await;
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(2));
    assert_eq!(listed["sessions"][0]["thoughts"], 7);
    let cli_markdown = export_cli(dir.path(), &session, "markdown").await;
    assert_eq!(cli_markdown, markdown, "CLI markdown equals the tool's");
    let cli_json = export_cli(dir.path(), &session, "json").await;
    let cli_json: Value = serde_json::from_str(&cli_json).expect("CLI JSON");
    assert_eq!(cli_json, closed, "CLI JSON equals the tool's");
    assert_intact(dir.path(), last_seq).await;
}

/// Records the chain; returns its session id.
async fn record_chain(s: &Client) -> String {
    let first = think(s, 1, 5, TEXTS[0], json!({})).await;
    let hypothesis = json!({ "tags": ["Hypothesis", " cache ", "hypothesis"] });
    think(s, 2, 5, TEXTS[1], hypothesis).await;
    think(s, 3, 5, TEXTS[2], json!({})).await;
    let revision = json!({ "isRevision": true, "revisesThought": 2 });
    think(s, 4, 5, TEXTS[3], revision).await;
    let branch = json!({ "branchFromThought": 3, "branchId": "alt-db" });
    think(s, 5, 6, TEXTS[4], branch).await;
    let branch_end = json!({ "branchId": "alt-db", "nextThoughtNeeded": false });
    let branch_end = think(s, 6, 6, TEXTS[5], branch_end).await;
    assert_eq!(branch_end["branches"], json!(["alt-db"]));
    let last = think(s, 7, 6, TEXTS[6], json!({ "nextThoughtNeeded": false })).await;
    assert_eq!(
        pick(
            &last,
            &["totalThoughts", "thoughtHistoryLength", "branches"]
        ),
        json!({ "totalThoughts": 7, "thoughtHistoryLength": 7, "branches": ["alt-db"] })
    );
    first["sessionId"].as_str().expect("sessionId").to_owned()
}

/// Tags are normalized and deduplicated; only real changes are reported.
async fn tag_thoughts(s: &Client) {
    let changes = ["tags", "added", "removed"];
    let add = json!({ "thoughtNumber": 7, "add": ["decision", "KEY", " decision "] });
    let tagged = ok(&call(s, "tag", add).await);
    assert_eq!(
        pick(&tagged, &changes),
        json!({ "tags": ["decision", "key"], "added": ["decision", "key"], "removed": [] })
    );
    let swap =
        json!({ "thoughtNumber": 2, "add": ["evidence"], "remove": ["cache", "never-there"] });
    let tagged = ok(&call(s, "tag", swap).await);
    assert_eq!(
        pick(&tagged, &changes),
        json!({ "tags": ["hypothesis", "evidence"], "added": ["evidence"], "removed": ["cache"] })
    );
    ok(&call(
        s,
        "tag",
        json!({ "thoughtNumber": 3, "add": ["evidence", "cache"] }),
    )
    .await);
    let again = json!({ "thoughtNumber": "3", "add": ["Evidence"] });
    let unchanged = ok(&call(s, "tag", again).await);
    assert_eq!(
        pick(&unchanged, &changes),
        json!({ "tags": ["evidence", "cache"], "added": [], "removed": [] })
    );
}

/// `search`: a case-insensitive regex, tags with AND, one branch, without revisions.
async fn search_thoughts(s: &Client, session: &str) {
    let search = |args: Value| async move { ok(&call(s, "search", args).await) };
    let numbers = |found: &Value| numbers_of(&found["matches"]);

    let found = search(json!({ "query": "max-age\\s*=\\s*\\d+" })).await;
    assert_eq!(numbers(&found), [3, 7]);
    assert_eq!(
        pick(&found, &["totalMatches", "searchedThoughts", "sessionId"]),
        json!({ "totalMatches": 2, "searchedThoughts": 7, "sessionId": session })
    );
    let first = &found["matches"][0];
    assert_eq!(
        pick(first, &["thought", "tags", "branchId", "isRevision"]),
        json!({ "thought": TEXTS[2], "tags": ["evidence", "cache"], "branchId": null, "isRevision": false })
    );
    assert_eq!(found["matches"][1]["tags"], json!(["decision", "key"]));

    assert_eq!(numbers(&search(json!({ "query": "cdn" })).await), [2, 4]);
    let no_revisions = search(json!({ "query": "cdn", "includeRevisions": false })).await;
    assert_eq!(numbers(&no_revisions), [2]);
    assert_eq!(no_revisions["searchedThoughts"], 6);

    let both_tags = search(json!({ "tags": ["evidence", "CACHE"] })).await;
    assert_eq!(numbers(&both_tags), [3]);
    assert_eq!(
        numbers(&search(json!({ "tags": ["evidence"] })).await),
        [2, 3]
    );
    let tag_and_text = search(json!({ "query": "deploy", "tags": ["key"] })).await;
    assert_eq!(numbers(&tag_and_text), Vec::<u64>::new());

    let branch = search(json!({ "branchId": "alt-db" })).await;
    assert_eq!(numbers(&branch), [5, 6]);
    assert_eq!(branch["searchedThoughts"], 2);
    let matches = branch["matches"].as_array().expect("matches");
    assert!(
        matches.iter().all(|m| m["branchId"] == "alt-db"),
        "{branch}"
    );

    let everything = search(json!({})).await;
    assert_eq!(numbers(&everything), [1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(everything["matches"][3]["isRevision"], true);
}

/// `export` as markdown: the plan's document shape; returns the document.
async fn export_markdown(s: &Client) -> String {
    let result = call(s, "export", json!({ "format": "markdown" })).await;
    let exported = ok(&result);
    assert_eq!(
        pick(&exported, &["format", "thoughtCount"]),
        json!({ "format": "markdown", "thoughtCount": 7 })
    );
    let md = exported["content"].as_str().expect("content").to_owned();
    assert_eq!(
        text_of(&result),
        md,
        "the text block is the document itself"
    );
    assert!(
        md.starts_with("# Thinking Chain\n\n## Main Thread\n\n### Thought 1\n"),
        "{md}"
    );
    for expected in [
        format!("### Thought 2 [hypothesis, evidence]\n{}", TEXTS[1]),
        format!("### Thought 4 (revises #2)\n{}", TEXTS[3]),
        format!("### Thought 7 [decision, key]\n{}", TEXTS[6]),
        "## Branch: alt-db\n*Branched from thought 3*".to_owned(),
        "*Branch concluded at thought 6*".to_owned(),
    ] {
        assert!(md.contains(&expected), "markdown lacks {expected:?}:\n{md}");
    }
    let branch_at = md.find("## Branch: alt-db").expect("branch section");
    assert!(
        md.find(TEXTS[6]).expect("thought 7") < branch_at,
        "main thread first:\n{md}"
    );
    assert!(
        md.find(TEXTS[4]).expect("thought 5") > branch_at,
        "branch thoughts under their branch:\n{md}"
    );

    let only_branch = ok(&call(s, "export", json!({ "branchId": "alt-db" })).await);
    let only_branch = only_branch["content"].as_str().expect("content");
    assert!(!only_branch.contains("## Main Thread"), "{only_branch}");
    assert!(
        only_branch.contains(TEXTS[5]) && !only_branch.contains(TEXTS[0]),
        "{only_branch}"
    );
    let main_only = ok(&call(s, "export", json!({ "includeBranches": false })).await);
    let main_only = main_only["content"].as_str().expect("content");
    assert!(
        !main_only.contains("## Branch") && !main_only.contains(TEXTS[4]),
        "{main_only}"
    );
    assert!(main_only.contains(TEXTS[6]), "{main_only}");
    let unknown = json!({ "branchId": "nope" });
    let refused = expect_rejected(s, "export", unknown, "unknown_branch").await;
    assert!(
        refused["suggestion"]
            .as_str()
            .expect("suggestion")
            .contains("alt-db"),
        "{refused}"
    );
    md
}

/// `export` as JSON: the reference `ThoughtData` shape, main thread and branches apart; returns
/// the document.
async fn export_json(s: &Client, session: &str) -> Value {
    let exported = ok(&call(s, "export", json!({ "format": "json" })).await);
    // The chain itself, not a JSON text inside the JSON answer.
    let doc = exported["content"].clone();
    assert!(doc.is_object(), "content is the chain: {exported}");
    assert_eq!(
        pick(&doc, &["sessionId", "status"]),
        json!({ "sessionId": session, "status": "active" })
    );
    assert_eq!(numbers_of(&doc["thoughts"]), [1, 2, 3, 4, 7]);
    let thoughts = doc["thoughts"].as_array().expect("thoughts");
    for thought in thoughts
        .iter()
        .chain(doc["branches"][0]["thoughts"].as_array().expect("branch"))
    {
        let n = usize::try_from(thought["thoughtNumber"].as_u64().expect("number")).expect("small");
        assert_eq!(thought["thought"], TEXTS[n - 1], "text of thought {n}");
    }
    assert_eq!(thoughts[1]["tags"], json!(["hypothesis", "evidence"]));
    assert_eq!(
        pick(&thoughts[3], &["isRevision", "revisesThought"]),
        json!({ "isRevision": true, "revisesThought": 2 })
    );
    assert_eq!(doc["branches"].as_array().map(Vec::len), Some(1));
    let branch = &doc["branches"][0];
    assert_eq!(
        pick(branch, &["branchId", "branchFromThought"]),
        json!({ "branchId": "alt-db", "branchFromThought": 3 })
    );
    assert_eq!(numbers_of(&branch["thoughts"]), [5, 6]);
    doc
}

/// `visualize`: the ascii tree and the mermaid flowchart show the branch and the revision.
async fn visualize(s: &Client) {
    let result = call(s, "visualize", json!({ "format": "ascii" })).await;
    let diagram = ok(&result)["diagram"].as_str().expect("diagram").to_owned();
    assert_eq!(
        text_of(&result),
        diagram,
        "the text block is the diagram itself"
    );
    let lines: Vec<&str> = diagram.lines().map(str::trim).collect();
    for expected in [
        "T1 ─── T2 ─── T3 ─┬─ T4 ─── T7 [CONCLUSION]",
        "└─ [alt-db]",
        "T5 ─── T6 [concluded]",
        "T4 revises T2",
    ] {
        assert!(
            lines.contains(&expected),
            "ascii lacks the line {expected:?}:\n{diagram}"
        );
    }
    assert!(
        !diagram.contains("decision"),
        "tags are hidden by default:\n{diagram}"
    );
    let detailed = json!({ "format": "ascii", "showTags": true, "showContent": true });
    let detailed = ok(&call(s, "visualize", detailed).await);
    let detailed = detailed["diagram"].as_str().expect("diagram");
    let preview: String = TEXTS[0].chars().take(30).collect();
    assert!(
        detailed.contains("decision") && detailed.contains(&preview),
        "showTags/showContent:\n{detailed}"
    );

    let mermaid = ok(&call(s, "visualize", json!({})).await);
    assert_eq!(mermaid["format"], "mermaid", "mermaid is the default");
    let flowchart = mermaid["diagram"].as_str().expect("diagram");
    assert!(flowchart.starts_with("graph TD\n"), "{flowchart}");
    for expected in [
        "T1 --> T2",
        "T3 --> T4",
        "T4 --> T7",
        "T3 --> T5",
        "T5 --> T6",
        "T4 -.revises.-> T2",
        "subgraph",
        "alt-db",
    ] {
        assert!(
            flowchart.contains(expected),
            "mermaid lacks {expected:?}:\n{flowchart}"
        );
    }
}

/// `reset` is guarded, reports what it cleared, and the next thought starts a new session while
/// the old one stays readable. Returns the closed session's JSON export and the last seq.
async fn reset_and_start_over(s: &Client, session: &str) -> (Value, u64) {
    let unconfirmed = json!({ "confirm": false });
    expect_rejected(s, "reset", unconfirmed, "confirmation_required").await;
    let reset = ok(&call(s, "reset", json!({ "confirm": true })).await);
    assert_eq!(
        pick(&reset, &["status", "cleared", "sessionId"]),
        json!({ "status": "reset", "cleared": { "thoughts": 7, "branches": 1 }, "sessionId": session })
    );

    let fresh = think(s, 1, 2, "A new problem", json!({})).await;
    assert_eq!(
        pick(&fresh, &["thoughtHistoryLength", "branches"]),
        json!({ "thoughtHistoryLength": 1, "branches": [] })
    );
    let new_session = fresh["sessionId"].as_str().expect("sessionId").to_owned();
    assert_ne!(new_session, session, "a reset starts a new session");
    let searched = ok(&call(s, "search", json!({})).await);
    assert_eq!(
        searched["searchedThoughts"], 1,
        "tools now work on the new session"
    );

    let more = json!({ "thought": "more", "thoughtNumber": 8, "totalThoughts": 8, "nextThoughtNeeded": false, "sessionId": session });
    let refused = expect_rejected(s, "sequentialthinking", more, "session_closed").await;
    assert!(
        refused["suggestion"]
            .as_str()
            .expect("suggestion")
            .contains("export"),
        "{refused}"
    );

    let old = ok(&call(
        s,
        "export",
        json!({ "format": "json", "sessionId": session }),
    )
    .await);
    assert_eq!(
        old["thoughtCount"], 7,
        "the old session is still exportable"
    );
    let closed = old["content"].clone();
    assert_eq!(closed["status"], "closed");

    let listed = read_json(s, "ledger://sessions").await;
    let statuses: Vec<Value> = listed["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|summary| pick(summary, &["sessionId", "status"]))
        .collect();
    assert_eq!(
        statuses,
        [
            json!({ "sessionId": session, "status": "closed" }),
            json!({ "sessionId": new_session, "status": "active" })
        ]
    );
    let drawn = ok(&call(s, "visualize", json!({ "sessionId": session })).await);
    assert_eq!(
        drawn["thoughtCount"], 7,
        "a closed session can still be drawn"
    );
    (closed, drawn["seq"].as_u64().expect("seq"))
}
