//! Writing the user's files: never in place. The new text goes to a temporary
//! file in the same folder, is flushed to disk, and is renamed over the
//! original, so a kill at any moment leaves either the old file or the new
//! one, never a truncated one. The old text is kept first under
//! `.kernel-lsp/backups/` at the project root.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Replaces `path`'s content with `bytes` atomically, keeping its permissions.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "file".into());
    let tmp = dir.join(format!(".{name}.kernel-lsp-{}.tmp", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        if let Ok(meta) = std::fs::metadata(path) {
            f.set_permissions(meta.permissions())?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Keeps `text`, the content of `file` before a change, under
/// `<root>/.kernel-lsp/backups/` and returns where (the name says which file and when).
pub(crate) fn keep_backup(root: &Path, file: &Path, text: &[u8]) -> std::io::Result<PathBuf> {
    let rel = file.strip_prefix(root).unwrap_or(file).display().to_string();
    let flat: String = rel.chars().map(|c| if c == '/' || c == '\\' { '~' } else { c }).collect();
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let dir = root.join(".kernel-lsp").join("backups");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{flat}.{stamp}"));
    write_atomically(&path, text)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_replaced_whole_with_its_permissions_and_no_temporary_is_left() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("klsp-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("k.py");
        std::fs::write(&f, "old\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomically(&f, b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new\n");
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o640);
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        let b = keep_backup(&dir, &f, b"old\n").unwrap();
        assert!(
            b.starts_with(dir.join(".kernel-lsp/backups"))
                && b.file_name().unwrap().to_string_lossy().starts_with("k.py.")
        );
        assert_eq!(std::fs::read_to_string(b).unwrap(), "old\n");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
