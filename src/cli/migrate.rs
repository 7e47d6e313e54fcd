//! `thinkledger migrate`: a ledger copied between a data directory and PostgreSQL (either way),
//! verified, and taken back when the copy fails.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli;
use anyhow::{Context, bail};
use thinkledger::ledger::keyfile;
use thinkledger::server::{self, LedgerPlace};

/// `thinkledger migrate`: copies the ledger at `from` into `to` (each a data directory or a
/// postgres:// URL), then verifies the copy. The signing key goes with a data directory: a
/// database's ledger is signed with the key in the data directory of the servers using it
/// (`data_dir` here). Everything the copy needs is checked before anything is written, and a
/// copy that fails or does not verify is taken back: the destination is left as it was.
pub fn migrate(data_dir: &Path, from: &str, to: &str) -> anyhow::Result<ExitCode> {
    let place = |raw: &str| -> LedgerPlace {
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
    };
    let (from, to) = (place(from), place(to));
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
    // Everything the copy needs, checked before anything is written.
    let (source, checkpoints) = server::open_for_reading(&from)?;
    let meta = source
        .meta()?
        .with_context(|| format!("{} holds no ledger", from.shown()))?;
    let (key_from, key_to) = (
        server::key_path(&from.data_dir),
        server::key_path(&to.data_dir),
    );
    let signer = keyfile::load(&key_from, &meta.ledger_id)
        .with_context(|| format!("the source's signing key {}", key_from.display()))?;
    if signer.is_none() && !checkpoints.is_empty() {
        bail!(
            "{} holds no signing key of ledger {}, whose {} checkpoint(s) it signed: the key \
             goes with the ledger, so name the data directory that holds it (--data-dir, for a \
             ledger in a database); nothing was copied",
            key_from.display(),
            meta.ledger_id,
            checkpoints.len()
        );
    }
    let key_copied = key_from != key_to && signer.is_some() && !key_to.exists();
    if key_from != key_to {
        if let Err(e) = keyfile::load(&key_to, &meta.ledger_id) {
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
    let ledger_dir_existed = to.store.is_none() && server::ledger_dir(&to.data_dir).exists();
    // The destination stays open until the copy is verified: a directory's store opened again
    // at once in this process would find its lock not yet let go of.
    let (mut copy, mut copied_checkpoints) = server::open_empty(&to)?;
    if copy.meta()?.is_some()
        || copy.last_seq()?.is_some()
        || !copied_checkpoints.read()?.is_empty()
    {
        bail!(
            "{} already holds a ledger: migrate copies into an empty one (a new directory, or \
             a new database); nothing was copied",
            to.shown()
        );
    }
    let copied = (|| -> anyhow::Result<_> {
        let copied = {
            let bar = cli::audit::progress_bar("copying", true);
            let copied = thinkledger::ledger::migrate::copy_ledger(
                source.as_ref(),
                &checkpoints,
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
        if key_copied {
            std::fs::copy(&key_from, &key_to)
                .with_context(|| format!("cannot copy the signing key to {}", key_to.display()))?;
        }
        let copied_checkpoints = copied_checkpoints.read()?;
        let verifier = signer.as_ref().map(|s| s.verifier());
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
    })();
    drop(source);
    let (copied, report) = match copied {
        Ok(done) => done,
        Err(e) => {
            drop(copy);
            drop(copied_checkpoints);
            let undone = undo_copy(&to, ledger_dir_existed, key_copied.then_some(&key_to));
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
