//! The reviewer's page in a real browser: headless Chromium driven over WebDriver
//! (chromedriver, Debian's `chromium` and `chromium-driver`) with fantoccini. Logs in through
//! the form, opens a session from the list, sees its thoughts and drawings, checks the hostile
//! thought is inert, diffs, checks the chain status, fetches the export with the browser's own
//! cookie, logs out.
//!
//! Screenshots of each page go to `target/review-screenshots/*.png` (beside `target/tmp`,
//! Cargo's scratch directory for integration tests). Without chromium or chromedriver the test
//! prints why and passes, unless `CI=true`: CI must run it (`.ci/run` installs both).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{ClientBuilder, Locator};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use thinkledger::server::review::COOKIE_NAME;

use crate::review::{ADDED, HOSTILE, Rig};

/// Where the browser and its driver are looked for, in order.
const CHROMIUM: &[&str] = &["/usr/bin/chromium", "/usr/bin/chromium-browser"];
const CHROMEDRIVER: &[&str] = &["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"];

fn first_existing(paths: &[&str]) -> Option<PathBuf> {
    paths.iter().map(PathBuf::from).find(|p| p.is_file())
}

fn screenshots_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("target dir")
        .join("review-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

/// What the walk visits (owned, so it can run in its own task).
struct Targets {
    base: String,
    /// alice's token.
    token: String,
    /// carol's (an auditor).
    auditor: String,
    /// The seq of bob's refused probe of alice's session.
    probe: u64,
    /// alice's session with a stored memory and a `detect_bias` result.
    mixed: String,
    alice: String,
    alice_again: String,
    alice_deliberation: String,
}

/// chromedriver on a free loopback port, killed when dropped.
struct Driver {
    child: Child,
    url: String,
}

impl Driver {
    async fn start(binary: &Path) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(binary)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn chromedriver");
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(r) = reqwest::get(format!("{url}/status")).await
                && r.status().is_success()
            {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "chromedriver did not answer within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Self { child, url }
    }
}

async fn shoot(browser: &fantoccini::Client, name: &str) {
    let png = browser.screenshot().await.expect("screenshot");
    std::fs::write(screenshots_dir().join(name), png).expect("write screenshot");
}

async fn script(browser: &fantoccini::Client, js: &str) -> Value {
    browser.execute(js, vec![]).await.expect("execute")
}

/// The element `css` once the page has settled: a navigation that aborts a wait (Chromium
/// answers "aborted by navigation" when a click's page replaces the one being waited on) is
/// waited out, up to 10 s.
async fn settled(
    browser: &fantoccini::Client,
    css: &str,
) -> Result<fantoccini::elements::Element, fantoccini::error::CmdError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match browser.wait().for_element(Locator::Css(css)).await {
            Ok(found) => return Ok(found),
            Err(e) if Instant::now() < deadline && e.to_string().contains("navigation") => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// The page loaded no script, style, font or image from anywhere (its style is inline).
async fn nothing_from_elsewhere(browser: &fantoccini::Client) {
    let loaded = script(
        browser,
        "return performance.getEntriesByType('resource').map(r => r.name)",
    )
    .await;
    assert_eq!(loaded, json!([]), "resources loaded");
    assert_eq!(
        script(browser, "return document.scripts.length").await,
        json!(0)
    );
}

#[tokio::test]
async fn a_reviewer_logs_in_and_reads_a_session_in_headless_chromium() {
    let (Some(chromium), Some(chromedriver)) =
        (first_existing(CHROMIUM), first_existing(CHROMEDRIVER))
    else {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "CI=true but chromium or chromedriver is missing: install the Debian packages chromium and chromium-driver"
        );
        eprintln!(
            "skipped: chromium ({CHROMIUM:?}) or chromedriver ({CHROMEDRIVER:?}) not installed; \
             `apt-get install chromium chromium-driver` runs this test"
        );
        return;
    };
    let started = Instant::now();
    let rig = Rig::start().await;
    // Bob probes alice's session: refused, recorded in bob's session.
    let server = crate::review_content::server(&rig);
    let bobs = thinkledger::tools::SessionSlot::fresh();
    crate::review::think(&server, "bob", &bobs, (1, 1), "Bob looks around", json!({})).await;
    let probe = crate::review_content::attempt(
        &server,
        "bob",
        &bobs,
        "export",
        json!({ "sessionId": rig.alice }),
    )
    .await;
    let probe = probe["seq"].as_u64().expect("the probe is recorded");
    // A session of alice's with a memory and a cognition result.
    let mixed = thinkledger::tools::SessionSlot::fresh();
    let stored = crate::review::call(
        &server,
        "alice",
        &mixed,
        "store_memory",
        json!({"content": "Acme wants SOC2 evidence monthly", "userId": "alice",
               "sessionId": "chat-1", "primarySector": "semantic"}),
    )
    .await;
    let mixed_session = stored["metadata"]["sessionId"].as_str().map(str::to_owned);
    let judged = crate::review::call(
        &server,
        "alice",
        &mixed,
        "detect_bias",
        json!({"reasoning": "All the data I've seen supports my hypothesis that users prefer feature A"}),
    )
    .await;
    let mixed_session = mixed_session
        .or_else(|| judged["metadata"]["sessionId"].as_str().map(str::to_owned))
        .expect("the cognition call names its session");
    let mut driver = Driver::start(&chromedriver).await;
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".into(),
        json!({
            "binary": chromium,
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1100", "--no-first-run", "--disable-extensions"],
        }),
    );
    let browser = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&driver.url)
        .await
        .expect("a WebDriver session");

    // The walk runs in its own task, so a failed assertion in it still lets the browser, the
    // driver and the server be shut down before the test fails.
    let rig_at = Targets {
        base: rig.base.clone(),
        token: rig.token("alice").to_owned(),
        auditor: rig.token("carol").to_owned(),
        probe,
        mixed: mixed_session,
        alice: rig.alice.clone(),
        alice_again: rig.alice_again.clone(),
        alice_deliberation: rig.alice_deliberation.clone(),
    };
    let walker = browser.clone();
    let outcome = tokio::spawn(async move {
        let (browser, rig) = (walker, rig_at);
        // Not logged in: the page sends us to the form.
        browser.goto(&format!("{}/review", rig.base)).await?;
        assert!(
            browser
                .current_url()
                .await?
                .path()
                .ends_with("/review/login")
        );
        browser
            .find(Locator::Css("#token"))
            .await?
            .send_keys(&rig.token)
            .await?;
        shoot(&browser, "01-login.png").await;
        browser
            .find(Locator::Css("button[type=submit]"))
            .await?
            .click()
            .await?;
        settled(&browser, "table#sessions").await?;
        assert_eq!(browser.current_url().await?.path(), "/review");
        shoot(&browser, "02-sessions.png").await;

        // Open the session from the list.
        let link = format!("a.session[href='/review/session/{}']", rig.alice);
        browser.find(Locator::Css(&link)).await?.click().await?;
        settled(&browser, "svg#thought-tree").await?;
        let title = browser.title().await?;
        assert!(title.starts_with("Session "), "{title}");
        let boxes = browser
            .find_all(Locator::Css("svg#thought-tree g.thought"))
            .await?;
        assert_eq!(boxes.len(), 4);
        let rows = browser
            .find_all(Locator::Css("table#thoughts tbody tr"))
            .await?;
        assert_eq!(rows.len(), 4);
        // The hostile thought is text: visible literally, no script element, no alert.
        let first = rows[0].text().await?;
        assert!(first.contains(HOSTILE), "{first}");
        let tagged = rows[1].text().await?;
        assert!(
            tagged.contains("<i>risky</i>"),
            "the tag shows as text: {tagged}"
        );
        assert_eq!(
            script(&browser, "return document.scripts.length").await,
            json!(0)
        );
        assert_eq!(
            script(
                &browser,
                "return document.querySelectorAll('script').length"
            )
            .await,
            json!(0)
        );
        assert!(browser.get_alert_text().await.is_err(), "an alert is open");
        assert_eq!(browser.title().await?, title, "the title was not changed");
        let drawn = script(
            &browser,
            "return [...document.querySelectorAll('#thought-tree text')].map(t => t.textContent)",
        )
        .await;
        assert!(drawn.to_string().contains("<script>alert(1)"), "{drawn}");
        // The SVG as the browser parsed it is XML that parses again.
        let svg = browser
            .find(Locator::Css("svg#thought-tree"))
            .await?
            .html(false)
            .await?;
        roxmltree::Document::parse(&svg).expect("the browser's SVG is well-formed");
        shoot(&browser, "03-session.png").await;

        // Diff with the session that has one more thought.
        let option = format!("#diff-b option[value='{}']", rig.alice_again);
        browser.find(Locator::Css(&option)).await?.click().await?;
        browser
            .find(Locator::Css("#diff-form button"))
            .await?
            .click()
            .await?;
        let summary = settled(&browser, "#diff-summary").await?;
        assert!(summary.text().await?.contains("added"));
        let added = browser
            .find(Locator::Css("tr.op-added"))
            .await?
            .text()
            .await?;
        assert!(added.contains(ADDED), "{added}");
        shoot(&browser, "04-diff.png").await;

        // A deliberation's graph.
        browser
            .goto(&format!(
                "{}/review/session/{}",
                rig.base, rig.alice_deliberation
            ))
            .await?;
        let nodes = browser
            .find_all(Locator::Css("svg#deliberation-graph g.node"))
            .await?;
        assert!(nodes.len() >= 3, "{} nodes", nodes.len());
        let edges = browser
            .find_all(Locator::Css("svg#deliberation-graph g.edge"))
            .await?;
        assert!(!edges.is_empty(), "no typed edge drawn");
        assert_eq!(
            script(&browser, "return document.scripts.length").await,
            json!(0)
        );
        assert_eq!(
            script(&browser, "return document.images.length").await,
            json!(0)
        );
        script(
            &browser,
            "document.getElementById('deliberation-graph').scrollIntoView(); return null",
        )
        .await;
        shoot(&browser, "05-deliberation.png").await;

        // The export link, fetched with the browser's own (HttpOnly) cookie.
        browser
            .goto(&format!("{}/review/session/{}", rig.base, rig.alice))
            .await?;
        let href = browser
            .find(Locator::Css("a#export"))
            .await?
            .attr("href")
            .await?
            .expect("href");
        let cookie = browser.get_named_cookie(COOKIE_NAME).await?;
        assert_eq!(cookie.http_only(), Some(true));
        let export = crate::review::client()
            .get(format!("{}{href}", rig.base))
            .header("cookie", format!("{}={}", cookie.name(), cookie.value()))
            .send()
            .await
            .expect("GET the export");
        assert_eq!(export.status().as_u16(), 200);
        assert!(
            export.headers()["content-disposition"]
                .to_str()
                .unwrap()
                .starts_with("attachment")
        );
        let body: Value = serde_json::from_slice(&export.bytes().await.unwrap()).expect("JSON");
        assert_eq!(body["events"].as_array().map(Vec::len), Some(5));

        // The chain status, then log out.
        browser
            .find(Locator::LinkText("Chain status"))
            .await?
            .click()
            .await?;
        settled(&browser, "table#checkpoint").await?;
        shoot(&browser, "06-chain-status.png").await;

        // A call's recorded arguments and facts open under its row.
        browser
            .goto(&format!("{}/review/session/{}", rig.base, rig.alice))
            .await?;
        browser
            .find(Locator::Css("tr#call-1 details summary"))
            .await?
            .click()
            .await?;
        let details = browser
            .find(Locator::Css("tr#call-1 details"))
            .await?
            .text()
            .await?;
        assert!(details.contains("ThoughtRecorded"), "{details}");
        assert!(details.contains(HOSTILE), "{details}");
        nothing_from_elsewhere(&browser).await;
        shoot(&browser, "07-call-details.png").await;

        // A memory's and a cognition tool's recorded content.
        browser
            .goto(&format!("{}/review/session/{}", rig.base, rig.mixed))
            .await?;
        for summary in browser
            .find_all(Locator::Css("table#timeline details summary"))
            .await?
        {
            summary.click().await?;
        }
        let calls = browser
            .find(Locator::Css("table#timeline"))
            .await?
            .text()
            .await?;
        for shown in [
            "MemoryStored",
            "Acme wants SOC2 evidence monthly",
            "CognitionRecorded",
            "All the data I've seen supports my hypothesis",
        ] {
            assert!(calls.contains(shown), "{shown} missing: {calls}");
        }
        nothing_from_elsewhere(&browser).await;
        shoot(&browser, "08-memory-and-cognition.png").await;

        // Search across her sessions.
        browser
            .find(Locator::LinkText("Search"))
            .await?
            .click()
            .await?;
        browser
            .find(Locator::Css("#q"))
            .await?
            .send_keys("backups")
            .await?;
        browser
            .find(Locator::Css("form#search button"))
            .await?
            .click()
            .await?;
        let hits = settled(&browser, "table#hits")
            .await?
            .find_all(Locator::Css("tbody tr"))
            .await?;
        assert!(hits.len() >= 2, "{} hits", hits.len());
        nothing_from_elsewhere(&browser).await;
        shoot(&browser, "09-search.png").await;

        // Memories, and no refusals page for a member.
        browser
            .find(Locator::LinkText("Memories"))
            .await?
            .click()
            .await?;
        settled(&browser, "table#owners").await?;
        shoot(&browser, "10-memories.png").await;
        assert!(
            browser
                .find(Locator::LinkText("Refused calls"))
                .await
                .is_err()
        );

        browser
            .find(Locator::Css("header form button"))
            .await?
            .click()
            .await?;
        settled(&browser, "#token").await?;

        // The auditor sees bob's probe of alice's session.
        browser
            .find(Locator::Css("#token"))
            .await?
            .send_keys(&rig.auditor)
            .await?;
        browser
            .find(Locator::Css("button[type=submit]"))
            .await?
            .click()
            .await?;
        settled(&browser, "table#sessions").await?;
        browser
            .find(Locator::LinkText("Refused calls"))
            .await?
            .click()
            .await?;
        let listed = settled(&browser, "table#refusals").await?.text().await?;
        assert!(listed.contains("unknown_session"), "{listed}");
        assert!(listed.contains(&rig.probe.to_string()), "{listed}");
        nothing_from_elsewhere(&browser).await;
        shoot(&browser, "11-refusals.png").await;
        browser
            .find(Locator::Css("header form button"))
            .await?
            .click()
            .await?;
        settled(&browser, "#token").await?;
        browser
            .goto(&format!("{}/review/session/{}", rig.base, rig.alice))
            .await?;
        assert!(
            browser
                .current_url()
                .await?
                .path()
                .ends_with("/review/login")
        );
        Ok::<_, fantoccini::error::CmdError>(())
    })
    .await;
    let page = browser.source().await.unwrap_or_default();
    let _ = browser.close().await;
    let _ = driver.child.kill().await;
    rig.stop().await;
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("browser step failed: {e}\npage:\n{page}"),
        Err(failed) => std::panic::resume_unwind(failed.into_panic()),
    }
    eprintln!(
        "browser test took {:.1} s; screenshots in {}",
        started.elapsed().as_secs_f64(),
        screenshots_dir().display()
    );
}
