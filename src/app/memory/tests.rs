//! The memory tools through the real writer on sled in a temp dir: the seed's shapes and error
//! texts, owner isolation, supersede, decay and reinforcement from recorded times, soft and
//! hard deletes (the hard one leaves no byte of the content in the data dir and the ledger
//! still verifies). Re-execution of memory calls is proven in `app::tests` (it names the
//! replay family) with this harness.

use chrono::{DateTime, Duration, TimeZone, Utc};
use serde_json::{Value, json};

use crate::app::{App, AppConfig, Command};
use crate::effects::{Effects, FixedEffects};
use crate::events::{Actor, OutcomeStatus, SessionId};
use crate::ledger::{
    Committed, LedgerHandle, SledStore, TextState, WriterConfig, open_ledger, verify,
};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, 9, 0, 0)
        .single()
        .expect("a valid time")
}

pub(crate) struct Harness {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) ledger: LedgerHandle<App>,
    pub(crate) connection: SessionId,
}

impl Harness {
    pub(crate) fn new() -> Self {
        Self::open(tempfile::tempdir().expect("temp dir"), SessionId::random())
    }

    /// The ledger in `dir` (created when empty) with its memory index beside it, as the server
    /// lays them out; calls come from `connection`.
    fn open(dir: tempfile::TempDir, connection: SessionId) -> Self {
        let store = SledStore::reopen(&dir.path().join("ledger"));
        let app =
            App::new(AppConfig::default()).with_memory_index_dir(dir.path().join("memory-index"));
        let ledger = open_ledger(store, app, WriterConfig::default()).expect("open");
        Self {
            dir,
            ledger,
            connection,
        }
    }

    /// Calls `tool` as the MCP layer does: the argument the tool embeds is embedded first.
    async fn call_at(&self, at: DateTime<Utc>, tool: &str, arguments: Value) -> Committed {
        let effects = FixedEffects::new(at, [9; 32]);
        let field = match tool {
            "store_memory" | "update_memory" => Some("content"),
            "retrieve_memories" => Some("text"),
            _ => None,
        };
        let text = field.and_then(|f| arguments.get(f)).and_then(Value::as_str);
        let prepared = effects.prepare_embedding(text);
        let actor = Actor {
            principal: "local".into(),
            transport: "test".into(),
            client_name: None,
            client_version: None,
            role: Default::default(),
            user_ids: Vec::new(),
        };
        let mut command =
            Command::tool_call(tool, arguments, actor, self.connection.clone(), prepared);
        // As the MCP layer does: the waypoints' nearest memories found off the writer first.
        let view = self
            .ledger
            .view_after(crate::ledger::Admitted::default())
            .await
            .expect("a view of state");
        view.precompute(&mut command);
        self.ledger.submit(command).await.expect("recorded")
    }

    pub(crate) async fn call(&self, tool: &str, arguments: Value) -> Committed {
        self.call_at(t0(), tool, arguments).await
    }

    pub(crate) async fn ok(&self, tool: &str, arguments: Value) -> Value {
        let c = self.call(tool, arguments).await;
        assert_eq!(c.status, OutcomeStatus::Ok, "{tool}: {:#}", c.body);
        assert_eq!(c.body["success"], true);
        c.body
    }

    async fn refused(&self, tool: &str, arguments: Value) -> Value {
        let c = self.call(tool, arguments).await;
        assert_eq!(c.status, OutcomeStatus::Rejected, "{tool}: {:#}", c.body);
        assert_eq!(c.body["success"], false);
        c.body
    }

    pub(crate) async fn store(&self, user: &str, content: &str, sector: &str) -> String {
        let body = self
            .ok(
                "store_memory",
                json!({"content": content, "userId": user, "sessionId": "s-1",
                       "primarySector": sector}),
            )
            .await;
        body["data"]["memoryId"]
            .as_str()
            .expect("memoryId")
            .to_owned()
    }
}

#[tokio::test]
async fn store_and_retrieve_have_the_seeds_shapes() {
    let h = Harness::new();
    let body = h
        .ok(
            "store_memory",
            json!({"content": "User prefers dark mode for all applications",
                   "userId": "user-123", "sessionId": "session-456",
                   "primarySector": "semantic",
                   "metadata": {"keywords": ["preference", "dark mode", "ui"],
                                "tags": ["settings", "user-preference"],
                                "category": "preferences", "importance": 0.8}}),
        )
        .await;
    let data = &body["data"];
    assert!(data["memoryId"].as_str().unwrap().starts_with("mem-"));
    assert_eq!(data["embeddingsGenerated"], 1);
    assert_eq!(data["salience"], 0.8);
    assert_eq!(data["strength"], 1.0);
    assert_eq!(body["metadata"]["timestamp"], "2026-11-25T09:00:00.000000Z");
    assert!(body["metadata"]["componentsUsed"].is_array());
    h.store(
        "user-123",
        "The user felt frustrated by the bright light theme yesterday",
        "episodic",
    )
    .await;

    let got = h
        .ok(
            "retrieve_memories",
            json!({"userId": "user-123", "text": "dark mode preference",
                   "sectors": ["semantic", "episodic"], "minStrength": 0.5, "limit": 10}),
        )
        .await;
    let first = &got["data"]["memories"][0];
    assert_eq!(
        first["content"],
        "User prefers dark mode for all applications"
    );
    for field in [
        "id",
        "content",
        "createdAt",
        "lastAccessed",
        "strength",
        "salience",
        "primarySector",
        "metadata",
        "score",
    ] {
        assert!(!first[field].is_null(), "{field} missing: {first:#}");
    }
    assert_eq!(
        first["metadata"]["tags"],
        json!(["settings", "user-preference"])
    );
    let id = first["id"].as_str().unwrap();
    assert_eq!(got["data"]["scores"][id], first["score"]);
    assert!(got["data"]["totalCount"].as_u64().unwrap() >= 1);

    let found = h
        .ok(
            "search_memories",
            json!({"userId": "user-123", "text": "dark AND mode",
                   "metadata": {"tags": ["settings"]}, "limit": 20}),
        )
        .await;
    assert_eq!(found["data"]["searchType"], "full-text");
    assert_eq!(found["data"]["totalCount"], 1);
    let hit = &found["data"]["memories"][0];
    assert_eq!(
        hit["highlight"],
        "User prefers <b>dark</b> <b>mode</b> for all applications"
    );
    assert_eq!(hit["matchedTerms"], json!(["dark", "mode"]));
    assert_eq!(hit["rank"], 1.0);
}

#[tokio::test]
async fn bad_input_gets_the_seeds_error_texts_and_changes_nothing() {
    let h = Harness::new();
    let id = h.store("u", "A fact worth keeping", "semantic").await;
    let cases = [
        (
            "store_memory",
            json!({"content": "  ", "userId": "u", "sessionId": "s", "primarySector": "semantic"}),
            "Content cannot be empty",
        ),
        (
            "store_memory",
            json!({"content": "x", "userId": "u", "sessionId": "s", "primarySector": "spatial"}),
            "Invalid sector",
        ),
        (
            "store_memory",
            json!({"content": "x", "sessionId": "s", "primarySector": "semantic"}),
            "Missing required parameter: userId",
        ),
        (
            "retrieve_memories",
            json!({"userId": "u", "limit": 0}),
            "limit must be between 1 and 100",
        ),
        (
            "retrieve_memories",
            json!({"userId": "u", "sectors": ["nope"]}),
            "Invalid sector",
        ),
        (
            "update_memory",
            json!({"memoryId": "mem-0000000000000000", "userId": "u", "strength": 0.5}),
            "Memory not found",
        ),
        (
            "delete_memory",
            json!({"memoryId": id, "userId": "someone-else"}),
            "Memory not found",
        ),
    ];
    for (tool, args, error) in cases {
        let body = h.refused(tool, args).await;
        assert_eq!(body["error"], error, "{body:#}");
        assert!(!body["suggestion"].as_str().unwrap().is_empty());
    }
    let all = h.ok("retrieve_memories", json!({"userId": "u"})).await;
    assert_eq!(all["data"]["totalCount"], 1, "nothing changed: {all:#}");
}

#[tokio::test]
async fn a_memory_of_one_owner_never_reaches_another() {
    let h = Harness::new();
    let alice = h
        .store("alice", "Alice's locker code is 4417", "semantic")
        .await;
    h.store("bob", "Bob likes locker rooms", "semantic").await;
    for tool in ["retrieve_memories", "search_memories"] {
        let got = h
            .ok(tool, json!({"userId": "bob", "text": "Alice locker code"}))
            .await;
        let ids: Vec<&str> = got["data"]["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert!(!ids.contains(&alice.as_str()), "{tool}: {got:#}");
        assert!(!got.to_string().contains("4417"));
    }
    for (tool, args) in [
        (
            "update_memory",
            json!({"memoryId": alice, "userId": "bob", "content": "mine now"}),
        ),
        ("delete_memory", json!({"memoryId": alice, "userId": "bob"})),
    ] {
        assert_eq!(h.refused(tool, args).await["error"], "Memory not found");
    }
    let still = h
        .ok(
            "search_memories",
            json!({"userId": "alice", "text": "4417"}),
        )
        .await;
    assert_eq!(still["data"]["totalCount"], 1);
}

#[tokio::test]
async fn an_update_supersedes_and_the_old_version_stays_in_the_log() {
    let h = Harness::new();
    let stored = h
        .call(
            "store_memory",
            json!({"content": "The office is on the third floor", "userId": "u",
                   "sessionId": "s", "primarySector": "semantic"}),
        )
        .await;
    let first_store = stored.seq;
    let id = stored.body["data"]["memoryId"].as_str().unwrap().to_owned();
    let body = h
        .ok(
            "update_memory",
            json!({"memoryId": id, "userId": "u", "content": "The office moved to the fifth floor",
                   "strength": 0.95, "metadata": {"importance": 0.9}}),
        )
        .await;
    assert_eq!(body["data"]["embeddingsRegenerated"], true);
    assert_eq!(body["data"]["strength"], 0.95);
    assert_eq!(body["data"]["salience"], 0.9);
    let now = h
        .ok("search_memories", json!({"userId": "u", "text": "floor"}))
        .await;
    assert_eq!(now["data"]["totalCount"], 1);
    assert_eq!(
        now["data"]["memories"][0]["content"],
        "The office moved to the fifth floor"
    );
    let old = h
        .ok("search_memories", json!({"userId": "u", "text": "third"}))
        .await;
    assert_eq!(old["data"]["totalCount"], 0);
    // Both versions' texts are in the ledger.
    let texts = h
        .ledger
        .inspect(move |view| {
            let event: Value =
                serde_json::from_slice(&view.event_bytes(first_store).unwrap()).unwrap();
            let c = event["call"]["arguments"]["content"]["textCommitment"]
                .as_str()
                .unwrap()
                .to_owned();
            let bytes = crate::ledger::hash::parse_hex32(&c).unwrap();
            matches!(view.text(&bytes), Ok(TextState::Present(r)) if r.text.contains("third"))
        })
        .await
        .unwrap();
    assert!(texts, "the first version's text is kept");
}

#[tokio::test]
async fn strength_decays_from_recorded_times_and_access_reinforces_it() {
    let h = Harness::new();
    h.store("u", "We met the vendor in Lisbon", "episodic")
        .await;
    let later = t0() + Duration::days(100);
    let got = h
        .call_at(later, "retrieve_memories", json!({"userId": "u"}))
        .await;
    let m = &got.body["data"]["memories"][0];
    let decayed = (-0.015f64 * 100.0).exp();
    let strength = m["strength"].as_f64().unwrap();
    assert!((strength - (decayed + 0.1)).abs() < 1e-9, "{strength}");
    // Soft delete hides it; minStrength 0 shows it; a new strength restores it.
    let id = m["id"].as_str().unwrap().to_owned();
    h.ok(
        "delete_memory",
        json!({"memoryId": id, "userId": "u", "soft": true}),
    )
    .await;
    let hidden = h.ok("retrieve_memories", json!({"userId": "u"})).await;
    assert_eq!(hidden["data"]["totalCount"], 0);
    let shown = h
        .ok(
            "retrieve_memories",
            json!({"userId": "u", "minStrength": 0}),
        )
        .await;
    assert_eq!(shown["data"]["memories"][0]["strength"], 0.0);
    h.ok(
        "update_memory",
        json!({"memoryId": id, "userId": "u", "strength": 0.7}),
    )
    .await;
    let back = h.ok("retrieve_memories", json!({"userId": "u"})).await;
    assert_eq!(back["data"]["totalCount"], 1);
}

/// Every file under `dir` that holds `needle`.
fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .unwrap()
                .windows(needle.len())
                .any(|w| w == needle)
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[tokio::test]
async fn a_hard_delete_leaves_no_byte_of_the_content_and_the_ledger_verifies() {
    let h = Harness::new();
    let secret = "Zanzibarian quokkas prefer kumquats";
    let id = h.store("u", secret, "semantic").await;
    h.ok(
        "update_memory",
        json!({"memoryId": id, "userId": "u",
               "content": "Zanzibarian quokkas now prefer persimmons",
               "metadata": {"tags": ["quokkafacts"], "context": "from the zookeeper"}}),
    )
    .await;
    h.store("u", "An unrelated note about the weather", "semantic")
        .await;
    h.ok(
        "retrieve_memories",
        json!({"userId": "u", "text": "weather"}),
    )
    .await;
    let body = h
        .ok("delete_memory", json!({"memoryId": id, "userId": "u"}))
        .await;
    assert_eq!(body["data"]["deletionType"], "hard");
    assert_eq!(
        body["data"]["message"],
        "Memory and all related data removed"
    );
    assert_eq!(
        h.refused(
            "update_memory",
            json!({"memoryId": id, "userId": "u", "strength": 1})
        )
        .await["error"],
        "Memory not found"
    );
    let gone = h.ok("retrieve_memories", json!({"userId": "u"})).await;
    assert_eq!(gone["data"]["totalCount"], 1);

    let session = h.connection.clone();
    let Harness { dir, ledger, .. } = h;
    ledger.shutdown().await;
    for needle in [
        "Zanzibarian",
        "quokka",
        "kumquats",
        "persimmons",
        "quokkafacts",
        "zookeeper",
    ] {
        let holding = files_holding(dir.path(), needle.as_bytes());
        assert!(holding.is_empty(), "{needle} still in {holding:?}");
    }
    assert!(
        !files_holding(dir.path(), b"weather").is_empty(),
        "the search looks at the right files"
    );
    let store = SledStore::reopen(&dir.path().join("ledger"));
    let report = verify::verify(&store).expect("verify");
    assert!(report.problems.is_empty(), "{report:?}");
    drop(store);

    // Reopened, the server shows the same memories.
    let h = Harness::open(dir, session);
    let after = h
        .ok("search_memories", json!({"userId": "u", "text": "weather"}))
        .await;
    assert_eq!(after["data"]["totalCount"], 1);
    let none = h
        .ok(
            "retrieve_memories",
            json!({"userId": "u", "minStrength": 0}),
        )
        .await;
    assert_eq!(none["data"]["totalCount"], 1, "{none:#}");
}

/// A snapshot of memories loads back equal, with the texts the fold shares shared again: each
/// memory's id is the map's key and every waypoint naming it, one owner name, one text per
/// sector name, keyword and session (what keeps a loaded state as small as a folded one).
#[tokio::test]
async fn a_snapshot_of_memories_loads_back_equal_and_sharing_its_texts() {
    let h = Harness::new();
    for i in 0..6 {
        h.store(
            "u-1",
            &format!("Alice reviewed the billing service on Monday, note {i}"),
            "episodic",
        )
        .await;
    }
    let view = h
        .ledger
        .view_after(crate::ledger::Admitted::default())
        .await
        .expect("view");
    let bytes = view.save_snapshot().expect("saved");
    // The stores started their caller's session, whose body a server reads from its log.
    struct NoLog;
    impl crate::ledger::SessionLog for NoLog {
        fn session_seqs(&self, _: &SessionId) -> Result<Vec<u64>, crate::ledger::LedgerError> {
            Ok(Vec::new())
        }
        fn event_bytes(&self, _: u64) -> Result<Option<Vec<u8>>, crate::ledger::LedgerError> {
            Ok(None)
        }
        fn text(
            &self,
            _: &[u8; 32],
        ) -> Result<Option<crate::ledger::TextRecord>, crate::ledger::LedgerError> {
            Ok(None)
        }
    }
    let mut loaded = App::new(AppConfig::default());
    crate::ledger::Decider::attach_log(&mut loaded, std::sync::Arc::new(NoLog));
    loaded.load_snapshot(&bytes).expect("loaded");
    let (before, after) = (
        view.memories().owner("u-1").expect("owner"),
        loaded.memories().owner("u-1").expect("owner"),
    );
    assert_eq!(before, after);
    let memories: Vec<_> = after.memories.iter().collect();
    assert!(
        memories.iter().any(|(_, m)| !m.links.is_empty()),
        "no waypoints made"
    );
    let first = memories[0].1;
    let mut words: std::collections::HashMap<String, std::sync::Arc<str>> = Default::default();
    for (_, m) in &memories {
        let texts = m.metadata.keywords.iter().chain([&m.context_session_id]);
        for text in texts {
            let one = words
                .entry(text.to_string())
                .or_insert_with(|| text.clone());
            assert!(std::sync::Arc::ptr_eq(one, text), "{text} is a copy");
        }
    }
    assert!(words.contains_key("alice"), "{words:?}");
    for (id, m) in &memories {
        assert!(std::sync::Arc::ptr_eq(id, &m.id));
        assert!(std::sync::Arc::ptr_eq(&first.user_id, &m.user_id));
        assert!(std::sync::Arc::ptr_eq(
            &first.primary_sector,
            &m.primary_sector
        ));
        for (other, _) in m.links.iter() {
            let (key, _) = after.memories.get_key_value(&**other).expect("linked");
            assert!(std::sync::Arc::ptr_eq(key, other), "{other} is a copy");
        }
    }
}

/// How [`Harness::stop`] ends its ledger.
enum Stop {
    /// `shutdown`: synced, the last snapshot taken, the index committed.
    Shutdown,
    /// Every handle dropped without a shutdown; the writer is given 300 ms to exit.
    Dropped,
}

impl Harness {
    /// Ends the ledger and gives back what [`Harness::open`] starts it again on.
    async fn stop(self, how: Stop) -> (tempfile::TempDir, SessionId) {
        let Harness {
            dir,
            ledger,
            connection,
        } = self;
        match how {
            Stop::Shutdown => ledger.shutdown().await,
            Stop::Dropped => {
                drop(ledger);
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            }
        }
        (dir, connection)
    }
}

/// The segment files of the memory index's directory.
fn index_segments(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
    std::fs::read_dir(dir.join("memory-index"))
        .expect("index dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".idx"))
        .collect()
}

/// After a restart the index on disk is reopened (its segments kept, answers the same) when
/// it is at the state's seq; a memory stored after its last commit makes it stale, and the
/// next start rebuilds it, with that memory found. A ledger whose handles are all dropped
/// commits it as its writer exits.
#[tokio::test]
async fn a_restart_reopens_the_index_at_the_states_seq_and_rebuilds_a_stale_one() {
    let h = Harness::new();
    for (i, content) in [
        "Alice reviewed the billing service on Monday",
        "Bruno fixed the search index on Tuesday",
        "Chen migrated the onboarding flow to the new stack",
    ]
    .into_iter()
    .enumerate()
    {
        h.store("u", &format!("{content} ({i})"), "episodic").await;
    }
    let query = json!({"userId": "u", "text": "who fixed the search index"});
    let ids = |body: &Value| -> Vec<String> {
        body["data"]["memories"]
            .as_array()
            .expect("memories")
            .iter()
            .map(|m| m["id"].as_str().expect("id").to_owned())
            .collect()
    };
    let before = ids(&h.ok("search_memories", query.clone()).await);
    assert!(!before.is_empty());

    let (dir, connection) = h.stop(Stop::Shutdown).await;
    let segments = index_segments(dir.path());
    assert!(!segments.is_empty());
    let h = Harness::open(dir, connection);
    assert_eq!(ids(&h.ok("search_memories", query.clone()).await), before);
    assert_eq!(
        index_segments(h.dir.path()),
        segments,
        "the index was rebuilt, not reopened"
    );

    // A kill after a store and before the index's next commit leaves the index one commit
    // behind the state: its files from before the store are put back after a clean stop.
    let stale = copy_index(h.dir.path());
    let late = h
        .store(
            "u",
            "Dana fixed the search index again on Friday",
            "episodic",
        )
        .await;
    let (dir, connection) = h.stop(Stop::Shutdown).await;
    let index = dir.path().join("memory-index");
    std::fs::remove_dir_all(&index).expect("remove the index");
    std::fs::rename(stale.path(), &index).expect("put the old index back");
    let stale_segments = index_segments(dir.path());
    let h = Harness::open(dir, connection);
    let after = ids(&h.ok("search_memories", query.clone()).await);
    assert!(after.contains(&late), "{after:?}");
    assert!(after.len() > before.len());
    assert_ne!(
        index_segments(h.dir.path()),
        stale_segments,
        "the stale index was rebuilt"
    );

    // Every handle dropped without a shutdown: the writer still commits the index as it
    // exits, so the next start reopens it.
    let latest = h
        .store("u", "Emeka fixed the search index for good", "episodic")
        .await;
    let (dir, connection) = h.stop(Stop::Dropped).await;
    let segments = index_segments(dir.path());
    let h = Harness::open(dir, connection);
    let found = ids(&h.ok("search_memories", query).await);
    assert!(found.contains(&latest), "{found:?}");
    assert_eq!(
        index_segments(h.dir.path()),
        segments,
        "the index committed at exit was reopened"
    );
}

/// A copy of the memory index's directory (its files; it has no subdirectories).
fn copy_index(data_dir: &std::path::Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir_in(data_dir).expect("a dir for the copy");
    for entry in std::fs::read_dir(data_dir.join("memory-index")).expect("index dir") {
        let entry = entry.expect("entry");
        if entry.file_type().expect("type").is_file() {
            std::fs::copy(entry.path(), copy.path().join(entry.file_name())).expect("copy");
        }
    }
    copy
}

/// Memory calls made outside any thinking session start their caller's current session, so
/// `thinkledger sessions`, replay and export find them (they were recorded against a session
/// that never started, and so listed nowhere).
#[tokio::test]
async fn memory_calls_without_a_thinking_session_start_the_callers_session() {
    let h = Harness::new();
    let stored = h
        .ok(
            "store_memory",
            json!({"content": "Prefers dark mode", "userId": "u", "sessionId": "chat-7",
                   "primarySector": "semantic"}),
        )
        .await;
    let id = stored["data"]["memoryId"].as_str().expect("id").to_owned();
    h.ok("search_memories", json!({"userId": "u", "text": "dark"}))
        .await;
    h.ok(
        "update_memory",
        json!({"memoryId": id, "userId": "u", "strength": 0.5}),
    )
    .await;
    let connection = h.connection.clone();
    let seen = h
        .ledger
        .query(Box::new(move |app: &App| {
            let state = app.state();
            let listed: Vec<String> = state.heads().map(|s| s.id.to_string()).collect();
            json!({"listed": listed, "events": state.head(&connection).map_or(0, |s| s.events)})
        }))
        .await
        .expect("query");
    assert_eq!(seen["listed"], json!([h.connection.to_string()]));
    assert_eq!(seen["events"], 3, "every memory call counts in the session");
}
