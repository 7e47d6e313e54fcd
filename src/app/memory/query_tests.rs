//! `search_memories`' boolean syntax through the tool, on nine fixed memories: a table of
//! queries and the exact sets of memories each finds (every operator, nesting, phrases with
//! NOT, the case of operators), the matched terms and highlights (a negated word is neither),
//! and malformed queries refused with what is wrong and the query's lenient reading.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::tests::Harness;
use crate::events::OutcomeStatus;

/// The memories, by the names the table uses.
const MEMORIES: &[(&str, &str)] = &[
    ("prefers", "User prefers dark mode for all applications"),
    ("meeting", "Dark mode meeting moved to Friday afternoon"),
    ("cake", "The dark chocolate cake arrived on Friday"),
    ("light", "Light mode hurts my eyes in the morning"),
    ("standup", "Friday standup: review the mode switch design"),
    ("keyboard", "Bought a new keyboard with dark keys"),
    ("lunch", "Team lunch on Monday at the Italian place"),
    ("sleep", "I could not sleep before the demo"),
    ("bus", "The dark bus was the quickest mode of transport"),
];

/// Each query and the memories it must find, exactly.
const TABLE: &[(&str, &[&str])] = &[
    // The case: a phrase AND NOT a word (tantivy's parser found nothing).
    ("\"dark mode\" AND NOT Friday", &["prefers"]),
    ("dark -Friday", &["prefers", "keyboard", "bus"]),
    ("dark NOT Friday", &["prefers", "keyboard", "bus"]),
    // A negation alone: every memory of the owner but those.
    (
        "NOT Friday",
        &["prefers", "light", "keyboard", "lunch", "sleep", "bus"],
    ),
    ("dark AND mode", &["prefers", "meeting", "bus"]),
    ("\"dark mode\"", &["prefers", "meeting"]),
    (
        "dark OR light",
        &["prefers", "meeting", "cake", "light", "keyboard", "bus"],
    ),
    (
        "mode AND (light OR Friday)",
        &["meeting", "light", "standup"],
    ),
    (
        "(dark OR light) AND NOT (Friday OR keyboard)",
        &["prefers", "light", "bus"],
    ),
    // AND binds tighter than OR, on either side.
    (
        "dark AND mode OR lunch",
        &["prefers", "meeting", "bus", "lunch"],
    ),
    (
        "lunch OR dark AND mode",
        &["prefers", "meeting", "bus", "lunch"],
    ),
    ("Friday AND NOT \"dark mode\"", &["cake", "standup"]),
    // OR NOT: a word, or anything without another.
    (
        "chocolate OR NOT dark",
        &["cake", "light", "standup", "lunch", "sleep"],
    ),
    (
        "+dark mode",
        &["prefers", "meeting", "cake", "keyboard", "bus"],
    ),
    (
        "NOT NOT dark",
        &["prefers", "meeting", "cake", "keyboard", "bus"],
    ),
    ("-(dark OR Friday)", &["light", "lunch", "sleep"]),
    ("NOT dark AND NOT Friday AND NOT mode", &["lunch", "sleep"]),
    ("\"dark mode\" -meeting", &["prefers"]),
    (
        "((dark AND (mode OR keys)) AND NOT (bus))",
        &["prefers", "meeting", "keyboard"],
    ),
    // Operators are upper-case words; lower-case ones are words ("not" is in one memory).
    (
        "dark and not friday",
        &[
            "prefers", "meeting", "cake", "standup", "keyboard", "sleep", "bus",
        ],
    ),
    ("\"could not\"", &["sleep"]),
];

/// Stores the memories; their ids by name.
async fn memories(h: &Harness) -> BTreeMap<&'static str, String> {
    let mut ids = BTreeMap::new();
    for (name, content) in MEMORIES {
        ids.insert(*name, h.store("u", content, "semantic").await);
    }
    ids
}

async fn search(h: &Harness, text: &str) -> Value {
    h.ok(
        "search_memories",
        json!({"userId": "u", "text": text, "limit": 100}),
    )
    .await
}

#[tokio::test]
async fn boolean_queries_find_exactly_their_memories() {
    let h = Harness::new();
    let ids = memories(&h).await;
    let name_of: BTreeMap<&str, &str> = ids.iter().map(|(n, id)| (id.as_str(), *n)).collect();
    let mut wrong = Vec::new();
    for (text, expected) in TABLE {
        let body = search(&h, text).await;
        let found: BTreeSet<&str> = body["data"]["memories"]
            .as_array()
            .expect("memories")
            .iter()
            .map(|m| name_of[m["id"].as_str().expect("id")])
            .collect();
        let expected: BTreeSet<&str> = expected.iter().copied().collect();
        if found != expected {
            wrong.push(format!("{text}: found {found:?}, expected {expected:?}"));
        }
        assert_eq!(body["data"]["totalCount"], expected.len(), "{text}");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[tokio::test]
async fn negated_words_are_neither_matched_nor_highlighted() {
    let h = Harness::new();
    let ids = memories(&h).await;
    let body = search(&h, "\"dark mode\" AND NOT Friday").await;
    let hit = &body["data"]["memories"][0];
    assert_eq!(hit["id"], ids["prefers"]);
    assert_eq!(hit["matchedTerms"], json!(["dark", "mode"]));
    assert_eq!(
        hit["highlight"],
        "User prefers <b>dark</b> <b>mode</b> for all applications"
    );
    // Found only for lacking "dark": nothing matched, the content's start shown, ranked by
    // the one positive word (0 for the memories it is not in).
    let body = search(&h, "chocolate OR NOT dark").await;
    for hit in body["data"]["memories"].as_array().expect("memories") {
        let cake = hit["id"] == ids["cake"];
        assert_eq!(hit["matchedTerms"] == json!(["chocol"]), cake, "{hit:#}");
        assert_eq!(hit["rank"] == 1.0, cake, "{hit:#}");
        assert!(!hit["highlight"].as_str().unwrap_or("").contains("dark</b>"));
    }
    // A negation alone ranks every memory it finds alike.
    let body = search(&h, "NOT Friday").await;
    for hit in body["data"]["memories"].as_array().expect("memories") {
        assert_eq!(hit["rank"], 1.0, "{hit:#}");
        assert_eq!(hit["matchedTerms"], json!([]), "{hit:#}");
    }
}

#[tokio::test]
async fn malformed_queries_are_refused_with_what_is_wrong_and_a_reading() {
    let h = Harness::new();
    memories(&h).await;
    for (text, error, suggestion) in [
        (
            "\"dark mode\" AND (Friday",
            "the '(' at character 17 is never closed",
            "e.g. \"dark mode\" AND Friday (",
        ),
        (
            "dark mode\"",
            "the '\"' at character 10 is never closed",
            "e.g. dark mode (",
        ),
        (
            "dark AND",
            "'AND' at character 6 has nothing to apply to",
            "e.g. dark (",
        ),
        ("OR dark", "'OR' at character 1", "e.g. dark ("),
        (
            "dark) mode",
            "the ')' at character 5 closes nothing",
            "e.g. dark mode (",
        ),
        ("dark - Friday", "'-' at character 6", "e.g. dark Friday ("),
        ("AND", "'AND' at character 1", "give at least one word"),
    ] {
        let refused = h
            .call("search_memories", json!({"userId": "u", "text": text}))
            .await;
        assert_eq!(
            refused.status,
            OutcomeStatus::Rejected,
            "{text}: {:#}",
            refused.body
        );
        let body = &refused.body;
        assert_eq!(body["success"], false, "{text}");
        let got = body["error"].as_str().unwrap_or("");
        assert!(got.starts_with("Invalid search query: "), "{text}: {got}");
        assert!(got.contains(error), "{text}: {got}");
        let hint = body["suggestion"].as_str().unwrap_or("");
        assert!(hint.contains(suggestion), "{text}: {hint}");
    }
}
