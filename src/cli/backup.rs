//! `thinkledger backup DEST`: a consistent, verified copy of the ledger in a new data
//! directory, taken while servers run or not.
//!
//! What is consistent: the log as of one durable batch — its events up to that batch's last
//! seq, the texts of the frames up to it (`Store::read_only`, taken by the writer between two
//! batches, read beside it while calls go on), and the signed checkpoints no larger than it;
//! with them the signing key (the copy signs on as the same ledger), the bearer tokens, the
//! time-stamp tokens of the checkpoints copied and the audit stream's cursors (set back to the
//! copy's head where they were past it). Not copied, because they are derived and rebuilt: the
//! projections' snapshot and the memory index. The copy is written by the store's own code
//! (`ledger::migrate::copy_ledger`) into `DEST.partial`, verified as `thinkledger verify`
//! would, and only then renamed to DEST: a DEST that exists is always a whole, verified copy.
//!
//! An erasure carried out while the texts are read can leave the copy an event whose text is
//! gone without the erasure's event (it came after the copy's head): the copy then fails
//! verification with `text_missing` alone, and is taken again from a newer head.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use thinkledger::app::App;
use thinkledger::ledger::migrate::{Copied, copy_ledger};
use thinkledger::ledger::notary::{CHECKPOINTS_FILE, read_checkpoints};
use thinkledger::ledger::timestamps::{append_timestamp, read_timestamps};
use thinkledger::ledger::{
    LedgerHandle, SignedCheckpoint, Store, VerifyReport, keyfile, verify_with_checkpoints,
};
use thinkledger::server::audit_stream::Cursors;
use thinkledger::server::auth::TOKENS_FILE;
use thinkledger::server::{self, LedgerPlace};

use super::ledger::Io;

/// How many times a copy that an erasure raced is taken again.
const ATTEMPTS: u32 = 3;

/// What a verified copy holds.
struct Made {
    copied: Copied,
    report: VerifyReport,
    tokens: bool,
    key: bool,
}

/// Copies the ledger at `place` (through `served`, the ledger this process serves, when it
/// serves it) into the new data directory `dest`; its exit status.
pub async fn backup(
    served: Option<&LedgerHandle<App>>,
    place: &LedgerPlace,
    dest: &Path,
    io: &Io,
) -> anyhow::Result<u8> {
    if let Some(url) = &place.store {
        bail!(
            "the ledger is in PostgreSQL ({}): back the database up with its own tools — \
             `pg_dump --format=custom` takes one consistent snapshot of the thinkledger_* \
             tables while nodes write, a base backup with WAL archiving gives point-in-time \
             recovery — and keep the data directory's signing.key with it (the database does \
             not hold the key; bearer tokens are in the database). docs/operations.md says how \
             to restore",
            thinkledger::ledger::pg::shown(url)
        );
    }
    let partial = partial_path(dest)?;
    check_destination(dest, &partial)?;
    for attempt in 1..=ATTEMPTS {
        let (store, checkpoints) = source(served, place).await?;
        let (from, to, progress) = (place.data_dir.clone(), partial.clone(), io.progress);
        let made = tokio::task::spawn_blocking(move || {
            let bar = super::audit::progress_bar("copying", progress);
            let made = copy_into(store.as_ref(), &checkpoints, &from, &to, &|done, all| {
                bar.set_length(all);
                bar.set_position(done);
            });
            bar.finish_and_clear();
            made
        })
        .await?;
        let made = match made {
            Ok(made) => made,
            Err(e) => {
                remove_partial(&partial);
                return Err(e.context(format!(
                    "the backup to {} failed; nothing was put there",
                    dest.display()
                )));
            }
        };
        if made.report.is_intact() {
            put_in_place(&partial, dest)?;
            let mut out = io.out.writer();
            writeln!(
                out,
                "backed up ledger {} to {}: {} events (head {}), {} texts, {} signed \
                 checkpoints{}{}; the copy verifies. Serve it with `thinkledger --data-dir {} \
                 serve`",
                made.report.ledger_id.as_deref().unwrap_or("?"),
                dest.display(),
                made.copied.events,
                made.report.head_hash.as_deref().unwrap_or("(empty)"),
                made.copied.texts,
                made.copied.checkpoints,
                if made.key { ", the signing key" } else { "" },
                if made.tokens {
                    ", the bearer tokens"
                } else {
                    ""
                },
                dest.display(),
            )?;
            return Ok(0);
        }
        remove_partial(&partial);
        let raced = served.is_some()
            && made
                .report
                .problems
                .iter()
                .all(|p| p.code == "text_missing");
        if raced && attempt < ATTEMPTS {
            writeln!(
                io.err.writer(),
                "thinkledger: an erasure ran while the texts were copied; copying again from \
                 the ledger's new head"
            )?;
            continue;
        }
        let mut out = io.out.writer();
        writeln!(
            out,
            "the copy does not verify ({} problem(s)); nothing was put at {}. Run `thinkledger \
             verify` on the ledger:",
            made.report.problems.len(),
            dest.display()
        )?;
        for p in &made.report.problems {
            writeln!(out, "  seq {}: {} — {}", p.seq, p.code, p.detail)?;
        }
        return Ok(2);
    }
    unreachable!("the last attempt returns")
}

/// `DEST.partial`, beside DEST.
fn partial_path(dest: &Path) -> anyhow::Result<PathBuf> {
    let name = dest
        .file_name()
        .with_context(|| format!("{} names no directory to make", dest.display()))?;
    let mut partial = name.to_os_string();
    partial.push(".partial");
    Ok(dest.with_file_name(partial))
}

/// Refuses a DEST that holds anything, and a `DEST.partial` left by a backup that stopped.
fn check_destination(dest: &Path, partial: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{} exists and is not empty: backup makes a new data directory; give a path \
                     that does not exist yet (nothing was copied)",
                    dest.display()
                );
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(anyhow::Error::from(e).context(format!(
                "{} cannot be a new data directory (nothing was copied)",
                dest.display()
            )));
        }
    }
    if partial.exists() {
        bail!(
            "{} exists: a backup that did not finish left it. Remove it and run backup again \
             (nothing was copied)",
            partial.display()
        );
    }
    Ok(())
}

/// The log to copy and its checkpoints: beside the writer of the ledger this process serves
/// (as of its latest durable batch), or the ledger opened here.
async fn source(
    served: Option<&LedgerHandle<App>>,
    place: &LedgerPlace,
) -> anyhow::Result<(Box<dyn Store>, Vec<SignedCheckpoint>)> {
    let ledger_dir = server::ledger_dir(&place.data_dir);
    match served {
        Some(ledger) => {
            let store = ledger
                .read_only()
                .await?
                .context("this ledger's store cannot be read beside its writer")?;
            let last = store.last_seq()?.unwrap_or(0);
            let mut checkpoints = read_checkpoints(&ledger_dir.join(CHECKPOINTS_FILE))?;
            checkpoints.retain(|c| c.checkpoint.size() <= last);
            Ok((store, checkpoints))
        }
        None => {
            if !ledger_dir.exists() {
                bail!(
                    "{} holds no ledger (no ledger/ directory in it)",
                    place.data_dir.display()
                );
            }
            Ok(server::open_for_reading(place)?)
        }
    }
}

/// Copies `store` (with `checkpoints`) and the files that go with it from the data directory
/// `from` into the new data directory `to`, then verifies the copy.
fn copy_into(
    store: &dyn Store,
    checkpoints: &[SignedCheckpoint],
    from: &Path,
    to: &Path,
    progress: &dyn Fn(u64, u64),
) -> anyhow::Result<Made> {
    let meta = store
        .meta()?
        .with_context(|| format!("{} holds no ledger yet", from.display()))?;
    let key_path = server::key_path(from);
    let signer = keyfile::load(&key_path, &meta.ledger_id)
        .with_context(|| format!("the signing key {}", key_path.display()))?;
    if signer.is_none() && !checkpoints.is_empty() {
        bail!(
            "{} holds no signing key of ledger {}, whose {} checkpoint(s) it signed: a copy \
             without it could not sign on, nor its checkpoints be checked",
            key_path.display(),
            meta.ledger_id,
            checkpoints.len()
        );
    }
    thinkledger::ledger::private::dir(to)?;
    let place = LedgerPlace {
        data_dir: to.to_path_buf(),
        store: None,
    };
    let (mut copy, mut copied_checkpoints) = server::open_empty(&place)?;
    let copied = copy_ledger(
        store,
        checkpoints,
        copy.as_mut(),
        copied_checkpoints.as_mut(),
        progress,
    )?;
    if signer.is_some() {
        copy_private(&key_path, &server::key_path(to))?;
    }
    // The time-stamp tokens of the checkpoints copied.
    let notes: std::collections::HashSet<&str> =
        checkpoints.iter().map(|c| c.note.as_str()).collect();
    for kept in read_timestamps(&server::ledger_dir(from))? {
        if notes.contains(kept.note.as_str()) {
            append_timestamp(&server::ledger_dir(to), &kept)?;
        }
    }
    let tokens = from.join(TOKENS_FILE).exists();
    if tokens {
        copy_private(&from.join(TOKENS_FILE), &to.join(TOKENS_FILE))?;
    }
    let verifier = signer.as_ref().map(|s| s.verifier());
    let report = verify_with_checkpoints(
        copy.as_ref(),
        &copied_checkpoints.read()?,
        &[],
        verifier.as_ref(),
    )?;
    let cursors = Cursors::load(from)?;
    if !cursors.streams.is_empty() {
        let head = store.last_seq()?.unwrap_or(0);
        cursors
            .clamped(head, report.head_hash.as_deref().unwrap_or_default())
            .save(to)?;
    }
    // Closed (the index made durable), then the directory's entries made durable.
    drop(copy);
    drop(copied_checkpoints);
    std::fs::File::open(to)?.sync_all()?;
    Ok(Made {
        copied,
        report,
        tokens,
        key: signer.is_some(),
    })
}

/// Copies a file that only its owner may read (mode 0600), durably.
fn copy_private(from: &Path, to: &Path) -> anyhow::Result<()> {
    let bytes = std::fs::read(from).with_context(|| format!("cannot read {}", from.display()))?;
    let mut file = thinkledger::ledger::private::options()
        .create_new(true)
        .write(true)
        .open(to)
        .with_context(|| format!("cannot write {}", to.display()))?;
    file.write_all(&bytes)?;
    file.sync_all()?;
    Ok(())
}

/// Renames the verified copy to DEST (an empty directory there is replaced) and makes the
/// rename durable.
fn put_in_place(partial: &Path, dest: &Path) -> anyhow::Result<()> {
    std::fs::rename(partial, dest).with_context(|| {
        format!(
            "the copy verifies but could not be renamed from {} to {}",
            partial.display(),
            dest.display()
        )
    })?;
    let parent = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::File::open(parent)?.sync_all()?;
    Ok(())
}

/// Takes a copy that failed back.
fn remove_partial(partial: &Path) {
    if let Err(e) = std::fs::remove_dir_all(partial)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(path = %partial.display(), error = %e, "could not remove a failed copy; remove it by hand");
    }
}
