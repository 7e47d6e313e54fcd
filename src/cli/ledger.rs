//! The commands that read or write a ledger (`verify`, `sessions`, `export`, `replay`, `diff`,
//! `audit`, `key`, `checkpoint`, `erase`, `backup`), written once for both ways they run: on a ledger
//! this process opens (nothing serves the directory), or on the ledger of the process that
//! serves it, sent there through its socket (`server::owner`) and run in that process, which
//! hands back what the command printed. Either way the output is the same.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thinkledger::app::{App, AppConfig, Command as AppCommand, ERASE_TOOL, replay};
use thinkledger::effects::{Effects, SystemEffects};
use thinkledger::events::{Actor, OutcomeStatus, SessionId};
use thinkledger::export::{ExportOptions, diff, json as export_json, markdown};
use thinkledger::ledger::checkpoint::{Checkpoint, NoteVerifier, kept_note};
use thinkledger::ledger::timestamps::KeptTimestamp;
use thinkledger::ledger::{LedgerHandle, SignedCheckpoint, Store, keyfile, verify_with_progress};
use thinkledger::server::{self, LedgerPlace};

/// A command on the ledger, as the command line gave it (paths absolute), serializable so it
/// can be sent to the process that serves the directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "kebab-case")]
pub enum LedgerCommand {
    Verify {
        json: bool,
        checkpoints: Vec<PathBuf>,
        pubkey: Option<String>,
    },
    Checkpoint,
    Erase {
        session: Option<String>,
        commitments: Vec<String>,
        #[serde(default)]
        user_id: Option<String>,
        reason: String,
        /// Who asks (`os:USER` of the process that ran the command).
        principal: String,
    },
    Key,
    /// `backup DEST`: a verified copy in a new data directory.
    Backup {
        dest: PathBuf,
    },
    Sessions {
        json: bool,
    },
    Export {
        session: String,
        json: bool,
    },
    Replay {
        session: String,
        reexecute: bool,
        json: bool,
        max_text_bytes: usize,
    },
    Diff {
        session_a: String,
        session_b: String,
        json: bool,
    },
    Audit {
        session: Option<String>,
        from_seq: Option<u64>,
        to_seq: Option<u64>,
        since_checkpoint: Option<PathBuf>,
        output: Option<PathBuf>,
    },
}

impl LedgerCommand {
    /// The same command with every path made absolute against `cwd` (the process that runs it
    /// may stand elsewhere).
    pub fn absolute(mut self, cwd: &Path) -> Self {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = cwd.join(&*p);
            }
        };
        match &mut self {
            Self::Verify { checkpoints, .. } => checkpoints.iter_mut().for_each(fix),
            Self::Backup { dest } => fix(dest),
            Self::Audit {
                since_checkpoint,
                output,
                ..
            } => {
                since_checkpoint.iter_mut().for_each(fix);
                output.iter_mut().for_each(fix);
            }
            _ => {}
        }
        self
    }
}

/// Where a command's output goes.
#[derive(Clone)]
pub enum Sink {
    Stdout,
    Stderr,
    /// Kept, to be sent to the process that asked.
    Buffer(Arc<Mutex<Vec<u8>>>),
}

impl Sink {
    pub fn writer(&self) -> Box<dyn Write + Send> {
        match self {
            Sink::Stdout => Box::new(std::io::stdout()),
            Sink::Stderr => Box::new(std::io::stderr()),
            Sink::Buffer(buffer) => Box::new(Shared(buffer.clone())),
        }
    }

    /// What a buffer holds (nothing for the standard streams).
    pub fn taken(&self) -> Vec<u8> {
        match self {
            Sink::Buffer(buffer) => {
                std::mem::take(&mut *buffer.lock().unwrap_or_else(PoisonError::into_inner))
            }
            _ => Vec::new(),
        }
    }
}

struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A command's standard output and error, and whether it may draw progress bars.
#[derive(Clone)]
pub struct Io {
    pub out: Sink,
    pub err: Sink,
    pub progress: bool,
}

impl Io {
    /// This process's own streams.
    pub fn standard() -> Self {
        Self {
            out: Sink::Stdout,
            err: Sink::Stderr,
            progress: true,
        }
    }

    /// Buffers, for a command run for another process.
    pub fn buffers() -> Self {
        Self {
            out: Sink::Buffer(Arc::default()),
            err: Sink::Buffer(Arc::default()),
            progress: false,
        }
    }
}

/// Runs `command` on `served` (the ledger this process serves), or on the ledger at `place`
/// opened for the command alone; its exit status.
pub async fn run(
    command: LedgerCommand,
    served: Option<&LedgerHandle<App>>,
    place: &LedgerPlace,
    io: &Io,
) -> anyhow::Result<u8> {
    let config = match &command {
        LedgerCommand::Replay { max_text_bytes, .. } => AppConfig {
            max_text_bytes: *max_text_bytes,
            ..AppConfig::default()
        },
        _ => AppConfig::default(),
    };
    if let LedgerCommand::Verify {
        json,
        checkpoints,
        pubkey,
    } = &command
    {
        return verify(served, place, *json, checkpoints, pubkey.as_deref(), io).await;
    }
    // A backup reads the store itself, as verify does: no replay of the log.
    if let LedgerCommand::Backup { dest } = &command {
        return super::backup::backup(served, place, dest, io).await;
    }
    let opened = match served {
        Some(_) => None,
        None => Some(server::open(place, config.clone())?),
    };
    let Some(ledger) = served.or(opened.as_ref()) else {
        bail!("no ledger to run the command on");
    };
    let result = on_ledger(command, ledger, opened.is_some(), place, config, io).await;
    if let Some(ledger) = opened {
        ledger.shutdown().await;
    }
    result
}

async fn on_ledger(
    command: LedgerCommand,
    ledger: &LedgerHandle<App>,
    offline: bool,
    place: &LedgerPlace,
    config: AppConfig,
    io: &Io,
) -> anyhow::Result<u8> {
    let mut out = io.out.writer();
    match command {
        LedgerCommand::Verify { .. } | LedgerCommand::Backup { .. } => {
            unreachable!("verify and backup read the store themselves")
        }
        LedgerCommand::Checkpoint => {
            let signed = ledger.checkpoint().await?;
            write!(out, "{}", signed.note)?;
            Ok(0)
        }
        LedgerCommand::Key => {
            let ledger_id = ledger
                .meta()
                .map(|m| m.ledger_id.clone())
                .ok_or_else(|| anyhow::anyhow!("the opened ledger has no metadata"))?;
            let signer = keyfile::load_or_create(&server::key_path(&place.data_dir), &ledger_id)?;
            writeln!(out, "{}", signer.verifier().to_vkey())?;
            Ok(0)
        }
        LedgerCommand::Erase {
            session,
            commitments,
            user_id,
            reason,
            principal,
        } => {
            let what = match (session, user_id) {
                (Some(session), _) => Erasing::Session(session),
                (None, Some(user)) => Erasing::User(user),
                (None, None) => Erasing::Commitments(commitments),
            };
            erase(ledger, offline, place, what, reason, principal, &mut out).await
        }
        LedgerCommand::Sessions { json } => {
            let doc = ledger
                .query(Box::new(|app: &App| {
                    thinkledger::tools::sessions_document(app.state())
                }))
                .await?;
            sessions(&doc, json, &mut out)?;
            Ok(0)
        }
        LedgerCommand::Export { session, json } => {
            export(ledger, &session, json, &mut out).await?;
            Ok(0)
        }
        LedgerCommand::Replay {
            session,
            reexecute,
            json,
            ..
        } => {
            let id = session_id(ledger, &session).await?;
            let output = ledger
                .inspect(move |view| {
                    replay::replay_session(view, &id, reexecute.then_some(&config))
                })
                .await??;
            if json {
                writeln!(out, "{}", serde_json::to_string_pretty(&output)?)?;
            } else {
                write!(out, "{}", replay::render_replay_text(&output))?;
            }
            let diverged = output.reexecution.as_ref().is_some_and(|r| r.diverged > 0);
            Ok(if diverged { 2 } else { 0 })
        }
        LedgerCommand::Diff {
            session_a,
            session_b,
            json,
        } => {
            diff_sessions(ledger, &session_a, &session_b, json, &mut out).await?;
            Ok(0)
        }
        LedgerCommand::Audit {
            session,
            from_seq,
            to_seq,
            since_checkpoint,
            output,
        } => {
            let session = match session {
                Some(raw) => Some(session_id(ledger, &raw).await?.as_str().to_owned()),
                None => None,
            };
            super::audit::audit(
                ledger,
                super::audit::AuditRequest {
                    selection: super::audit::selection(session.as_deref(), from_seq, to_seq)?,
                    since_checkpoint,
                    output,
                    timestamps: kept_timestamps(place)?,
                },
                io,
            )
            .await
        }
    }
}

/// `verify`: the whole log, as it stands (through the serving process: as of its latest
/// durable batch, read beside its writer), against the checkpoints signed up to there.
async fn verify(
    served: Option<&LedgerHandle<App>>,
    place: &LedgerPlace,
    json: bool,
    kept: &[PathBuf],
    pubkey: Option<&str>,
    io: &Io,
) -> anyhow::Result<u8> {
    let given = match pubkey {
        Some(key) => Some(NoteVerifier::from_vkey(key.trim()).map_err(|e| {
            anyhow::anyhow!(
                "--pubkey {key:?} is not a verifier key ({e}); give it as `thinkledger key` \
                 printed it, e.g. thinkledger/<ledger id>+<hash>+<key>"
            )
        })?),
        None => None,
    };
    let mut kept_checkpoints = Vec::new();
    for path in kept {
        let note = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the checkpoint {}", path.display()))?;
        kept_checkpoints.push(kept_checkpoint(&note).with_context(|| {
            format!("{} does not hold a signed checkpoint note", path.display())
        })?);
    }
    let beside = match served {
        Some(ledger) => ledger.read_only().await?,
        None => None,
    };
    let (store, checkpoints) = match beside {
        Some(store) => {
            use thinkledger::ledger::notary::{CHECKPOINTS_FILE, read_checkpoints};
            let last = store.last_seq()?.unwrap_or(0);
            let mut signed =
                read_checkpoints(&server::ledger_dir(&place.data_dir).join(CHECKPOINTS_FILE))?;
            signed.retain(|c| c.checkpoint.size() <= last);
            (store, signed)
        }
        None => server::open_for_reading(place)?,
    };
    let key = server::key_path(&place.data_dir);
    let verifier = match (given, store.meta()?) {
        (Some(given), _) => Some(given),
        (None, Some(meta)) if key.exists() => {
            Some(keyfile::load_or_create(&key, &meta.ledger_id)?.verifier())
        }
        _ => None,
    };
    let progress = io.progress;
    let report = tokio::task::spawn_blocking(move || {
        let bar = super::audit::progress_bar("verifying", progress);
        let report = verify_with_progress(
            &store,
            &checkpoints,
            &kept_checkpoints,
            verifier.as_ref(),
            &|done, all| {
                bar.set_length(all);
                bar.set_position(done);
            },
        );
        bar.finish_and_clear();
        report
    })
    .await??;
    let mut out = io.out.writer();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else if report.is_intact() {
        writeln!(
            out,
            "ledger {} intact: {} events, {} text references checked against their texts, {} \
             to erased texts, {} signed checkpoints hold, head {}",
            report.ledger_id.as_deref().unwrap_or("(new)"),
            report.events,
            report.texts_verified,
            report.texts_erased,
            report.checkpoints_verified,
            report.head_hash.as_deref().unwrap_or("(empty)")
        )?;
    } else {
        writeln!(
            out,
            "ledger {} FAILED verification: {} problem(s) in {} events",
            report.ledger_id.as_deref().unwrap_or("?"),
            report.problems.len(),
            report.events
        )?;
        for p in &report.problems {
            writeln!(out, "  seq {}: {} — {}", p.seq, p.code, p.detail)?;
        }
    }
    Ok(if report.is_intact() { 0 } else { 2 })
}

/// A checkpoint someone kept: a signed note whose body is a checkpoint.
pub fn kept_checkpoint(note: &str) -> anyhow::Result<SignedCheckpoint> {
    let note = kept_note(note);
    let body = note
        .find("\n\n")
        .map(|i| &note[..=i])
        .context("no blank line before the signatures")?;
    Ok(SignedCheckpoint {
        checkpoint: Checkpoint::parse_body(body)?,
        note: note.into_owned(),
        signed_at: String::new(),
    })
}

/// What an `erase` removes.
enum Erasing {
    Session(String),
    Commitments(Vec<String>),
    User(String),
}

async fn erase(
    ledger: &LedgerHandle<App>,
    offline: bool,
    place: &LedgerPlace,
    what: Erasing,
    reason: String,
    principal: String,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<u8> {
    let mut arguments = serde_json::json!({ "reason": reason });
    match what {
        Erasing::Session(session) => {
            let session = match session_id(ledger, &session).await {
                Ok(id) => id.as_str().to_owned(),
                // Refused and recorded by the erasure itself, as before.
                Err(_) => session,
            };
            arguments["sessionId"] = Value::String(session);
        }
        Erasing::Commitments(commitments) => {
            arguments["commitments"] = serde_json::json!(commitments);
        }
        Erasing::User(user) => arguments["userId"] = Value::String(user),
    }
    let actor = Actor {
        principal,
        transport: "cli".into(),
        client_name: Some("thinkledger".into()),
        client_version: Some(env!("CARGO_PKG_VERSION").into()),
        role: Default::default(),
        user_ids: Vec::new(),
    };
    let mut command = AppCommand::tool_call(
        ERASE_TOOL,
        arguments,
        actor,
        SessionId::random(),
        SystemEffects.prepare(),
    );
    command.admin = true;
    command.refused_in = None;
    let committed = ledger.submit(command).await?;
    // The memory index beside the ledger is a cache that may hold an erased memory's text. A
    // serving process purges it as it folds the erasure; a ledger opened for this command
    // alone drops it, and the next start rebuilds it.
    if offline && committed.status == OutcomeStatus::Ok {
        let index = server::memory_index_dir(&place.data_dir);
        match std::fs::remove_dir_all(&index) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => bail!(
                "the erasure is recorded, but the memory index in {} could not be removed \
                 ({e}): it may still hold erased text; remove that directory before the \
                 server starts again",
                index.display()
            ),
            _ => {}
        }
    }
    if committed.status == OutcomeStatus::Ok {
        if let Some(memories) = committed.body["memories"].as_u64().filter(|n| *n > 0) {
            writeln!(
                out,
                "erased {memories} memory(ies) of {}",
                committed.body["userId"]
            )?;
        }
        writeln!(
            out,
            "erased {} text(s) (event {}); their bytes and salts are gone from disk, and \
             `thinkledger verify` counts the events' references to them as references to \
             erased texts",
            committed.body["erased"], committed.seq
        )?;
        Ok(0)
    } else {
        writeln!(
            out,
            "nothing erased: {} ({}); the refusal is recorded as event {}",
            committed.body["error"].as_str().unwrap_or_default(),
            committed.body["suggestion"].as_str().unwrap_or_default(),
            committed.seq
        )?;
        Ok(2)
    }
}

fn sessions(doc: &Value, json: bool, out: &mut (dyn Write + Send)) -> anyhow::Result<()> {
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(doc)?)?;
        return Ok(());
    }
    let sessions = doc["sessions"].as_array().cloned().unwrap_or_default();
    if sessions.is_empty() {
        writeln!(out, "no sessions yet")?;
    }
    for s in sessions {
        writeln!(
            out,
            "{}  {:<6}  {:>4} thoughts  {:>2} branches  {:>4} calls  started {}",
            s["sessionId"].as_str().unwrap_or_default(),
            s["status"].as_str().unwrap_or_default(),
            s["thoughts"],
            s["branches"].as_array().map_or(0, Vec::len),
            s["events"],
            s["startedAt"].as_str().unwrap_or_default(),
        )?;
    }
    Ok(())
}

async fn export(
    ledger: &LedgerHandle<App>,
    raw: &str,
    json: bool,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<()> {
    let id = session_id(ledger, raw).await?;
    let options = ExportOptions {
        include_branches: true,
        branch_id: None,
    };
    let rendered = ledger
        .query(
            // The export, null for no such session, or why it could not be read back (an
            // object holding `unreadable`).
            Box::new(move |state: &App| match state.state().session(&id) {
                Ok(None) => Value::Null,
                Ok(Some(s)) if json => export_json::render(&s, &options),
                Ok(Some(s)) => Value::String(markdown::render(&s, &options)),
                Err(e) => serde_json::json!({ "unreadable": e.to_string() }),
            }),
        )
        .await?;
    if let Some(reason) = rendered.get("unreadable").and_then(Value::as_str) {
        bail!("{reason}; run `thinkledger verify`");
    }
    match rendered {
        Value::Null => bail!("no session {raw} in this ledger; `thinkledger sessions` lists them"),
        Value::String(text) => write!(out, "{text}")?,
        other => writeln!(out, "{}", serde_json::to_string_pretty(&other)?)?,
    }
    Ok(())
}

/// The session `raw` names: a whole id, or (as git takes a commit) the start of exactly one
/// session's id, four characters or more.
async fn session_id(ledger: &LedgerHandle<App>, raw: &str) -> anyhow::Result<SessionId> {
    if let Some(id) = SessionId::parse(raw) {
        return Ok(id);
    }
    let prefix = raw.trim().to_ascii_lowercase();
    if prefix.len() < 4 || !prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        bail!(
            "\"{raw}\" is not a session id (nor the start of one: give at least 4 of its first \
             characters); `thinkledger sessions` lists them"
        );
    }
    let found = ledger
        .query(Box::new(move |app: &App| {
            Value::from(
                app.state()
                    .heads()
                    .filter(|s| s.id.as_str().starts_with(&prefix))
                    .take(6)
                    .map(|s| s.id.as_str().to_owned())
                    .collect::<Vec<_>>(),
            )
        }))
        .await?;
    let found: Vec<&str> = found
        .as_array()
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    match found.as_slice() {
        [one] => SessionId::parse(one).context("a listed session id"),
        [] => bail!("no session id starts with \"{raw}\"; `thinkledger sessions` lists them"),
        many => bail!(
            "\"{raw}\" starts {} session ids ({}{}): give more of it",
            if many.len() > 5 {
                "more than 5".to_owned()
            } else {
                many.len().to_string()
            },
            many.iter().take(5).copied().collect::<Vec<_>>().join(", "),
            if many.len() > 5 { ", …" } else { "" }
        ),
    }
}

async fn diff_sessions(
    ledger: &LedgerHandle<App>,
    a: &str,
    b: &str,
    json: bool,
    out: &mut (dyn Write + Send),
) -> anyhow::Result<()> {
    let (id_a, id_b) = (session_id(ledger, a).await?, session_id(ledger, b).await?);
    let doc = ledger
        .query(Box::new(move |state: &App| {
            match (state.state().session(&id_a), state.state().session(&id_b)) {
                (Ok(Some(x)), Ok(Some(y))) => {
                    let d = diff::diff(&x, &y);
                    serde_json::json!({ "diff": d, "text": diff::render_text(&d) })
                }
                (Err(e), _) | (_, Err(e)) => serde_json::json!({ "unreadable": e.to_string() }),
                (Ok(None), _) => serde_json::json!({ "missing": id_a.as_str() }),
                (_, Ok(None)) => serde_json::json!({ "missing": id_b.as_str() }),
            }
        }))
        .await?;
    if let Some(missing) = doc.get("missing").and_then(Value::as_str) {
        bail!("no session {missing} in this ledger; `thinkledger sessions` lists them");
    }
    if let Some(reason) = doc.get("unreadable").and_then(Value::as_str) {
        bail!("{reason}; run `thinkledger verify`");
    }
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&doc["diff"])?)?;
    } else {
        write!(out, "{}", doc["text"].as_str().unwrap_or_default())?;
    }
    Ok(())
}

/// The latest time-stamp tokens kept beside the ledger's checkpoints (in the data directory
/// or the database).
fn kept_timestamps(place: &LedgerPlace) -> anyhow::Result<Vec<KeptTimestamp>> {
    Ok(server::timestamp_log(place)?.recent()?)
}
