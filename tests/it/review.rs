//! The reviewer's page (`/review`) over real HTTP on 127.0.0.1: a ledger on disk, sessions
//! written through `ThinkServer::call` as principals alice and bob (as an MCP client's calls
//! are), tokens made in the data dir's token file, and reqwest as the browser (cookies by
//! hand, redirects not followed, so each answer is seen as sent).

use std::collections::HashMap;
use std::sync::Arc;

use chrono::Utc;
use serde_json::{Value, json};
use thinkledger::app::{App, AppConfig, Command, ERASE_TOOL, SEQUENTIALTHINKING_TOOL, TAG_TOOL};
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::events::{Actor, SessionId};
use thinkledger::ledger::LedgerHandle;
use thinkledger::server::auth::{Authenticator, NewToken, TokenRecord, TokenRole, TokenStore};
use thinkledger::server::review::{COOKIE_NAME, Viewers};
use thinkledger::server::{self, HttpConfig};
use thinkledger::tools::quotas::{QuotaLimits, Quotas};
use thinkledger::tools::{
    Call, Catalog, EnabledToolsets, Reporter, Role, SessionSlot, ThinkServer, Toolsets,
};
use tokio_util::sync::CancellationToken;

use crate::common::HttpServer;

/// The hostile thought: must reach every page as text.
pub const HOSTILE: &str = "<script>alert(1)</script> & \"quoted\"";
/// The thought only the second session of alice has.
pub const ADDED: &str = "An added thought about rollback";

/// A ledger with sessions of alice and bob, a token each (and one for auditor carol), and the
/// review router served on 127.0.0.1.
pub struct Rig {
    /// The data dir (ledger, key, tokens), removed when the rig is dropped.
    _dir: tempfile::TempDir,
    pub ledger: LedgerHandle<App>,
    pub store: TokenStore,
    pub tokens: HashMap<&'static str, (String, TokenRecord)>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// alice's session with the hostile thought, a branch, a revision and a deliberation beside.
    pub alice: String,
    /// alice's second session: the first's main line plus [`ADDED`].
    pub alice_again: String,
    /// alice's session whose texts were erased.
    pub alice_erased: String,
    /// alice's deliberation session.
    pub alice_deliberation: String,
    pub bob: String,
    shutdown: CancellationToken,
}

pub fn actor(principal: &str) -> Actor {
    Actor {
        principal: principal.into(),
        transport: "test".into(),
        client_name: Some("review-test".into()),
        client_version: None,
        role: Role::Member,
        user_ids: Vec::new(),
    }
}

/// One recorded call as `principal` in the session `slot` holds; its structured body.
pub async fn call(
    server: &ThinkServer,
    principal: &str,
    slot: &SessionSlot,
    tool: &str,
    args: Value,
) -> Value {
    let call = Call {
        tool: tool.into(),
        arguments: args,
        actor: actor(principal),
        slot: slot.clone(),
        toolsets: EnabledToolsets::new(Toolsets::all()),
        idempotency_key: None,
        reporter: Reporter::silent(),
        origin: Default::default(),
    };
    let result = server.call(call, None).await;
    assert_ne!(result.is_error, Some(true), "{tool} refused: {result:?}");
    result.structured_content.expect("a structured body")
}

pub async fn think(
    server: &ThinkServer,
    principal: &str,
    slot: &SessionSlot,
    (number, total): (u32, u32),
    thought: &str,
    extra: Value,
) -> String {
    let mut args = json!({
        "thought": thought, "thoughtNumber": number, "totalThoughts": total,
        "nextThoughtNeeded": number < total,
    });
    if let (Value::Object(args), Value::Object(extra)) = (&mut args, extra) {
        args.extend(extra);
    }
    let body = call(server, principal, slot, SEQUENTIALTHINKING_TOOL, args).await;
    body["sessionId"].as_str().expect("sessionId").to_owned()
}

fn token(
    store: &TokenStore,
    principal: &str,
    role: TokenRole,
    secret: u8,
) -> (String, TokenRecord) {
    let new = NewToken {
        principal: principal.into(),
        role,
        user_ids: Vec::new(),
        expires_at: None,
    };
    store
        .create(new, &[secret; 32], Utc::now())
        .expect("make a token")
}

impl Rig {
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let ledger = server::open(dir.path(), AppConfig::default()).expect("open the ledger");
        let catalog = Arc::new(Catalog::new(Toolsets::all()));
        let think_server = ThinkServer::new(ledger.clone(), catalog.clone(), "test");

        let first = SessionSlot::fresh();
        let alice = think(&think_server, "alice", &first, (1, 4), HOSTILE, json!({})).await;
        think(
            &think_server,
            "alice",
            &first,
            (2, 4),
            "Check the backups first",
            json!({}),
        )
        .await;
        think(
            &think_server,
            "alice",
            &first,
            (3, 4),
            "Alternative: restore into a <staging> copy",
            json!({ "branchFromThought": 2, "branchId": "alt<b>&" }),
        )
        .await;
        think(
            &think_server,
            "alice",
            &first,
            (4, 4),
            "Revised: the script tag above is only text",
            json!({ "isRevision": true, "revisesThought": 1 }),
        )
        .await;

        let tag = json!({ "sessionId": alice, "thoughtNumber": 2, "add": ["<i>risky</i>"] });
        call(&think_server, "alice", &first, TAG_TOOL, tag).await;

        let second = SessionSlot::fresh();
        let alice_again = think(&think_server, "alice", &second, (1, 4), HOSTILE, json!({})).await;
        think(
            &think_server,
            "alice",
            &second,
            (2, 4),
            "Check the backups first",
            json!({}),
        )
        .await;
        let revised = "Revised: the script tag above is only text";
        think(&think_server, "alice", &second, (3, 4), revised, json!({})).await;
        think(&think_server, "alice", &second, (4, 4), ADDED, json!({})).await;

        let third = SessionSlot::fresh();
        let alice_erased = think(
            &think_server,
            "alice",
            &third,
            (1, 1),
            "A customer's name",
            json!({}),
        )
        .await;
        let mut erase = Command::tool_call(
            ERASE_TOOL,
            json!({ "sessionId": alice_erased, "reason": "subject request <#42>" }),
            actor("operator"),
            SessionId::random(),
            SystemEffects.prepare(),
        );
        erase.admin = true;
        ledger.submit(erase).await.expect("erase");

        let fourth = SessionSlot::fresh();
        let started = call(
            &think_server,
            "alice",
            &fourth,
            "start_deliberation",
            json!({ "goal": "Restore <img src=x onerror=alert(2)> within an hour?", "mode": "Test", "profile": "balanced" }),
        )
        .await;
        let alice_deliberation = started["session_id"]
            .as_str()
            .expect("session_id")
            .to_owned();
        let args = json!({ "session_id": alice_deliberation, "content": "Replay WAL </text><script>alert(3)</script>" });
        call(&think_server, "alice", &fourth, "add_thought_node", args).await;
        let args = json!({ "session_id": alice_deliberation, "count": 2 });
        call(&think_server, "alice", &fourth, "expand_thoughts", args).await;
        let args = json!({ "session_id": alice_deliberation, "content": "Measured in the drill",
            "edges": [{ "to": "node-2", "edge_type": "supports" }] });
        call(&think_server, "alice", &fourth, "add_thought_node", args).await;

        let bobs = SessionSlot::fresh();
        let bob = think(
            &think_server,
            "bob",
            &bobs,
            (1, 1),
            "Bob's private plan",
            json!({}),
        )
        .await;

        let store = TokenStore::in_dir(dir.path());
        let mut tokens = HashMap::new();
        tokens.insert("alice", token(&store, "alice", TokenRole::Member, 1));
        tokens.insert("bob", token(&store, "bob", TokenRole::Member, 2));
        tokens.insert("carol", token(&store, "carol", TokenRole::Auditor, 3));

        let viewers = Viewers::Tokens(Arc::new(Authenticator::new(store.clone())));
        let quotas = Arc::new(Quotas::new(QuotaLimits::default()));
        let router = server::review::router(
            ledger.clone(),
            catalog,
            viewers,
            &HttpConfig::default(),
            quotas,
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("address"));
        let shutdown = CancellationToken::new();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            axum::serve(listener, router)
                .with_graceful_shutdown(async move { stop.cancelled().await })
                .await
        });
        Self {
            _dir: dir,
            ledger,
            store,
            tokens,
            base,
            alice,
            alice_again,
            alice_erased,
            alice_deliberation,
            bob,
            shutdown,
        }
    }

    pub fn token(&self, who: &str) -> &str {
        &self.tokens[who].0
    }

    pub async fn stop(self) {
        self.shutdown.cancel();
        self.ledger.shutdown().await;
    }
}

/// A client that shows redirects instead of following them.
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("http client")
}

/// `POST /review/login` with `token`.
async fn log_in(rig: &Rig, token: &str) -> reqwest::Response {
    client()
        .post(format!("{}/review/login", rig.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}"))
        .send()
        .await
        .expect("POST /review/login")
}

/// `GET path` with the review cookie holding `token`: status, headers, body.
pub async fn get(
    rig: &Rig,
    token: Option<&str>,
    path: &str,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut request = client().get(format!("{}{path}", rig.base));
    if let Some(token) = token {
        request = request.header("cookie", format!("{COOKIE_NAME}={token}"));
    }
    let response = request.send().await.expect("GET");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.expect("body"))
}

fn location(headers: &reqwest::header::HeaderMap) -> &str {
    headers
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// The `<svg id="ID" …>…</svg>` element of `page`, parsed as XML.
pub fn svg_of<'p>(page: &'p str, id: &str) -> &'p str {
    let start = page
        .find(&format!("<svg id=\"{id}\""))
        .unwrap_or_else(|| panic!("no svg #{id} in the page"));
    let end = start + page[start..].find("</svg>").expect("</svg>") + "</svg>".len();
    &page[start..end]
}

#[tokio::test]
async fn login_keeps_the_token_in_an_httponly_strict_cookie_checked_on_every_request() {
    let rig = Rig::start().await;

    // No cookie: to the login form; the download is refused outright.
    let (status, headers, _) = get(&rig, None, "/review").await;
    assert_eq!(status, 303);
    assert_eq!(location(&headers), "/review/login");
    let (status, _, _) = get(&rig, None, &format!("/review/session/{}/export", rig.alice)).await;
    assert_eq!(status, 401);
    let (status, headers, form) = get(&rig, None, "/review/login").await;
    assert_eq!(status, 200);
    assert!(form.contains("name=\"token\""), "{form}");
    assert!(!form.contains("<script"), "no script on any page");
    // Every answer carries the security headers.
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("form-action 'self'"),
        "{csp}"
    );
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["x-frame-options"], "DENY");

    // A wrong token: refused, no cookie.
    let refused = log_in(&rig, "tlk_not-a-token").await;
    assert_eq!(refused.status().as_u16(), 401);
    assert!(refused.headers().get("set-cookie").is_none());

    // The right one: a cookie for /review only, out of scripts' reach, never sent cross-site.
    let accepted = log_in(&rig, rig.token("alice")).await;
    assert_eq!(accepted.status().as_u16(), 303);
    assert_eq!(location(accepted.headers()), "/review");
    let cookie = accepted.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        cookie.starts_with(&format!("{COOKIE_NAME}={}", rig.token("alice"))),
        "{cookie}"
    );
    for part in ["HttpOnly", "SameSite=Strict", "Path=/review"] {
        assert!(cookie.contains(part), "{part} missing: {cookie}");
    }

    // With it: alice's sessions, not bob's.
    let (status, _, list) = get(&rig, Some(rig.token("alice")), "/review").await;
    assert_eq!(status, 200);
    for own in [
        &rig.alice,
        &rig.alice_again,
        &rig.alice_erased,
        &rig.alice_deliberation,
    ] {
        assert!(list.contains(own.as_str()), "alice's {own} missing");
    }
    assert!(!list.contains(&rig.bob), "bob's session listed to alice");
    assert!(list.contains("Log out"));

    // Logging out clears the cookie.
    let out = client()
        .post(format!("{}/review/logout", rig.base))
        .send()
        .await
        .unwrap();
    assert_eq!(out.status().as_u16(), 303);
    assert!(
        out.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );

    // Revoked: the very next request is refused, page and download alike.
    rig.store
        .revoke(&rig.tokens["alice"].1.id, Utc::now())
        .expect("revoke");
    let (status, headers, _) = get(&rig, Some(rig.token("alice")), "/review").await;
    assert_eq!((status, location(&headers)), (303, "/review/login"));
    let export = format!("/review/session/{}/export", rig.alice);
    let (status, _, _) = get(&rig, Some(rig.token("alice")), &export).await;
    assert_eq!(status, 401);
    let again = log_in(&rig, rig.token("alice")).await;
    assert_eq!(again.status().as_u16(), 401);
    assert!(again.text().await.unwrap().contains("revoked"));
    rig.stop().await;
}

#[tokio::test]
async fn a_member_sees_only_its_own_sessions_and_an_auditor_sees_all() {
    let rig = Rig::start().await;
    let alice = Some(rig.token("alice"));

    // bob's session, a session that does not exist and a malformed id: one answer.
    let (status, _, of_bob) = get(&rig, alice, &format!("/review/session/{}", rig.bob)).await;
    assert_eq!(status, 404);
    let missing = "5e55a000-0000-4000-8000-00000000dead";
    let (status, _, of_nobody) = get(&rig, alice, &format!("/review/session/{missing}")).await;
    assert_eq!(status, 404);
    assert_eq!(
        of_bob, of_nobody,
        "another's session must look like a missing one"
    );
    let (_, _, malformed) = get(&rig, alice, "/review/session/not-an-id").await;
    assert_eq!(malformed, of_nobody);
    assert!(!of_bob.contains("Bob's private plan"));
    // The same for the download and the diff.
    let (status, _, _) = get(&rig, alice, &format!("/review/session/{}/export", rig.bob)).await;
    assert_eq!(status, 404);
    let (status, _, diff) = get(
        &rig,
        alice,
        &format!("/review/diff?a={}&b={}", rig.alice, rig.bob),
    )
    .await;
    assert_eq!((status, diff == of_nobody), (404, true));

    // bob sees his own and none of alice's.
    let (_, _, list) = get(&rig, Some(rig.token("bob")), "/review").await;
    assert!(
        list.contains(&rig.bob) && !list.contains(&rig.alice),
        "{list}"
    );

    // carol, an auditor, sees both, and can filter by principal.
    let carol = Some(rig.token("carol"));
    let (_, _, list) = get(&rig, carol, "/review").await;
    assert!(
        list.contains(&rig.bob) && list.contains(&rig.alice),
        "{list}"
    );
    let (_, _, only_bob) = get(&rig, carol, "/review?principal=bob").await;
    assert!(only_bob.contains(&rig.bob) && !only_bob.contains(&rig.alice));
    let (status, _, page) = get(&rig, carol, &format!("/review/session/{}", rig.bob)).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("Bob&#39;s private plan") || page.contains("Bob's private plan"),
        "{page}"
    );

    // The tool filter reads the sessions' recorded calls.
    let (_, _, deliberating) = get(&rig, carol, "/review?tool=add_thought_node").await;
    assert!(
        deliberating.contains(&rig.alice_deliberation),
        "{deliberating}"
    );
    assert!(!deliberating.contains(&rig.bob));
    // Dates: nothing started after the far future, everything active after the distant past.
    let (_, _, none) = get(&rig, carol, "/review?from=2999-01-01").await;
    assert!(none.contains("0 session(s)"), "{none}");
    let (_, _, all) = get(&rig, carol, "/review?from=2000-01-01&to=2999-12-31").await;
    assert!(all.contains(&rig.bob) && all.contains(&rig.alice));
    rig.stop().await;
}

#[tokio::test]
async fn caller_text_is_escaped_in_html_and_svg_and_the_drawings_are_well_formed() {
    let rig = Rig::start().await;
    let alice = Some(rig.token("alice"));
    let (status, _, page) = get(&rig, alice, &format!("/review/session/{}", rig.alice)).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quoted&quot;"),
        "{page}"
    );
    assert!(
        !page.contains("<script"),
        "a script element reached the page"
    );
    assert!(
        page.contains("alt&lt;b&gt;&amp;"),
        "the branch id is escaped"
    );
    assert!(
        page.contains("&lt;i&gt;risky&lt;/i&gt;") && !page.contains("<i>risky"),
        "the tag is escaped"
    );

    // The thought tree: XML that parses, four thoughts in two lanes, texts as written.
    let svg = svg_of(&page, "thought-tree");
    let doc = roxmltree::Document::parse(svg).expect("the thought tree is well-formed XML");
    let thoughts: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("thought"))
        .collect();
    assert_eq!(thoughts.len(), 4);
    let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(
        texts.iter().any(|t| t.contains("<script>alert(1)")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("branch alt<b>&")),
        "{texts:?}"
    );
    assert!(
        doc.descendants()
            .any(|n| n.attribute("class") == Some("branch-point"))
    );
    assert!(
        doc.descendants()
            .any(|n| n.attribute("class") == Some("revision"))
    );

    // The deliberation graph: nodes and typed edges, hostile content inert.
    let (status, _, page) = get(
        &rig,
        alice,
        &format!("/review/session/{}", rig.alice_deliberation),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        !page.contains("<script") && !page.contains("<img"),
        "markup reached the page"
    );
    let svg = svg_of(&page, "deliberation-graph");
    let doc = roxmltree::Document::parse(svg).expect("the deliberation graph is well-formed XML");
    let nodes = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("node"))
        .count();
    assert!(nodes >= 3, "{nodes} nodes: {svg}");
    let edges: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("edge"))
        .collect();
    assert!(!edges.is_empty(), "no typed edge drawn: {svg}");
    assert!(
        edges
            .iter()
            .any(|e| e.descendants().any(|t| t.text() == Some("supports")))
    );
    let titles: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
    assert!(
        titles.iter().any(|t| t.contains("</text><script>alert(3)")),
        "{titles:?}"
    );

    // Erased texts show as erased, with the erasure's reason.
    let (_, _, page) = get(
        &rig,
        alice,
        &format!("/review/session/{}", rig.alice_erased),
    )
    .await;
    assert!(page.contains("[text erased at seq"), "{page}");
    assert!(page.contains("subject request &lt;#42&gt;"), "{page}");
    assert!(!page.contains("A customer&#39;s name") && !page.contains("A customer's name"));
    let svg = svg_of(&page, "thought-tree");
    roxmltree::Document::parse(svg).expect("well-formed");
    assert!(svg.contains("[erased]"));

    // The timeline names every call with its principal.
    let (_, _, page) = get(&rig, alice, &format!("/review/session/{}", rig.alice)).await;
    let timeline = &page[page.find("id=\"timeline\"").expect("timeline")..];
    assert_eq!(
        timeline.matches("<td>alice <span class=\"note\">").count(),
        5,
        "{timeline}"
    );
    rig.stop().await;
}

#[tokio::test]
async fn the_export_downloads_as_json_the_diff_shows_an_added_thought_and_the_chain_status_is_checked()
 {
    let rig = Rig::start().await;
    let alice = Some(rig.token("alice"));
    let response = client()
        .get(format!("{}/review/session/{}/export", rig.base, rig.alice))
        .header("cookie", format!("{COOKIE_NAME}={}", rig.token("alice")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let disposition = response.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        disposition.starts_with("attachment;") && disposition.contains(&rig.alice),
        "{disposition}"
    );
    let export: Value = serde_json::from_slice(&response.bytes().await.unwrap()).expect("JSON");
    let events = export["events"].as_array().expect("events");
    assert_eq!(events.len(), 5, "four thoughts and a tag: {export}");
    assert!(export.to_string().contains(&rig.alice));

    let (status, _, page) = get(
        &rig,
        alice,
        &format!("/review/diff?a={}&b={}", rig.alice, rig.alice_again),
    )
    .await;
    assert_eq!(status, 200);
    let added = page.find("class=\"op-added\"").expect("an added row");
    assert!(page[added..].contains(ADDED), "{page}");
    assert!(page.contains(" added, "), "{page}");

    // Another site cannot make a browser download it (the download records a call).
    let cross = client()
        .get(format!("{}/review/session/{}/export", rig.base, rig.alice))
        .header("cookie", format!("{COOKIE_NAME}={}", rig.token("alice")))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(cross.status().as_u16(), 403);

    // An auditor's export of bob's session is allowed by the tools' own rule and recorded as
    // carol's call over the review transport, in carol's own session: not among bob's calls.
    let carol = Some(rig.token("carol"));
    let (status, _, _) = get(&rig, carol, &format!("/review/session/{}/export", rig.bob)).await;
    assert_eq!(status, 200);
    let (_, _, page) = get(&rig, carol, &format!("/review/session/{}", rig.bob)).await;
    let timeline = &page[page.find("id=\"timeline\"").expect("timeline")..];
    assert!(
        !timeline.contains("export_reasoning_audit") && !timeline.contains("<td>carol</td>"),
        "{timeline}"
    );

    // The export signed a checkpoint: the status page checks it against the live tree.
    let (status, _, page) = get(&rig, alice, "/review/verify").await;
    assert_eq!(status, 200);
    assert!(page.contains("Tree size"), "{page}");
    assert!(
        page.contains("the Merkle root of the log&#39;s first events equals the signed root")
            || page.contains("the Merkle root of the log's first events equals the signed root"),
        "{page}"
    );
    assert!(page.contains("valid under this ledger"), "{page}");
    assert!(page.contains("Not checked here"));
    rig.stop().await;
}

/// The page as the binary serves it (no tokens on this server: every viewer is the owner,
/// `local`), and the DNS-rebinding guard.
#[tokio::test]
async fn the_served_binary_mounts_the_page_for_the_local_owner_on_allowed_hosts_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &[]).await;
    let client = server.connect().await;
    crate::common::think(&client, 1, 1, "A local <thought>", json!({})).await;
    let base = format!("http://{}", server.authority());
    let page = reqwest::get(format!("{base}/review"))
        .await
        .expect("GET /review");
    assert_eq!(page.status().as_u16(), 200);
    let body = page.text().await.unwrap();
    assert!(
        body.contains("Signed in as") && body.contains("local"),
        "{body}"
    );
    assert!(
        !body.contains("Log out"),
        "nothing to log out of without tokens"
    );
    let rebound = reqwest::Client::new()
        .get(format!("{base}/review"))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 403);
    let _ = client.cancel().await;
    server.kill().await;
}

/// Behind an authenticating proxy (`--principal-header`), the proxy's header names the viewer;
/// a request without it is refused, never treated as the owner's.
#[tokio::test]
async fn behind_a_proxy_the_header_names_the_viewer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = HttpServer::start(dir.path(), &["--principal-header", "X-Forwarded-User"]).await;
    let alice = server.connect_as("alice").await;
    let bob = server.connect_as("bob").await;
    let a = crate::common::think(&alice, 1, 1, "alice behind the proxy", json!({})).await;
    let b = crate::common::think(&bob, 1, 1, "bob behind the proxy", json!({})).await;
    let (sa, sb) = (
        a["sessionId"].as_str().unwrap(),
        b["sessionId"].as_str().unwrap(),
    );
    let base = format!("http://{}", server.authority());
    let as_alice = client()
        .get(format!("{base}/review"))
        .header("x-forwarded-user", "alice")
        .send()
        .await
        .unwrap();
    assert_eq!(as_alice.status().as_u16(), 200);
    let list = as_alice.text().await.unwrap();
    assert!(list.contains(sa) && !list.contains(sb), "{list}");
    let nobody = client().get(format!("{base}/review")).send().await.unwrap();
    assert_eq!(nobody.status().as_u16(), 401);
    let _ = alice.cancel().await;
    let _ = bob.cancel().await;
    server.kill().await;
}

/// The binary with `--auth`: a token made by `thinkledger token create` logs in to the page,
/// whose cookie is not a bearer token for `/mcp`, and the MCP client's session (written with
/// the bearer token) is listed.
#[tokio::test]
async fn the_served_binary_with_auth_logs_in_with_a_token_made_by_the_cli() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = crate::common::cli(
        dir.path(),
        &["token", "create", "--json", "--principal", "alice"],
    )
    .await;
    assert!(run.status.success(), "{run:?}");
    let made: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let token = made["token"].as_str().expect("token").to_owned();
    let server = HttpServer::start(dir.path(), &["--auth"]).await;
    let mcp = server.connect_with_token(&token).await;
    let body = crate::common::think(
        &mcp,
        1,
        1,
        "Written over MCP with a bearer token",
        json!({}),
    )
    .await;
    let session = body["sessionId"].as_str().expect("sessionId").to_owned();
    let base = format!("http://{}", server.authority());

    let (status, location) = {
        let r = client().get(format!("{base}/review")).send().await.unwrap();
        (r.status().as_u16(), r.headers().get("location").cloned())
    };
    assert_eq!(
        (status, location.as_ref().and_then(|l| l.to_str().ok())),
        (303, Some("/review/login"))
    );
    let login = client()
        .post(format!("{base}/review/login"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status().as_u16(), 303, "{}", server.stderr());
    let list = client()
        .get(format!("{base}/review"))
        .header("cookie", format!("{COOKIE_NAME}={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(list.status().as_u16(), 200);
    let list = list.text().await.unwrap();
    assert!(list.contains(&session) && list.contains("alice"), "{list}");
    // The cookie does not open /mcp: that takes the bearer header.
    let mcp_with_cookie = client()
        .post(server.url.clone())
        .header("cookie", format!("{COOKIE_NAME}={token}"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(mcp_with_cookie.status().as_u16(), 401);
    let _ = mcp.cancel().await;
    server.kill().await;
}
