//! Reads the `triton.language` API of the user's configured Python, once per
//! Triton version: `server/harness/triton_api.py --version` names the
//! installed version without importing Triton; a database cached for that
//! version under the user cache directory (`~/.cache/kernel-lsp/triton-api/`)
//! is used as it is, else the script prints it and it is cached. A fixed
//! script of ours runs, never user code; the embedded database answers
//! meanwhile and when this fails.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::model::triton_api::TritonApi;

const SCRIPT: &str = include_str!("../../harness/triton_api.py");

/// The API of `python`'s Triton, from the cache or freshly read.
pub(crate) async fn load(python: &str, timeout: Duration) -> Result<TritonApi, String> {
    load_in(python, &crate::bench::cache_dir().join("triton-api"), timeout).await
}

pub(crate) async fn load_in(python: &str, dir: &Path, timeout: Duration) -> Result<TritonApi, String> {
    let version = run(python, &["--version"], timeout).await?;
    let version = version.trim().to_string();
    let file = cache_file(dir, &version).ok_or_else(|| format!("`{python}` named no Triton version"))?;
    let source = format!("triton {version} of `{python}`");
    if let Ok(json) = tokio::fs::read_to_string(&file).await {
        if let Ok(api) = TritonApi::parse(&json, &source) {
            return Ok(api);
        }
    }
    let json = run(python, &[], timeout).await?;
    let api = TritonApi::parse(&json, &source)?;
    if let Err(e) = write_atomically(dir, &file, &json).await {
        tracing::warn!("could not cache the Triton API at {}: {e}", file.display());
    }
    Ok(api)
}

/// `DIR/VERSION.json`, for a version made only of the characters a version has.
fn cache_file(dir: &Path, version: &str) -> Option<PathBuf> {
    let ok = !version.is_empty()
        && version.len() < 64
        && version.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
        && !version.starts_with('.');
    ok.then(|| dir.join(format!("{version}.json")))
}

async fn write_atomically(dir: &Path, file: &Path, json: &str) -> std::io::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    let tmp = file.with_extension(format!("json.{}.tmp", std::process::id()));
    tokio::fs::write(&tmp, json).await?;
    tokio::fs::rename(&tmp, file).await
}

async fn run(python: &str, args: &[&str], timeout: Duration) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg("-c").arg(SCRIPT).args(args).stdin(std::process::Stdio::null()).kill_on_drop(true);
    // The names are read while the user types (the embedded list answers
    // meanwhile): the Python and whatever starts it (a version manager's
    // shell shims) run only on a core the editor's server leaves idle.
    crate::bench::sandbox::below_the_editor(&mut cmd, true, 19);
    let child = cmd.output();
    let out = tokio::time::timeout(timeout, child)
        .await
        .map_err(|_| format!("`{python}` did not answer within {} s", timeout.as_secs()))?
        .map_err(|e| format!("`{python}` could not be started: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(format!("`{python}` could not read the Triton API: {last}"));
    }
    String::from_utf8(out.stdout).map_err(|_| format!("`{python}` printed something that is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_files_are_named_by_plain_versions_only() {
        let d = Path::new("/c");
        assert_eq!(cache_file(d, "3.9.0+git1a2b"), Some(PathBuf::from("/c/3.9.0+git1a2b.json")));
        assert_eq!(cache_file(d, "../x"), None);
        assert_eq!(cache_file(d, ""), None);
    }

    /// With the test Python (KERNEL_LSP_TEST_PYTHON), the API is read once and then served from the cache.
    #[tokio::test]
    async fn the_users_triton_is_read_once_and_cached_per_version() {
        let Some(python) = std::env::var("KERNEL_LSP_TEST_PYTHON").ok().filter(|p| !p.is_empty()) else {
            eprintln!("KERNEL_LSP_TEST_PYTHON not set: skipped");
            return;
        };
        let dir = std::env::temp_dir().join(format!("kl-api-{}", std::process::id()));
        let api = load_in(&python, &dir, Duration::from_secs(60)).await.expect("read from the interpreter");
        assert!(api.get("load").is_some() && api.get("dot").is_some());
        let cached = cache_file(&dir, &api.version).expect("a file");
        assert!(cached.is_file(), "cached at {}", cached.display());
        // A marker written into the cache comes back: the second read is the cache's.
        let json = std::fs::read_to_string(&cached).expect("read");
        std::fs::write(&cached, json.replace("Return a tensor of data", "CACHED Return a tensor of data")).expect("w");
        let again = load_in(&python, &dir, Duration::from_secs(60)).await.expect("from the cache");
        assert!(again.get("load").and_then(|e| e.doc.as_deref()).is_some_and(|d| d.starts_with("CACHED")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
