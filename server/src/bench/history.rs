//! The benchmark history: every run appended as one JSON line to
//! `.kernel-lsp/history.jsonl` at the candidate's project root (the nearest
//! directory with `kernel-lsp.toml`, `pyproject.toml` or `.git`, else the
//! candidate's own directory), and the timeline built from it.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{sha256, BenchResult};

/// One line of `history.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub time: String,
    pub unix: u64,
    /// The candidate, relative to the project root.
    pub file: String,
    /// SHA-256 of the candidate's content when it ran.
    pub hash: String,
    pub device: Option<String>,
    pub mode: String,
    pub result: BenchResult,
}

/// One row of the timeline table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimelineRow {
    pub time: String,
    /// `v1`, `v2`, ...: the file's versions in the order they first ran.
    pub stage: String,
    pub file: String,
    pub hash: String,
    pub score: String,
    pub latency: String,
    pub problem: String,
    /// The run never reached the candidate's code (no torch, no reference, ...):
    /// listed apart, never counted as a version.
    pub setup_failure: bool,
}

/// The editor's workspace folders (the language server sets them), where a
/// file's `.kernel-lsp/` goes when no project marker is found above it.
static WORKSPACE_ROOTS: std::sync::RwLock<Vec<PathBuf>> = std::sync::RwLock::new(Vec::new());

pub(crate) fn set_workspace_roots(roots: Vec<PathBuf>) {
    if let Ok(mut r) = WORKSPACE_ROOTS.write() {
        *r = roots;
    }
}

/// Where a file's `.kernel-lsp/` (history, timeline, backups) lives: the
/// nearest folder above it with `kernel-lsp.toml`, `pyproject.toml` or `.git`;
/// else the editor's workspace folder that holds it (the deepest); else its own folder.
pub(crate) fn project_root(candidate: &Path) -> PathBuf {
    let start = candidate.parent().unwrap_or(Path::new("."));
    let mut dir = Some(start);
    while let Some(d) = dir {
        if ["kernel-lsp.toml", "pyproject.toml", ".git"].iter().any(|m| d.join(m).exists()) {
            return d.to_path_buf();
        }
        dir = d.parent();
    }
    let roots = WORKSPACE_ROOTS.read().map(|r| r.clone()).unwrap_or_default();
    roots
        .into_iter()
        .filter(|r| start.starts_with(r))
        .max_by_key(|r| r.components().count())
        .unwrap_or(start.to_path_buf())
}

/// The project root and a file's path relative to it (for `history`/`timeline FILE`);
/// without a file, the root around the current directory.
pub(crate) fn root_and_file(file: Option<&Path>) -> Result<(PathBuf, Option<String>), String> {
    match file {
        Some(f) => {
            let abs = std::path::absolute(f).map_err(|e| format!("{}: {e}", f.display()))?;
            let root = project_root(&abs);
            let rel = abs.strip_prefix(&root).unwrap_or(&abs).display().to_string();
            Ok((root, Some(rel)))
        }
        None => {
            let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
            Ok((project_root(&cwd.join("_")), None))
        }
    }
}

pub(crate) fn history_path(root: &Path) -> PathBuf {
    root.join(".kernel-lsp").join("history.jsonl")
}

/// Appends a run of `candidate` (an absolute path) to the history of the
/// project of `recorded_as` (the user's file it is, or a copy of), under that name.
pub fn append(candidate: &Path, recorded_as: &Path, result: &BenchResult) -> std::io::Result<()> {
    let root = project_root(recorded_as);
    let content = std::fs::read(candidate).unwrap_or_default();
    let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let entry = HistoryEntry {
        time: utc_time(unix),
        unix,
        file: recorded_as.strip_prefix(&root).unwrap_or(recorded_as).display().to_string(),
        hash: sha256::hex(&content),
        device: result.device.clone(),
        mode: result.mode.clone(),
        result: result.clone(),
    };
    let path = history_path(&root);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let line = serde_json::to_string(&entry).map_err(std::io::Error::other)? + "\n";
    // One write of one line: appends from concurrent runs do not interleave.
    std::fs::OpenOptions::new().create(true).append(true).open(&path)?.write_all(line.as_bytes())
}

/// Every readable entry of a project's history, oldest first.
pub fn read(root: &Path) -> std::io::Result<Vec<HistoryEntry>> {
    let path = history_path(root);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(path)?;
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// The timeline of `file` (relative to the root), or of every file.
pub fn timeline(entries: &[HistoryEntry], file: Option<&str>) -> Vec<TimelineRow> {
    let mut versions: Vec<(String, String)> = Vec::new();
    let mut rows = Vec::new();
    for e in entries.iter().filter(|e| file.is_none_or(|f| e.file == f)) {
        if is_setup_failure(&e.result) {
            // Nothing of the file ran: not a version of it, and said apart.
            rows.push(TimelineRow {
                time: e.time.replace('T', " "),
                stage: "setup".to_string(),
                file: e.file.clone(),
                hash: e.hash.chars().take(8).collect(),
                score: "not run".to_string(),
                latency: "-".to_string(),
                problem: problem(&e.result),
                setup_failure: true,
            });
            continue;
        }
        let n = match versions.iter().filter(|(f, _)| *f == e.file).position(|(_, h)| *h == e.hash) {
            Some(i) => i + 1,
            None => {
                versions.push((e.file.clone(), e.hash.clone()));
                versions.iter().filter(|(f, _)| *f == e.file).count()
            }
        };
        rows.push(TimelineRow {
            time: e.time.replace('T', " "),
            stage: format!("v{n}"),
            file: e.file.clone(),
            hash: e.hash.chars().take(8).collect(),
            score: score(&e.result),
            latency: latency(&e.result),
            problem: problem(&e.result),
            setup_failure: false,
        });
    }
    rows
}

/// A run that never got to the candidate's code: no Python with torch, no
/// reference, a bad `--set`, the harness itself broken.
pub(crate) fn is_setup_failure(r: &BenchResult) -> bool {
    r.mode == "none"
        || r.error.as_ref().is_some_and(|e| {
            matches!(e.kind.as_str(), "missing-dependency" | "harness" | "no-reference" | "unknown-override")
        })
}

/// "1 launch/forward", "3 launches/forward".
pub(crate) fn launches_text(n: u64) -> String {
    format!("{n} {}/forward", if n == 1 { "launch" } else { "launches" })
}

/// At most `max` characters, cut at a word boundary, with "…" when cut.
pub(crate) fn clip_words(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max.saturating_sub(1)).collect();
    let cut = match head.rfind(char::is_whitespace) {
        Some(i) if i > 0 => head[..i].trim_end().to_string(),
        _ => head,
    };
    format!("{cut}…")
}

fn score(r: &BenchResult) -> String {
    match (r.speedup, r.correct) {
        (Some(s), _) => format!("{s:.4}x"),
        (None, Some(true)) => "correct (no timing)".to_string(),
        (None, Some(false)) => "incorrect".to_string(),
        (None, None) => "-".to_string(),
    }
}

fn latency(r: &BenchResult) -> String {
    match (r.new_ms, r.ref_ms) {
        (Some(n), Some(f)) => format!("{n:.2} ms vs {f:.2} ms"),
        (Some(n), None) => format!("{n:.2} ms"),
        _ => "-".to_string(),
    }
}

fn problem(r: &BenchResult) -> String {
    match &r.error {
        Some(e) => {
            let first = e.message.lines().next().unwrap_or_default();
            let short = clip_words(first, 70);
            let at = e.line.map(|l| format!(" (line {l})")).unwrap_or_default();
            format!("{}{at}: {short}", e.kind)
        }
        None => match r.launches_per_forward {
            Some(n) => format!("ok, {}", launches_text(n)),
            None => "ok".to_string(),
        },
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the epoch (proleptic Gregorian, UTC).
pub(crate) fn utc_time(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_marker_the_workspace_folder_is_the_root() {
        let base = std::env::temp_dir().join(format!("klsp-root-{}", std::process::id()));
        let file = base.join("ws/deep/er/k.py");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        assert_eq!(project_root(&file), base.join("ws/deep/er"), "no marker, no workspace: the file's folder");
        set_workspace_roots(vec![base.clone(), base.join("ws")]);
        assert_eq!(project_root(&file), base.join("ws"), "the deepest workspace folder holding it");
        std::fs::write(base.join("ws/deep/kernel-lsp.toml"), "").unwrap();
        assert_eq!(project_root(&file), base.join("ws/deep"), "a marker comes first");
        set_workspace_roots(Vec::new());
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn utc_time_matches_known_dates() {
        assert_eq!(super::utc_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc_time(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(super::utc_time(1_766_469_602), "2025-12-23T06:00:02Z");
    }

    #[test]
    fn launches_are_counted_in_words() {
        assert_eq!(super::launches_text(1), "1 launch/forward");
        assert_eq!(super::launches_text(0), "0 launches/forward");
        assert_eq!(super::launches_text(6240), "6240 launches/forward");
    }

    #[test]
    fn clipping_keeps_whole_words() {
        assert_eq!(super::clip_words("short", 70), "short");
        let clipped = super::clip_words("mismatch: correct at 1e-2 (legacy); fails KernelBench's", 30);
        assert_eq!(clipped, "mismatch: correct at 1e-2…");
        assert!(clipped.chars().count() <= 30);
    }
}
