//! The rewrite timeline: one record per stage of every candidate (LLM call,
//! gate, benchmark, pick), appended to `.kernel-lsp/timeline.jsonl` beside
//! the benchmark history (same project root), and shown as a table.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::client::Usage;

/// One stage of one candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageRecord {
    /// UTC, `YYYY-MM-DDTHH:MM:SSZ`.
    pub time: String,
    /// Which rewrite this belongs to: `<unix seconds>-<pid>`.
    pub run: String,
    /// The rewritten file, relative to the project root.
    pub file: String,
    pub action: String,
    /// `baseline`, `llm`, `repair-llm`, `extract`, `gate`, `bench`, `pick`.
    pub stage: String,
    /// 1-based; none for the baseline and the pick.
    pub candidate: Option<u32>,
    /// 0 for the first answer, then 1..=repairs.
    pub attempt: Option<u32>,
    pub score: String,
    pub latency_ms: u64,
    pub problem: String,
    pub tokens: Option<Usage>,
}

pub(crate) fn timeline_path(root: &Path) -> PathBuf {
    root.join(".kernel-lsp").join("timeline.jsonl")
}

pub fn append(root: &Path, records: &[StageRecord]) -> std::io::Result<()> {
    let path = timeline_path(root);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).map_err(std::io::Error::other)?);
        text.push('\n');
    }
    std::fs::OpenOptions::new().create(true).append(true).open(&path)?.write_all(text.as_bytes())
}

/// Every readable record, oldest first.
pub fn read(root: &Path) -> std::io::Result<Vec<StageRecord>> {
    let path = timeline_path(root);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text = std::fs::read_to_string(path)?;
    Ok(text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// The records as a Markdown-style table.
pub(crate) fn render_table(records: &[StageRecord]) -> String {
    let rows: Vec<[String; 8]> = records
        .iter()
        .map(|r| {
            let tokens = match r.tokens {
                Some(u) => {
                    format!("{}+{}{}", u.prompt_tokens, u.completion_tokens, if u.estimated { " (est.)" } else { "" })
                }
                None => "-".into(),
            };
            let opt = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_else(|| "-".into());
            [
                r.time.replace('T', " "),
                r.stage.clone(),
                opt(r.candidate),
                opt(r.attempt),
                r.score.clone(),
                format!("{:.1} s", r.latency_ms as f64 / 1000.0),
                tokens,
                r.problem.chars().take(90).collect(),
            ]
        })
        .collect();
    let header = ["time", "stage", "cand", "try", "score", "latency", "tokens", "problem"];
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::from("|");
        for (cell, w) in cells.iter().zip(&widths) {
            s.push_str(&format!(" {cell:<w$} |"));
        }
        s.push('\n');
        s
    };
    let mut out = line(header.to_vec());
    out.push('|');
    for w in &widths {
        out.push_str(&"-".repeat(w + 2));
        out.push('|');
    }
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}
