//! `thinkledger migrate`: a ledger copied between a data directory and PostgreSQL (either way),
//! verified, and taken back when the copy fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli;
use anyhow::{Context, bail};
use thinkledger::ledger::checkpoint::NoteSigner;
use thinkledger::ledger::migrate::Copied;
use thinkledger::ledger::{SignedCheckpoint, Store, VerifyReport, keyfile};
use thinkledger::server::{self, Destination, LedgerPlace};

/// Where `raw` names a ledger: a postgres:// URL (its key in `data_dir`), else a data directory.
fn place(data_dir: &Path, raw: &str) -> LedgerPlace {
    if thinkledger::ledger::is_postgres_url(raw) {
        LedgerPlace {
            data_dir: data_dir.to_path_buf(),
            store: Some(raw.to_owned()),
        }
    } else {
        LedgerPlace {
            data_dir: PathBuf::from(raw),
            store: None,
        }
    }
}

/// The two ledgers `--from` and `--to` name, refused when the build has no PostgreSQL store
/// for them, when the source holds no ledger, or when they are the same ledger.
fn places(data_dir: &Path, from: &str, to: &str) -> anyhow::Result<(LedgerPlace, LedgerPlace)> {
    let (from, to) = (place(data_dir, from), place(data_dir, to));
    if from.store.is_some() || to.store.is_some() {
        thinkledger::ledger::pg::check_built()?;
    }
    if from.store.is_none() && !server::ledger_dir(&from.data_dir).exists() {
        bail!(
            "{} holds no ledger (no ledger/ directory in it)",
            from.data_dir.display()
        );
    }
    if from.store == to.store && (from.store.is_some() || from.data_dir == to.data_dir) {
        bail!("--from and --to name the same ledger");
    }
    Ok((from, to))
}

/// The signing key's two places, and what goes between them.
struct Keys {
    /// The source's key file.
    from: PathBuf,
    /// Where the copy's servers will look for it.
    to: PathBuf,
    /// The source's key, if it has one.
    signer: Option<NoteSigner>,
    /// Whether the copy places the key (it lives elsewhere, and none is there yet), so that a
    /// failed copy takes it back.
    copied: bool,
}

/// The signing key checked before anything is written: the source's key must be there when it
/// signed checkpoints, and the destination's place must be able to take it.
fn signing_key(
    from: &LedgerPlace,
    to: &LedgerPlace,
    ledger_id: &str,
    checkpoints: usize,
) -> anyhow::Result<Keys> {
    let (key_from, key_to) = (
        server::key_path(&from.data_dir),
        server::key_path(&to.data_dir),
    );
    let signer = keyfile::load(&key_from, ledger_id)
        .with_context(|| format!("the source's signing key {}", key_from.display()))?;
    if signer.is_none() && checkpoints != 0 {
        bail!(
            "{} holds no signing key of ledger {}, whose {} checkpoint(s) it signed: the key \
             goes with the ledger, so name the data directory that holds it (--data-dir, for a \
             ledger in a database); nothing was copied",
            key_from.display(),
            ledger_id,
            checkpoints
        );
    }
    let key_copied = key_from != key_to && signer.is_some() && !key_to.exists();
    if key_from != key_to {
        if let Err(e) = keyfile::load(&key_to, ledger_id) {
            bail!(
                "{} cannot take this ledger's signing key ({e}); give the copy a data directory \
                 of its own (--data-dir for a database, or another --to); nothing was copied",
                key_to.display()
            );
        }
        if let Some(dir) = key_to.parent() {
            thinkledger::ledger::private::dir(dir).with_context(|| {
                format!(
                    "cannot make {} for the signing key; nothing was copied",
                    dir.display()
                )
            })?;
        }
    }
    Ok(Keys {
        from: key_from,
        to: key_to,
        signer,
        copied: key_copied,
    })
}

/// Copies the ledger (with a progress bar), places the signing key when it goes along, and
/// verifies the copy against its checkpoints and key.
fn copy_and_verify(
    source: &dyn Store,
    checkpoints: &[SignedCheckpoint],
    destination: &mut Destination,
    keys: &Keys,
) -> anyhow::Result<(Copied, VerifyReport)> {
    let (copy, copied_checkpoints) = destination;
    let copied = {
        let bar = cli::audit::progress_bar("copying", true);
        let copied = thinkledger::ledger::migrate::copy_ledger(
            source,
            checkpoints,
            copy.as_mut(),
            copied_checkpoints.as_mut(),
            &|done, all| {
                bar.set_length(all);
                bar.set_position(done);
            },
        );
        bar.finish_and_clear();
        copied?
    };
    if keys.copied {
        std::fs::copy(&keys.from, &keys.to)
            .with_context(|| format!("cannot copy the signing key to {}", keys.to.display()))?;
    }
    let copied_checkpoints = copied_checkpoints.read()?;
    let verifier = keys.signer.as_ref().map(|s| s.verifier());
    let report = thinkledger::ledger::verify_with_checkpoints(
        copy.as_ref(),
        &copied_checkpoints,
        &[],
        verifier.as_ref(),
    )?;
    if !report.is_intact() {
        bail!(
            "the copy does not verify: {} problem(s), the first: {:?}",
            report.problems.len(),
            report.problems.first()
        );
    }
    Ok((copied, report))
}

/// `thinkledger migrate`: copies the ledger at `from` into `to` (each a data directory or a
/// postgres:// URL), then verifies the copy. The signing key goes with a data directory: a
/// database's ledger is signed with the key in the data directory of the servers using it
/// (`data_dir` here). Everything the copy needs is checked before anything is written, and a
/// copy that fails or does not verify is taken back: the destination is left as it was.
pub fn migrate(data_dir: &Path, from: &str, to: &str) -> anyhow::Result<ExitCode> {
    let (from, to) = places(data_dir, from, to)?;
    // Everything the copy needs, checked before anything is written.
    let (source, checkpoints) = server::open_for_reading(&from)?;
    let meta = source
        .meta()?
        .with_context(|| format!("{} holds no ledger", from.shown()))?;
    let keys = signing_key(&from, &to, &meta.ledger_id, checkpoints.len())?;
    let ledger_dir_existed = to.store.is_none() && server::ledger_dir(&to.data_dir).exists();
    // The destination stays open until the copy is verified: a directory's store opened again
    // at once in this process would find its lock not yet let go of.
    let mut destination = server::open_empty(&to)?;
    if destination.0.meta()?.is_some()
        || destination.0.last_seq()?.is_some()
        || !destination.1.read()?.is_empty()
    {
        bail!(
            "{} already holds a ledger: migrate copies into an empty one (a new directory, or \
             a new database); nothing was copied",
            to.shown()
        );
    }
    let copied = copy_and_verify(source.as_ref(), &checkpoints, &mut destination, &keys);
    drop(source);
    let (copied, report) = match copied {
        Ok(done) => done,
        Err(e) => {
            drop(destination);
            let undone = undo_copy(&to, ledger_dir_existed, keys.copied.then_some(&keys.to));
            return Err(e.context(match undone {
                Ok(()) => format!(
                    "the copy to {} failed and was taken back: the destination is as it was",
                    to.shown()
                ),
                Err(why) => format!(
                    "the copy to {} failed, and taking it back failed too ({why:#}): empty the \
                     destination (a new directory, or a new database) before running migrate \
                     again",
                    to.shown()
                ),
            }));
        }
    };
    writeln!(
        std::io::stdout().lock(),
        "copied ledger {} to {}: {} events, {} texts, {} signed checkpoints; the copy verifies \
         (head {})",
        report.ledger_id.as_deref().unwrap_or("?"),
        to.shown(),
        copied.events,
        copied.texts,
        copied.checkpoints,
        report.head_hash.as_deref().unwrap_or("(empty)")
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Takes back a failed copy into `to`: the ledger directory it made (or the database's rows)
/// and the signing key it placed.
fn undo_copy(
    to: &LedgerPlace,
    ledger_dir_existed: bool,
    key: Option<&PathBuf>,
) -> anyhow::Result<()> {
    match &to.store {
        Some(url) => thinkledger::ledger::PgStore::open(url)?.empty_out()?,
        None if !ledger_dir_existed => {
            let dir = server::ledger_dir(&to.data_dir);
            match std::fs::remove_dir_all(&dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(anyhow::Error::from(e).context(dir.display().to_string()));
                }
                _ => {}
            }
        }
        None => {}
    }
    if let Some(key) = key {
        std::fs::remove_file(key).with_context(|| key.display().to_string())?;
    }
    Ok(())
}
