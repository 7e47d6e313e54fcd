//! `/metrics` on the HTTP server: after a load run over real HTTP (and a relayed stdio client),
//! Prometheus's own `promtool check metrics` accepts the body, and the calls counter equals
//! the ledger's event count, refused and failed calls included. Under `--auth` the endpoint
//! wants a token that may read it (a scraper's or an auditor's), unless `--metrics-public`.
//!
//! `promtool` is Debian's `prometheus` package: without it the check prints why and passes,
//! unless `CI=true`, where it fails (`.ci/run` installs it).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::common::{
    HttpServer, StdioServer, call, cli, expect_rejected, rejected, think, verify_json, within,
};

/// One sample of an exposition: its name, labels and value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The samples of a Prometheus text exposition (comments skipped). Label values here never
/// hold `,`, `"` or `}` (tool names, outcomes, kinds), so a plain split reads them.
fn samples(body: &str) -> Vec<Sample> {
    body.lines()
        .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let (series, value) = line
                .rsplit_once(' ')
                .unwrap_or_else(|| panic!("no value in {line:?}"));
            let value: f64 = value
                .parse()
                .unwrap_or_else(|_| panic!("value of {line:?}"));
            let (name, labels) = match series.split_once('{') {
                None => (series, BTreeMap::new()),
                Some((name, rest)) => {
                    let inner = rest.trim_end_matches('}');
                    let labels = inner
                        .split(',')
                        .filter(|pair| !pair.is_empty())
                        .map(|pair| {
                            let (key, value) = pair.split_once('=').expect("label=value");
                            (key.to_owned(), value.trim_matches('"').to_owned())
                        })
                        .collect();
                    (name, labels)
                }
            };
            Sample {
                name: name.to_owned(),
                labels,
                value,
            }
        })
        .collect()
}

/// The sum of every sample named `name` whose labels include `with`.
fn total(samples: &[Sample], name: &str, with: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            with.iter()
                .all(|(k, v)| s.labels.get(*k).is_some_and(|got| got == v))
        })
        .map(|s| s.value)
        .sum()
}

/// The one sample named `name` without labels.
fn single(samples: &[Sample], name: &str) -> f64 {
    let found: Vec<&Sample> = samples.iter().filter(|s| s.name == name).collect();
    assert_eq!(found.len(), 1, "one {name} sample: {found:?}");
    found[0].value
}

/// `http://127.0.0.1:PORT/metrics` of a server.
fn metrics_url(server: &HttpServer) -> String {
    server.url.replace("/mcp", "/metrics")
}

/// GETs `/metrics` (the Prometheus text format) and checks the answer's type; its body.
async fn scrape(server: &HttpServer) -> String {
    let response = within(
        "GET /metrics",
        reqwest::Client::new().get(metrics_url(server)).send(),
    )
    .await
    .expect("GET /metrics");
    assert_eq!(response.status(), 200, "GET /metrics");
    assert_eq!(
        response.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    response.text().await.expect("a text body")
}

/// Returns once the server's ledger is open (`/readyz` answers 200).
async fn ready(server: &HttpServer) {
    let readyz = server.url.replace("/mcp", "/readyz");
    within("the server to be ready", async {
        while reqwest::get(&readyz).await.map(|r| r.status()).ok() != Some(reqwest::StatusCode::OK)
        {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
}

/// `promtool` on this machine, if Debian's `prometheus` package (or another) installed it.
fn promtool() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("promtool"))
            .find(|path| path.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/bin/promtool");
        debian.is_file().then_some(debian)
    })
}

/// Runs `promtool check metrics` on `body` (its standard input) and fails with what it said
/// when it finds a problem; without promtool, says why it was skipped (fails under CI=true).
async fn promtool_accepts(body: &str) {
    let Some(promtool) = promtool() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "CI=true but promtool is missing: install the Debian package prometheus"
        );
        eprintln!(
            "skipped: promtool check metrics (promtool not installed; \
             `apt-get install --no-install-recommends prometheus` runs it)"
        );
        return;
    };
    let mut child = tokio::process::Command::new(&promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start promtool");
    let mut stdin = child.stdin.take().expect("promtool's stdin");
    stdin
        .write_all(body.as_bytes())
        .await
        .expect("write to promtool");
    drop(stdin);
    let output = within("promtool check metrics", child.wait_with_output())
        .await
        .expect("promtool ran");
    assert!(
        output.status.success(),
        "promtool check metrics failed ({}):\n{}{}\n--- the body ---\n{body}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}

/// `thinkledger token create --json ARGS`: the token.
async fn token(dir: &std::path::Path, args: &[&str]) -> String {
    let mut all = vec!["token", "create", "--json"];
    all.extend_from_slice(args);
    let run = cli(dir, &all).await;
    assert!(run.status.success(), "token create failed: {run:?}");
    let made: Value = serde_json::from_str(&run.stdout).expect("token create --json prints JSON");
    made["token"].as_str().expect("a token").to_owned()
}

/// A loopback port nothing listens on (bound, then let go): a model provider that is down.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

#[tokio::test]
async fn after_a_load_run_promtool_accepts_the_metrics_and_the_calls_counter_is_the_ledgers_event_count()
 {
    let dir = tempfile::tempdir().expect("tempdir");
    let provider = format!("http://127.0.0.1:{}/v1", closed_port());
    let server = HttpServer::start_with_env(
        dir.path(),
        &["--toolsets", "all"],
        &[
            ("THINKLEDGER_MODEL_PROVIDER_URL", provider.as_str()),
            ("THINKLEDGER_MODEL", "local"),
        ],
    )
    .await;

    // Once the ledger is open: its gauges are there, no call is counted, no checkpoint yet.
    ready(&server).await;
    let before = samples(&scrape(&server).await);
    assert_eq!(total(&before, "thinkledger_calls_total", &[]), 0.0);
    assert_eq!(single(&before, "thinkledger_ledger_events"), 0.0);
    assert_eq!(single(&before, "thinkledger_checkpoint_present"), 0.0);
    assert!(
        !before
            .iter()
            .any(|s| s.name == "thinkledger_checkpoint_age_seconds"),
        "no checkpoint, no age: {before:?}"
    );

    // The load: four HTTP clients at once, each thinking through a session of its own.
    let clients = [
        server.connect().await,
        server.connect().await,
        server.connect().await,
        server.connect().await,
    ];
    let run = |n: usize| {
        let client = &clients[n];
        async move {
            for number in 1..=6 {
                let thought = format!("client {n}, thought {number}");
                think(client, number, 6, &thought, json!({})).await;
            }
            call(client, "search", json!({"query": "thought"})).await;
        }
    };
    tokio::join!(run(0), run(1), run(2), run(3));
    let client = &clients[0];
    // Refused calls count too: bad arguments, a tool this server does not have.
    expect_rejected(
        client,
        "sequentialthinking",
        json!({"thoughtNumber": "many"}),
        "invalid_arguments",
    )
    .await;
    expect_rejected(client, "no_such_tool", json!({}), "unknown_tool").await;
    // A model call that fails (the provider is down): refused, recorded, and counted as a
    // model failure.
    rejected(&call(client, "confer", json!({"message": "hello"})).await);
    // A relayed stdio client (another MCP host's `thinkledger serve` on this directory): its
    // calls are recorded by this server too.
    let relay = StdioServer::start(dir.path(), &[]).await;
    for number in 1..=3 {
        think(&relay, number, 3, "relayed", json!({})).await;
    }
    let during = samples(&scrape(&server).await);
    assert_eq!(single(&during, "thinkledger_relays_connected"), 1.0);
    // The operator signs a checkpoint (through the server, which owns the ledger).
    let signed = cli(dir.path(), &["checkpoint"]).await;
    assert!(signed.status.success(), "checkpoint: {signed:?}");

    // What a platform team checks: promtool accepts the exposition, and the calls counter is
    // the ledger's event count, as the ledger itself reports it.
    let body = scrape(&server).await;
    promtool_accepts(&body).await;
    let after = samples(&body);
    let calls = total(&after, "thinkledger_calls_total", &[]);
    let expected_calls = 4 * 7 + 2 + 1 + 3;
    assert_eq!(calls, f64::from(expected_calls), "{body}");
    assert_eq!(single(&after, "thinkledger_ledger_events"), calls, "{body}");
    let (report, code) = verify_json(dir.path()).await;
    assert_eq!(code, Some(0), "verify through the server: {report}");
    assert_eq!(
        report["events"].as_f64(),
        Some(calls),
        "the calls counter equals the event count verify reports: {report}\n{body}"
    );
    // By tool and outcome, as the events record them.
    let counted = |tool: &str, outcome: &str| {
        total(
            &after,
            "thinkledger_calls_total",
            &[("tool", tool), ("outcome", outcome)],
        )
    };
    assert_eq!(counted("sequentialthinking", "ok"), 4.0 * 6.0 + 3.0);
    assert_eq!(counted("sequentialthinking", "rejected"), 1.0);
    assert_eq!(counted("search", "ok"), 4.0);
    assert_eq!(counted("unknown", "rejected"), 1.0, "{body}");
    assert_eq!(counted("confer", "rejected"), 1.0, "{body}");
    // Every call answered through the tools layer was timed; every event was in a batch.
    assert_eq!(
        total(&after, "thinkledger_call_duration_seconds_count", &[]),
        calls
    );
    assert_eq!(single(&after, "thinkledger_writer_batch_events_sum"), calls);
    assert!(single(&after, "thinkledger_writer_batch_events_count") >= 1.0);
    assert_eq!(
        single(&after, "thinkledger_writer_sync_duration_seconds_count"),
        single(&after, "thinkledger_writer_batch_events_count")
    );
    assert!(single(&after, "thinkledger_ledger_bytes") > 0.0, "{body}");
    assert_eq!(single(&after, "thinkledger_writer_queue_depth"), 0.0);
    assert_eq!(
        total(
            &after,
            "thinkledger_model_call_failures_total",
            &[("kind", "unreachable")]
        ),
        1.0,
        "{body}"
    );
    assert_eq!(
        total(&after, "thinkledger_model_call_duration_seconds_count", &[]),
        1.0
    );
    // The checkpoint just signed: present, and young.
    assert_eq!(single(&after, "thinkledger_checkpoint_present"), 1.0);
    let age = single(&after, "thinkledger_checkpoint_age_seconds");
    assert!((0.0..60.0).contains(&age), "checkpoint age {age}");

    // The relay leaves: no longer counted.
    relay.stop().await;
    within("the relay to be uncounted", async {
        loop {
            let now = samples(&scrape(&server).await);
            if single(&now, "thinkledger_relays_connected") == 0.0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;

    // A Prometheus scrape (it asks for OpenMetrics first) gets OpenMetrics.
    let response = reqwest::Client::new()
        .get(metrics_url(&server))
        .header(
            "accept",
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
             version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
        )
        .send()
        .await
        .expect("GET /metrics as Prometheus");
    assert_eq!(
        response.headers()["content-type"],
        "application/openmetrics-text; version=1.0.0; charset=utf-8"
    );
    let open_metrics = response.text().await.expect("body");
    assert!(open_metrics.ends_with("# EOF\n"), "{open_metrics}");
    assert!(open_metrics.contains("thinkledger_calls_total{tool=\"search\",outcome=\"ok\"} 4"));
    for client in clients {
        let _ = client.cancel().await;
    }
    server.kill().await;
}

#[tokio::test]
async fn under_auth_metrics_want_a_scrapers_or_an_auditors_token_unless_made_public() {
    let dir = tempfile::tempdir().expect("tempdir");
    let member = token(dir.path(), &["--principal", "alice"]).await;
    let auditor = token(dir.path(), &["--principal", "carol", "--role", "auditor"]).await;
    let scraper = token(
        dir.path(),
        &["--principal", "prometheus", "--role", "metrics"],
    )
    .await;
    let server = HttpServer::start(dir.path(), &["--auth"]).await;
    ready(&server).await;
    let http = reqwest::Client::new();
    let get = |bearer: Option<&str>| {
        let mut request = http.get(metrics_url(&server));
        if let Some(token) = bearer {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request.send()
    };

    // No token, or one the server does not know: 401 with a bearer challenge.
    for presented in [None, Some("tlk_not-a-token")] {
        let response = get(presented).await.expect("GET /metrics");
        assert_eq!(response.status(), 401, "{presented:?}");
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .expect("ascii");
        assert!(
            challenge.starts_with("Bearer realm=\"thinkledger\""),
            "{challenge}"
        );
    }
    // A member's token is known but may not read the metrics: 403.
    let response = get(Some(&member)).await.expect("GET /metrics");
    assert_eq!(response.status(), 403);
    assert!(
        response.headers()["www-authenticate"]
            .to_str()
            .expect("ascii")
            .contains("insufficient_scope")
    );
    // A scraper's token and an auditor's may.
    for reader in [&scraper, &auditor] {
        let response = get(Some(reader)).await.expect("GET /metrics");
        assert_eq!(response.status(), 200);
        let body = response.text().await.expect("body");
        assert!(
            body.contains("# TYPE thinkledger_ledger_events gauge"),
            "{body}"
        );
    }
    // A scraper's token is good for nothing else: `/mcp` refuses it (403).
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "curl", "version": "1"}}});
    let response = http
        .post(&server.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("authorization", format!("Bearer {scraper}"))
        .body(initialize.to_string())
        .send()
        .await
        .expect("POST /mcp");
    assert_eq!(response.status(), 403);
    server.kill().await;

    // `--metrics-public`: the metrics answer anyone, `/mcp` still wants a token.
    let public = HttpServer::start(dir.path(), &["--auth", "--metrics-public"]).await;
    let response = http
        .get(metrics_url(&public))
        .send()
        .await
        .expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let response = http
        .post(&public.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize.to_string())
        .send()
        .await
        .expect("POST /mcp");
    assert_eq!(response.status(), 401);
    public.kill().await;
}
