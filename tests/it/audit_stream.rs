//! `serve --audit-stream`: every committed event reaches the target as one record, in seq
//! order, at least once. Against Debian's rsyslog over TCP (its own `rsyslogd` instance,
//! started here in the foreground with a configuration written by the test): under load, the
//! receiver stopped for 10 s and started again, the server SIGKILLed and started again, and
//! the received file holds every seq in order, a seq repeated only where a resend began (the
//! receiver's restart, the server's), each record naming the ledger's event exactly. To a
//! file of JSON lines: exactly once across a SIGKILL, and only the owner of a data directory
//! streams.
//!
//! `rsyslogd` is Debian's `rsyslog` package: without it the rsyslog test prints why and passes,
//! unless `CI=true`, where it fails (`.ci/run` installs it).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::common::{
    Client, HttpServer, StdioServer, receipt, stored_events, think, verify_json, within,
};

/// `rsyslogd` on this machine, if Debian's `rsyslog` package (or another) installed it.
fn rsyslogd() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("rsyslogd"))
            .find(|path| path.is_file())
    });
    on_path.or_else(|| {
        let debian = PathBuf::from("/usr/sbin/rsyslogd");
        debian.is_file().then_some(debian)
    })
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// An `rsyslogd` of the test's own: imtcp on a loopback port, every message's MSG written as
/// one line to `received`.
struct Rsyslog {
    binary: PathBuf,
    config: PathBuf,
    pidfile: PathBuf,
    port: u16,
    child: Option<Child>,
}

impl Rsyslog {
    fn new(binary: PathBuf, dir: &Path, port: u16, received: &Path) -> Self {
        let config = dir.join("rsyslog.conf");
        std::fs::write(
            &config,
            format!(
                "global(workDirectory=\"{work}\" net.enableDNS=\"off\")\n\
                 module(load=\"imtcp\")\n\
                 input(type=\"imtcp\" address=\"127.0.0.1\" port=\"{port}\")\n\
                 template(name=\"record\" type=\"string\" string=\"%msg%\\n\")\n\
                 action(type=\"omfile\" file=\"{received}\" template=\"record\")\n",
                work = dir.display(),
                received = received.display(),
            ),
        )
        .expect("write rsyslog.conf");
        Self {
            binary,
            config,
            pidfile: dir.join("rsyslogd.pid"),
            port,
            child: None,
        }
    }

    /// Starts it in the foreground and returns once it takes connections.
    async fn start(&mut self) {
        let child = Command::new(&self.binary)
            .arg("-n")
            .arg("-f")
            .arg(&self.config)
            .arg("-i")
            .arg(&self.pidfile)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start rsyslogd");
        self.child = Some(child);
        let port = self.port;
        within("rsyslogd to listen", async {
            while tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err()
            {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
    }

    /// Stops it as its service would (SIGTERM) and waits for it to exit: what it received is
    /// written out.
    async fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pid = child.id().expect("rsyslogd runs");
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .expect("kill -TERM");
        assert!(status.success());
        within("rsyslogd to stop", child.wait())
            .await
            .expect("rsyslogd stopped");
    }
}

/// A client making calls in a loop until told to stop: the highest seq it heard acknowledged.
struct Load {
    stop: Arc<AtomicBool>,
    acknowledged: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<Client>,
}

impl Load {
    fn start(client: Client, label: &'static str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn({
            let (stop, acknowledged) = (stop.clone(), acknowledged.clone());
            async move {
                let mut n = 1;
                let mut session = Value::Null;
                while !stop.load(Ordering::SeqCst) {
                    let body = think(
                        &client,
                        n,
                        n + 1,
                        &format!("{label} thought {n}"),
                        json!({ "sessionId": session }),
                    )
                    .await;
                    session = body["sessionId"].clone();
                    acknowledged.store(receipt(&body), Ordering::SeqCst);
                    n += 1;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                client
            }
        });
        Self {
            stop,
            acknowledged,
            task,
        }
    }

    async fn stop(self) -> (Client, u64) {
        self.stop.store(true, Ordering::SeqCst);
        let client = within("the load to stop", self.task)
            .await
            .expect("the load ran");
        (client, self.acknowledged.load(Ordering::SeqCst))
    }
}

/// The records in a stream's output, one JSON object a line.
fn records(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            serde_json::from_str(line.trim())
                .unwrap_or_else(|e| panic!("a record that is not JSON ({e}): {line:?}"))
        })
        .collect()
}

/// Checks that `records` hold every event of `events` in seq order, each as the ledger holds
/// it; a seq may repeat only where a resend begins, and at most `resends` resends. Returns
/// where each resend began.
fn every_seq_in_order(records: &[Value], events: &[Value], resends: usize) -> Vec<u64> {
    let mut next = 1u64;
    let mut began = Vec::new();
    let mut previous = 0u64;
    for record in records {
        let seq = record["seq"]
            .as_u64()
            .unwrap_or_else(|| panic!("a record without a seq: {record}"));
        let event = &events
            .get(usize::try_from(seq - 1).expect("a seq"))
            .unwrap_or_else(|| panic!("a record of seq {seq}, past the ledger's end"));
        assert_eq!(record["hash"], event["hash"], "record {record}");
        assert_eq!(record["prevHash"], event["prevHash"], "record {record}");
        assert_eq!(record["recordedAt"], event["recordedAt"], "record {record}");
        assert_eq!(record["tool"], event["call"]["tool"], "record {record}");
        assert_eq!(
            record["outcome"], event["outcome"]["status"],
            "record {record}"
        );
        assert_eq!(record["principal"], event["actor"]["principal"]);
        assert_eq!(record["session"], event["sessionId"]);
        assert_eq!(record["format"], "thinkledger-stream/1");
        assert!(
            record.get("arguments").is_none(),
            "no caller text: {record}"
        );
        if seq == next {
            next += 1;
        } else if seq < next {
            if seq != previous + 1 {
                began.push(seq);
            }
        } else {
            panic!("seq {seq} arrived before seq {next}: the stream skipped events");
        }
        previous = seq;
    }
    assert_eq!(
        next,
        events.len() as u64 + 1,
        "the stream holds every event up to seq {} (it stopped before seq {next})",
        events.len()
    );
    assert!(
        began.len() <= resends,
        "a seq repeated at {} places ({began:?}), more than the {resends} resends allowed",
        began.len()
    );
    began
}

/// Waits until `path` holds a record of seq `seq` (what a receiver writes comes a moment after
/// the stream sent it).
async fn wait_for_record(path: &Path, seq: u64) {
    within(&format!("seq {seq} in {}", path.display()), async {
        loop {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            if records(&text)
                .iter()
                .any(|r| r["seq"].as_u64() == Some(seq))
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn rsyslog_receives_every_seq_in_order_across_its_own_outage_and_a_server_restart() {
    let Some(binary) = rsyslogd() else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "CI=true but rsyslogd is missing: install the Debian package rsyslog"
        );
        eprintln!(
            "skipped: the rsyslog audit-stream test (rsyslogd not installed; \
             `apt-get install --no-install-recommends rsyslog` runs it)"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let receiver_dir = dir.path().join("rsyslog");
    std::fs::create_dir(&receiver_dir).expect("mkdir");
    let received = receiver_dir.join("received.log");
    let port = free_port();
    let mut receiver = Rsyslog::new(binary, &receiver_dir, port, &received);
    receiver.start().await;
    let target = format!("syslog+tcp://127.0.0.1:{port}");
    let args = ["--audit-stream", target.as_str()];

    let server = HttpServer::start(&data, &args).await;
    let load = Load::start(server.connect().await, "first run");
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The receiver goes away for 10 s while calls go on.
    receiver.stop().await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    receiver.start().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (client, _) = load.stop().await;
    drop(client);
    // The server is killed (it cannot finish what it sent) and started again.
    server.kill().await;
    let server = HttpServer::start(&data, &args).await;
    let load = Load::start(server.connect().await, "second run");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (client, _) = load.stop().await;
    drop(client);
    // Stopped as a service is: what the ledger holds is sent before it closes.
    let stderr = server.stderr();
    server.terminate().await;

    let (report, code) = verify_json(&data).await;
    assert_eq!(code, Some(0), "{report}");
    let head = report["events"].as_u64().expect("events");
    wait_for_record(&received, head).await;
    receiver.stop().await;
    let events = stored_events(&data);
    let text = std::fs::read_to_string(&received).expect("the received file");
    assert!(
        !text.contains("first run thought"),
        "no caller text reaches the receiver"
    );
    let records = records(&text);
    let resends = every_seq_in_order(&records, &events, 2);
    eprintln!(
        "rsyslog received {} records for {head} events; resends began at {resends:?}",
        records.len()
    );
    assert!(
        head > 200,
        "the load made {head} calls: too few to say anything; server log:\n{stderr}"
    );
}

#[tokio::test]
async fn a_file_stream_holds_every_seq_once_across_a_kill_and_only_the_owner_streams() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let owned = dir.path().join("owner.jsonl");
    let relayed = dir.path().join("relay.jsonl");
    let owner_target = format!("file:{}", owned.display());
    let relay_target = format!("file:{}", relayed.display());

    let owner = StdioServer::start(&data, &["--audit-stream", &owner_target]).await;
    let relay = StdioServer::start(
        &data,
        &["--audit-stream", &relay_target, "--audit-stream-arguments"],
    )
    .await;
    let mut last = 0;
    for n in 1..=5 {
        last = receipt(&think(&relay, n, 9, &format!("relayed thought {n}"), json!({})).await);
        last = last.max(receipt(
            &think(&owner, n, 9, &format!("owner's thought {n}"), json!({})).await,
        ));
    }
    wait_for_record(&owned, last).await;
    assert!(
        !relayed.exists(),
        "a relay streams nothing while an owner does"
    );
    drop(relay);
    owner.kill().await;

    let server = StdioServer::start(
        &data,
        &["--audit-stream", &owner_target, "--audit-stream-arguments"],
    )
    .await;
    for n in 6..=9 {
        last = receipt(&think(&server, n, 9, &format!("owner's thought {n}"), json!({})).await);
    }
    wait_for_record(&owned, last).await;
    server.stop().await;
    let events = stored_events(&data);
    let records = records(&std::fs::read_to_string(&owned).expect("the stream's file"));
    let seqs: Vec<u64> = records.iter().filter_map(|r| r["seq"].as_u64()).collect();
    assert_eq!(
        seqs,
        (1..=events.len() as u64).collect::<Vec<_>>(),
        "every seq once, in order"
    );
    // Opted in after the restart: the arguments come with their texts.
    let with_texts: BTreeMap<u64, &Value> = records
        .iter()
        .filter(|r| r.get("arguments").is_some())
        .map(|r| (r["seq"].as_u64().unwrap_or_default(), &r["arguments"]))
        .collect();
    assert!(!with_texts.is_empty());
    assert!(
        with_texts
            .values()
            .any(|a| a["thought"].as_str() == Some("owner's thought 9")),
        "{with_texts:?}"
    );
    let mode = std::fs::metadata(&owned).map(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.permissions().mode() & 0o777
    });
    assert_eq!(mode.ok(), Some(0o600), "the stream's file is private");
    assert!(data.join("audit-stream.json").is_file());
}
