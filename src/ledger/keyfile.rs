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
        None => create(path, &key_name(ledger_id)),
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

fn create(path: &Path, name: &str) -> Result<NoteSigner, LedgerError> {
    let signer = NoteSigner::generate(name).map_err(|e| {
        LedgerError::Io(std::io::Error::other(format!(
            "cannot make a signing key: {e}"
        )))
    })?;
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(format!("{}\n", signer.to_skey()).as_bytes())?;
    file.sync_all()?;
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(signer)
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
}
