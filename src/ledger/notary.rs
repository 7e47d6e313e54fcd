//! Signed checkpoints: the ledger's notary signs C2SP checkpoints of the Merkle tree over its
//! events and keeps every one it signed durably before the checkpoint is handed to anyone: in
//! `checkpoints.jsonl` beside the embedded log, one JSON line each, or in the ledger's
//! database ([`CheckpointLog`]).
//!
//! Owns the rule that the ledger never signs two checkpoints that contradict each other: a new
//! checkpoint is signed only when a consistency proof from the latest signed one verifies, and a
//! log that does not extend its own signed checkpoints is refused when the ledger opens. It
//! does not know events or the store; the writer hands it tree heads and proofs.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::LedgerError;
use super::checkpoint::{Checkpoint, NoteSigner, NoteVerifier, open_note, sign_checkpoint};
use super::merkle::{Blake3Hasher, MerkleError, MerkleTree, NodeHash, verify_consistency};
use super::problem_code::LogProblem;
use super::view::SignedCheckpoint;

/// The file of signed checkpoints inside a ledger directory.
pub const CHECKPOINTS_FILE: &str = "checkpoints.jsonl";

/// Events after which the writer signs a checkpoint even if no session closed.
pub const CHECKPOINT_EVERY_EVENTS: u64 = 1000;

/// One line of `checkpoints.jsonl`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Line {
    signed_at: String,
    note: String,
}

/// Why a stored checkpoint does not hold against the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointProblem {
    /// Tree size of the checkpoint concerned.
    pub size: u64,
    /// Stable code: `checkpoint_signature`, `checkpoint_beyond_log`, `checkpoint_mismatch`,
    /// `checkpoints_inconsistent`.
    pub code: LogProblem,
    pub detail: String,
}

/// Reads every checkpoint in `path` (none if the file does not exist). A torn last line — an
/// append that crashed before its fsync, so never handed out — is skipped; any other unreadable
/// line is an error.
pub fn read_checkpoints(path: &Path) -> Result<Vec<SignedCheckpoint>, LedgerError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    let mut lines = BufReader::new(file).split(b'\n').peekable();
    let mut n = 0;
    while let Some(line) = lines.next() {
        n += 1;
        let line = line?;
        let last = lines.peek().is_none();
        let parsed = serde_json::from_slice::<Line>(&line)
            .map_err(|e| e.to_string())
            .and_then(|l| parse_signed(l.signed_at, l.note));
        match parsed {
            Ok(signed) => out.push(signed),
            Err(_) if last => break,
            Err(e) => {
                return Err(LedgerError::Corrupt(format!(
                    "{} line {n} is not a signed checkpoint: {e}",
                    path.display()
                )));
            }
        }
    }
    Ok(out)
}

/// A signed checkpoint from its stored note and signing time.
pub fn parse_signed(signed_at: String, note: String) -> Result<SignedCheckpoint, String> {
    let body = note.find("\n\n").map(|i| &note[..=i]).unwrap_or("");
    let checkpoint = Checkpoint::parse_body(body).map_err(|e| e.to_string())?;
    Ok(SignedCheckpoint {
        checkpoint,
        note,
        signed_at,
    })
}

/// Where a ledger keeps the checkpoints its notary signed: `checkpoints.jsonl` beside the
/// embedded log ([`CheckpointFile`]) or a table of the ledger's database.
pub trait CheckpointLog: Send + std::fmt::Debug {
    /// Every checkpoint kept, oldest first.
    fn read(&self) -> Result<Vec<SignedCheckpoint>, LedgerError>;
    /// Keeps `signed` durably before returning.
    fn append(&mut self, signed: &SignedCheckpoint) -> Result<(), LedgerError>;
}

/// `checkpoints.jsonl` in a ledger directory: one JSON line per checkpoint, appended and
/// fsynced.
#[derive(Debug)]
pub struct CheckpointFile {
    path: PathBuf,
    file: File,
}

impl CheckpointFile {
    /// Opens (or creates) `checkpoints.jsonl` in `ledger_dir`, cutting off a torn last line.
    pub fn open(ledger_dir: &Path) -> Result<Self, LedgerError> {
        let path = ledger_dir.join(CHECKPOINTS_FILE);
        let all = read_checkpoints(&path)?;
        let mut file = super::private::options()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)?;
        // Cut anything after the last complete line (a torn append).
        let complete: u64 = all
            .iter()
            .map(|s| {
                serde_json::to_vec(&Line {
                    signed_at: s.signed_at.clone(),
                    note: s.note.clone(),
                })
                .map(|v| v.len() as u64 + 1)
                .unwrap_or(0)
            })
            .sum();
        if file.metadata()?.len() != complete {
            file.set_len(complete)?;
            file.sync_all()?;
        }
        file.flush()?;
        if let Some(dir) = path.parent() {
            File::open(dir)?.sync_all()?;
        }
        Ok(Self { path, file })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl CheckpointLog for CheckpointFile {
    fn read(&self) -> Result<Vec<SignedCheckpoint>, LedgerError> {
        read_checkpoints(&self.path)
    }

    fn append(&mut self, signed: &SignedCheckpoint) -> Result<(), LedgerError> {
        let line = Line {
            signed_at: signed.signed_at.clone(),
            note: signed.note.clone(),
        };
        let mut bytes = serde_json::to_vec(&line)
            .map_err(|e| LedgerError::NotCanonicalizable(e.to_string()))?;
        bytes.push(b'\n');
        self.file.write_all(&bytes)?;
        self.file.sync_data()?;
        Ok(())
    }
}

/// Checks stored checkpoints against the log's tree: each signed by `verifier`, within the log,
/// with the log's root at its size, and each extending the one before.
pub fn check_checkpoints(
    checkpoints: &[SignedCheckpoint],
    verifier: &NoteVerifier,
    tree: &MerkleTree<Blake3Hasher>,
) -> Vec<CheckpointProblem> {
    let mut problems = Vec::new();
    let mut previous: Option<&Checkpoint> = None;
    for signed in checkpoints {
        let cp = &signed.checkpoint;
        let problem = |code, detail: String| CheckpointProblem {
            size: cp.size(),
            code,
            detail,
        };
        if let Err(e) = open_note(&signed.note, std::slice::from_ref(verifier)) {
            problems.push(problem(
                LogProblem::CheckpointSignature,
                format!("not signed by this ledger's key: {e}"),
            ));
        }
        if cp.origin() != verifier.name() {
            problems.push(problem(
                LogProblem::CheckpointSignature,
                format!(
                    "origin {} is not this ledger ({})",
                    cp.origin(),
                    verifier.name()
                ),
            ));
        }
        match tree.root_at(cp.size()) {
            Err(_) => problems.push(problem(
                LogProblem::CheckpointBeyondLog,
                format!(
                    "signed for {} events but the log holds {}: the log was truncated or \
                     rolled back",
                    cp.size(),
                    tree.len()
                ),
            )),
            Ok(root) if &root != cp.root() => problems.push(problem(
                LogProblem::CheckpointMismatch,
                format!(
                    "the log's first {} events do not have the signed root: they were altered \
                     or replaced",
                    cp.size()
                ),
            )),
            Ok(_) => {}
        }
        if let Some(before) = previous
            && (before.size() > cp.size()
                || (before.size() == cp.size() && before.root() != cp.root()))
        {
            problems.push(problem(
                LogProblem::CheckpointsInconsistent,
                format!(
                    "follows a checkpoint of size {} that it does not extend",
                    before.size()
                ),
            ));
        }
        previous = Some(cp);
    }
    problems
}

/// The ledger's notary: its signing key and the checkpoints it signed.
#[derive(Debug)]
pub struct Notary {
    signer: NoteSigner,
    log: Box<dyn CheckpointLog>,
    latest: Option<SignedCheckpoint>,
}

impl Notary {
    /// Opens (or creates) `checkpoints.jsonl` in `ledger_dir`, cutting off a torn last line.
    pub fn open(ledger_dir: &Path, signer: NoteSigner) -> Result<Self, LedgerError> {
        Self::with_log(signer, Box::new(CheckpointFile::open(ledger_dir)?))
    }

    /// A notary keeping its checkpoints in `log`.
    pub fn with_log(signer: NoteSigner, log: Box<dyn CheckpointLog>) -> Result<Self, LedgerError> {
        let latest = log.read()?.into_iter().last();
        Ok(Self {
            signer,
            log,
            latest,
        })
    }

    /// Every checkpoint signed so far, oldest first.
    pub fn checkpoints(&self) -> Result<Vec<SignedCheckpoint>, LedgerError> {
        self.log.read()
    }

    pub fn signer(&self) -> &NoteSigner {
        &self.signer
    }

    pub fn latest(&self) -> Option<&SignedCheckpoint> {
        self.latest.as_ref()
    }

    /// Checks every stored checkpoint against `tree` (at open); the ledger refuses to run on a
    /// log that does not extend what it signed.
    /// `beyond_ok`: checkpoints past the tree's end are skipped (a shared store, whose other
    /// writers may have signed events this one has not folded yet).
    pub fn check_log(
        &self,
        tree: &MerkleTree<Blake3Hasher>,
        beyond_ok: bool,
    ) -> Result<(), LedgerError> {
        let mut all = self.log.read()?;
        if beyond_ok {
            all.retain(|c| c.checkpoint.size() <= tree.len());
        }
        let problems = check_checkpoints(&all, &self.signer.verifier(), tree);
        match problems.first() {
            None => Ok(()),
            Some(p) => Err(LedgerError::Corrupt(format!(
                "checkpoint of size {}: {}",
                p.size, p.detail
            ))),
        }
    }

    /// Signs the head of `tree` unless the latest checkpoint already covers it, and returns the
    /// latest checkpoint. Refuses (and signs nothing) when the tree is not a consistent
    /// extension of the latest signed checkpoint.
    pub fn sign_head(
        &mut self,
        tree: &MerkleTree<Blake3Hasher>,
        signed_at: String,
    ) -> Result<SignedCheckpoint, LedgerError> {
        let size = tree.len();
        let root = tree.root();
        if let Some(latest) = &self.latest {
            let old = &latest.checkpoint;
            if old.size() == size && old.root() == &root {
                return Ok(latest.clone());
            }
            self.check_extends(old, size, &root, tree).map_err(|e| {
                LedgerError::Corrupt(format!(
                    "refusing to sign a checkpoint of size {size}: the log does not extend \
                         the checkpoint of size {} signed at {} ({e})",
                    old.size(),
                    latest.signed_at
                ))
            })?;
        }
        let checkpoint = Checkpoint::new(self.signer.name(), size, root, Vec::new())
            .map_err(|e| LedgerError::Corrupt(format!("checkpoint: {e}")))?;
        let note = sign_checkpoint(&self.signer, &checkpoint);
        let signed = SignedCheckpoint {
            checkpoint,
            note,
            signed_at,
        };
        self.log.append(&signed)?;
        self.latest = Some(signed.clone());
        Ok(signed)
    }

    fn check_extends(
        &self,
        old: &Checkpoint,
        size: u64,
        root: &NodeHash,
        tree: &MerkleTree<Blake3Hasher>,
    ) -> Result<(), MerkleError> {
        if old.size() == 0 {
            return if old.root() == &tree.root_at(0)? {
                Ok(())
            } else {
                Err(MerkleError::OldRootMismatch)
            };
        }
        let proof = tree.consistency_proof(old.size(), size)?;
        verify_consistency(&Blake3Hasher, old.size(), size, old.root(), root, &proof)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(n: u8) -> MerkleTree<Blake3Hasher> {
        MerkleTree::from_leaf_hashes(Blake3Hasher, (0..n).map(|i| [i; 32]))
    }

    #[test]
    fn signs_once_per_head_and_keeps_every_checkpoint_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let signer = NoteSigner::generate("thinkledger/t").unwrap();
        let vkey = signer.verifier().to_vkey();
        let mut notary = Notary::open(dir.path(), signer).unwrap();
        let first = notary.sign_head(&tree(3), "t1".into()).unwrap();
        let again = notary.sign_head(&tree(3), "t2".into()).unwrap();
        assert_eq!(first, again, "the same head is not signed twice");
        let second = notary.sign_head(&tree(5), "t3".into()).unwrap();
        assert_eq!(second.checkpoint.size(), 5);
        let signer = NoteSigner::from_skey(&notary.signer().to_skey()).unwrap();
        drop(notary);
        let notary = Notary::open(dir.path(), signer).unwrap();
        assert_eq!(notary.latest(), Some(&second));
        let all = read_checkpoints(&dir.path().join(CHECKPOINTS_FILE)).unwrap();
        assert_eq!(all.len(), 2);
        let verifier = NoteVerifier::from_vkey(&vkey).unwrap();
        assert!(check_checkpoints(&all, &verifier, &tree(5)).is_empty());
        assert!(notary.check_log(&tree(7), false).is_ok());
    }

    #[test]
    fn never_signs_a_head_that_contradicts_the_latest_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let signer = NoteSigner::generate("thinkledger/t").unwrap();
        let mut notary = Notary::open(dir.path(), signer).unwrap();
        notary.sign_head(&tree(4), "t".into()).unwrap();
        // A log with other leaves (a fork), a shorter log (a rollback).
        let forked = MerkleTree::from_leaf_hashes(Blake3Hasher, (0..6u8).map(|i| [i + 1; 32]));
        let err = notary.sign_head(&forked, "t".into()).unwrap_err();
        assert!(err.to_string().contains("does not extend"), "{err}");
        assert!(notary.sign_head(&tree(2), "t".into()).is_err());
        assert_eq!(notary.latest().unwrap().checkpoint.size(), 4);
        assert!(notary.check_log(&tree(2), false).is_err());
        assert!(notary.check_log(&forked, false).is_err());
        let problems = check_checkpoints(
            &notary.checkpoints().unwrap(),
            &notary.signer().verifier(),
            &tree(2),
        );
        assert_eq!(problems[0].code, "checkpoint_beyond_log");
    }

    #[test]
    fn a_torn_last_line_is_cut_and_signing_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let signer = NoteSigner::generate("thinkledger/t").unwrap();
        let skey = signer.to_skey();
        let mut notary = Notary::open(dir.path(), signer).unwrap();
        notary.sign_head(&tree(2), "t".into()).unwrap();
        drop(notary);
        let path = dir.path().join(CHECKPOINTS_FILE);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(b"{\"signedAt\":\"t\",\"no").unwrap();
        drop(file);
        let mut notary = Notary::open(dir.path(), NoteSigner::from_skey(&skey).unwrap()).unwrap();
        notary.sign_head(&tree(3), "t".into()).unwrap();
        assert_eq!(read_checkpoints(&path).unwrap().len(), 2);
    }
}
