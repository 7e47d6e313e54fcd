//! The ledger's signing key on disk: one C2SP signer key (`PRIVATE+KEY+…`) in a file readable
//! by its owner only, made the first time a ledger is opened and reused ever after.
//!
//! Owns the file's creation, permissions and parsing. It does not sign anything itself and does
//! not know what is signed (see `checkpoint`).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use super::LedgerError;
use super::checkpoint::NoteSigner;

/// The key name (and checkpoint origin) of a ledger: `thinkledger/<ledger id>`.
pub fn key_name(ledger_id: &str) -> String {
    format!("thinkledger/{ledger_id}")
}

/// Loads the signer key at `path`, or creates it (mode 0600, never overwriting) when absent.
/// Refuses a key made for another ledger, and on Unix a key file that others may read.
pub fn load_or_create(path: &Path, ledger_id: &str) -> Result<NoteSigner, LedgerError> {
    match load(path, ledger_id)? {
        Some(signer) => Ok(signer),
        None => create(path, ledger_id),
    }
}

/// Loads the signer key at `path` if there is one, with [`load_or_create`]'s checks; never
/// makes one.
pub fn load(path: &Path, ledger_id: &str) -> Result<Option<NoteSigner>, LedgerError> {
    let name = key_name(ledger_id);
    match File::open(path) {
        Ok(mut file) => {
            check_private(&file, path)?;
            let mut text = String::new();
            file.read_to_string(&mut text)?;
            let signer = NoteSigner::from_skey(text.trim_end()).map_err(|e| {
                LedgerError::Corrupt(format!("signing key {}: {e}", path.display()))
            })?;
            if signer.name() != name {
                return Err(LedgerError::Corrupt(format!(
                    "signing key {} is for {}, not for this ledger ({name})",
                    path.display(),
                    signer.name()
                )));
            }
            Ok(Some(signer))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Makes a key and publishes it at `path` whole: written and synced under a temporary name
/// beside it, then linked into place, so that a reader (a node started beside this one, a
/// script copying the key to the others) sees the complete key or none, and a crash mid-write
/// leaves no empty key behind. Never overwrites: if another process published one first, that
/// key is the ledger's.
fn create(path: &Path, ledger_id: &str) -> Result<NoteSigner, LedgerError> {
    let signer = NoteSigner::generate(&key_name(ledger_id)).map_err(|e| {
        LedgerError::Io(std::io::Error::other(format!(
            "cannot make a signing key: {e}"
        )))
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    // Named by the new key's own fingerprint: no other process, thread or earlier crash stages
    // under it, whatever their process ids (containers sharing a directory reuse them).
    let fingerprint = blake3::hash(signer.verifier().to_vkey().as_bytes()).to_hex();
    let staged = dir.join(format!(".signing.key.{}.tmp", &fingerprint[..16]));
    let published =
        write_private(&staged, &signer.to_skey()).and_then(|()| std::fs::hard_link(&staged, path));
    let _ = std::fs::remove_file(&staged);
    match published {
        Ok(()) => {
            File::open(dir)?.sync_all()?;
            Ok(signer)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            load(path, ledger_id)?.ok_or(LedgerError::Io(e))
        }
        Err(e) => Err(e.into()),
    }
}

/// Writes `skey` and a newline to a new file at `path`, readable by its owner only, and syncs it.
fn write_private(path: &Path, skey: &str) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(format!("{skey}\n").as_bytes())?;
    file.sync_all()
}

#[cfg(unix)]
fn check_private(file: &File, path: &Path) -> Result<(), LedgerError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = file.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(LedgerError::Io(std::io::Error::other(format!(
            "signing key {} is readable by others (mode {:o}); run `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        ))));
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_private(_file: &File, _path: &Path) -> Result<(), LedgerError> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::checkpoint::NoteVerifier;

    #[test]
    fn a_key_is_made_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signing.key");
        let first = load_or_create(&path, "l1").unwrap();
        assert_eq!(first.name(), "thinkledger/l1");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = load_or_create(&path, "l1").unwrap();
        assert_eq!(again.verifier().to_vkey(), first.verifier().to_vkey());
        let vkey = first.verifier().to_vkey();
        assert_eq!(NoteVerifier::from_vkey(&vkey).unwrap().to_vkey(), vkey);
    }

    #[test]
    fn a_key_of_another_ledger_or_readable_by_others_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("signing.key");
        load_or_create(&path, "l1").unwrap();
        let err = load_or_create(&path, "l2").unwrap_err().to_string();
        assert!(err.contains("thinkledger/l1"), "{err}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let err = load_or_create(&path, "l1").unwrap_err().to_string();
            assert!(err.contains("chmod 600"), "{err}");
        }
    }
    #[test]
    fn a_key_appears_whole_or_not_at_all() {
        // Another process (a node started beside this one, a script copying the key to the
        // other nodes) may read the file the moment it exists: it must never see it empty.
        for _ in 0..100 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("signing.key");
            let seen = std::thread::scope(|scope| {
                let reader = scope.spawn(|| {
                    loop {
                        match std::fs::read_to_string(&path) {
                            Ok(text) => return text,
                            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                            Err(e) => panic!("{e}"),
                        }
                    }
                });
                load_or_create(&path, "l1").unwrap();
                reader.join().unwrap()
            });
            assert!(
                NoteSigner::from_skey(seen.trim_end()).is_ok(),
                "a reader saw the key file as {seen:?}"
            );
            let names: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .map(|e| e.file_name())
                .collect();
            assert_eq!(
                names,
                vec![std::ffi::OsString::from("signing.key")],
                "nothing else is left"
            );
        }
    }
}
