//! Files and directories only their owner may read or write: every file of a ledger holds what
//! callers sent (thoughts, memories, model answers) in clear text, so none is left to the
//! process's umask. New directories are made 0700 and new files 0600; a ledger made before
//! (0755 and 0644 under the usual umask) is tightened when it is opened.

use std::fs::OpenOptions;
use std::path::Path;

/// Makes `path` (and any missing parent) a directory only its owner can enter, and tightens
/// `path` itself if it exists with rights for others.
pub fn dir(path: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)?;
    tighten(path)
}

/// Options that create a file readable and writable by its owner alone.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Takes every right of others away from `path` (0700 for a directory, 0600 for a file),
/// when it has any.
pub fn tighten(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = std::fs::symlink_metadata(path)?;
        let mode = meta.permissions().mode();
        if mode & 0o077 != 0 && !meta.file_type().is_symlink() {
            let private = if meta.is_dir() { 0o700 } else { 0o600 };
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(private))?;
            tracing::info!(path = %path.display(), from = format!("{:o}", mode & 0o777), "made private");
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// [`tighten`] for `dir` and everything below it.
pub fn tighten_tree(dir: &Path) -> std::io::Result<()> {
    tighten(dir)?;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            tighten_tree(&entry.path())?;
        } else if kind.is_file() {
            tighten(&entry.path())?;
        }
    }
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_directories_and_files_are_the_owners_alone_and_old_ones_are_tightened() {
        let root = tempfile::tempdir().unwrap();
        let deep = root.path().join("a/b");
        dir(&deep).unwrap();
        assert_eq!(mode(&root.path().join("a")), 0o700);
        assert_eq!(mode(&deep), 0o700);
        let file = deep.join("f");
        options().write(true).create(true).open(&file).unwrap();
        assert_eq!(mode(&file), 0o600);
        std::fs::set_permissions(&deep, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        tighten_tree(&root.path().join("a")).unwrap();
        assert_eq!(mode(&deep), 0o700);
        assert_eq!(mode(&file), 0o600);
    }
}
