//! Time anchoring (`serve --timestamp-authority URL`): each checkpoint the ledger signs is sent
//! to an RFC 3161 time-stamping authority, and the token it answers is kept beside the
//! checkpoints (`ledger::timestamps`: the data directory's file, or the database's table), for
//! audit exports to carry.
//!
//! The anchor follows the ledger from a task of its own and never from a call's path or the
//! writer's: it notices a new checkpoint by the signing time the writer leaves in its gauges
//! (no message to the writer), asks the writer's view for the note only then, and talks to the
//! TSA after the checkpoint is signed and handed out. A TSA that is down or slow delays nothing:
//! the checkpoints it has not stamped wait in a queue, retried with a growing pause, and are
//! stamped oldest first when it answers again. Only the process that owns the data directory
//! anchors (it is started with the ledger, `main.rs`'s `start_ledger`); on a database, each node
//! stamps the checkpoints its writer signs.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::audit::checkpoint_digest;
use crate::audit::rfc3161::{TokenError, check_token, request, token_from_response};
use crate::effects::{Effects, SystemEffects};
use crate::ledger::timestamps::{KeptTimestamp, TimestampLog};
use crate::ledger::{Decider, LedgerHandle};

/// How often the gauges are looked at for a new checkpoint.
const TICK: Duration = Duration::from_millis(200);

/// First pause after a failed attempt; doubled after each failure up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// Longest pause between two attempts to reach a TSA that is down.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Longest one request to the TSA may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(20);

/// Most checkpoints waiting for a token; older ones are let go (a later checkpoint extends
/// them, so its token covers their events).
const MAX_PENDING: usize = 1024;

/// A time-stamping authority's URL, checked when the server starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority(reqwest::Url);

impl Authority {
    /// Reads an `http://` URL (this build speaks no TLS; a token proves itself, so TSAs serve
    /// plain HTTP).
    pub fn parse(raw: &str) -> Result<Self, String> {
        let wrong = |why: &str| {
            format!(
                "--timestamp-authority {raw:?}: {why}; give the http:// URL of an RFC 3161 \
                 time-stamping authority (e.g. http://timestamp.example.com/tsr)"
            )
        };
        let url = reqwest::Url::parse(raw).map_err(|e| wrong(&e.to_string()))?;
        match url.scheme() {
            "http" if url.host_str().is_some() => Ok(Self(url)),
            "http" => Err(wrong("no host")),
            "https" => Err(wrong("https is not supported by this build (no TLS)")),
            other => Err(wrong(&format!("scheme {other} is not http"))),
        }
    }
}

/// Starts anchoring `ledger`'s checkpoints at `authority`, keeping the tokens in `kept`, until
/// `stop` is cancelled.
pub fn start<D: Decider>(
    ledger: LedgerHandle<D>,
    kept: Arc<dyn TimestampLog>,
    authority: Authority,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(run(ledger, kept, authority, stop))
}

async fn run<D: Decider>(
    ledger: LedgerHandle<D>,
    kept_log: Arc<dyn TimestampLog>,
    authority: Authority,
    stop: CancellationToken,
) {
    if ledger.opened().await.is_err() {
        return;
    }
    let client = match reqwest::Client::builder()
        .timeout(REQUEST_LIMIT)
        .no_proxy()
        .build()
    {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "checkpoints will not be time-stamped");
            return;
        }
    };
    // Each checkpoint is seen once, when it becomes the latest; only the one stamped last can
    // be seen again (at a restart, when no checkpoint was signed since).
    let recent = {
        let log = kept_log.clone();
        tokio::task::spawn_blocking(move || log.recent())
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()))
    };
    let mut last_stamped: Option<String> = match recent {
        Ok(kept) => kept.into_iter().last().map(|k| k.note),
        Err(e) => {
            tracing::error!(error = %e, "the kept time-stamp tokens do not read; checkpoints will not be time-stamped");
            return;
        }
    };
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut seen_signed_at = None;
    let mut backoff = FIRST_BACKOFF;
    let mut retry_at = Instant::now();
    tracing::info!(authority = %authority.0, "time-stamping checkpoints");
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(TICK) => {}
        }
        let signed_at = ledger.gauges().checkpoint_signed_at;
        if signed_at.is_some() && signed_at != seen_signed_at {
            seen_signed_at = signed_at;
            let latest = ledger
                .inspect(|view| view.latest_checkpoint().map(|c| c.note.clone()))
                .await;
            if let Ok(Some(note)) = latest
                && last_stamped.as_ref() != Some(&note)
                && !pending.contains(&note)
            {
                pending.push_back(note);
                if pending.len() > MAX_PENDING {
                    pending.pop_front();
                }
            }
        }
        if pending.is_empty() || Instant::now() < retry_at {
            continue;
        }
        while let Some(note) = pending.front() {
            let attempt = tokio::select! {
                () = stop.cancelled() => return,
                attempt = stamp(&client, &authority, note) => attempt,
            };
            match attempt {
                Ok(token) => {
                    let kept = KeptTimestamp {
                        note: note.clone(),
                        token,
                    };
                    // Appended and synced off the runtime's workers.
                    let (log, line) = (kept_log.clone(), kept.clone());
                    let appended = tokio::task::spawn_blocking(move || log.append(&line))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r.map_err(|e| e.to_string()));
                    if let Err(e) = appended {
                        tracing::error!(error = %e, "a time-stamp token could not be kept; retrying");
                        retry_at = Instant::now() + backoff;
                        backoff = (backoff * 2).min(MAX_BACKOFF);
                        break;
                    }
                    tracing::info!(
                        size = kept.note.lines().nth(1).unwrap_or_default(),
                        "checkpoint time-stamped"
                    );
                    last_stamped = Some(kept.note);
                    pending.pop_front();
                    backoff = FIRST_BACKOFF;
                }
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        waiting = pending.len(),
                        retry_in_ms = u64::try_from(backoff.as_millis()).unwrap_or(u64::MAX),
                        "the time-stamping authority did not stamp a checkpoint; retrying"
                    );
                    retry_at = Instant::now() + backoff;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    break;
                }
            }
        }
    }
}

/// Asks the TSA for a token over the checkpoint `note`, and checks that it stamps the note's
/// digest under a signature that holds (whether its signer is to be trusted is the reviewer's
/// call, with `verify-export --tsa-cert`).
async fn stamp(
    client: &reqwest::Client,
    authority: &Authority,
    note: &str,
) -> Result<Vec<u8>, String> {
    let digest = checkpoint_digest(note);
    let seed = SystemEffects.seed()?;
    let mut nonce = [0u8; 8];
    nonce.copy_from_slice(&seed.bytes()[..8]);
    let query = request(&digest, nonce).map_err(|e| e.to_string())?;
    let response = client
        .post(authority.0.clone())
        .header(http::header::CONTENT_TYPE, "application/timestamp-query")
        .body(query)
        .send()
        .await
        .map_err(|e| format!("{e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("the TSA answered HTTP {status}"));
    }
    let body = response.bytes().await.map_err(|e| format!("{e}"))?;
    let token = token_from_response(&body).map_err(|e| e.to_string())?;
    match check_token(&token, &digest, &[]) {
        Ok(_) | Err(TokenError::Untrusted(_)) => Ok(token),
        Err(e) => Err(format!("the TSA's token does not hold: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::Authority;

    #[test]
    fn only_http_urls_with_a_host_name_an_authority() {
        assert!(Authority::parse("http://127.0.0.1:8318/tsr").is_ok());
        for (raw, why) in [
            ("https://tsa.example.com/", "https is not supported"),
            ("ftp://tsa.example.com/", "scheme ftp is not http"),
            ("tsa.example.com", "relative URL without a base"),
        ] {
            let e = Authority::parse(raw).expect_err(raw);
            assert!(e.contains(why), "{raw}: {e}");
            assert!(e.contains("give the http:// URL"), "{raw}: {e}");
        }
    }
}
