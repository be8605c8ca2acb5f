//! `kernel-lsp.history`: the runs recorded in `.kernel-lsp/history.jsonl` at
//! the workspace root, as a markdown table (time, stage, score, latency,
//! problem). Lines that are not JSON objects are skipped; field names are
//! read leniently, since the runner owns them. (`kernel-lsp.timeline` reads
//! the rewrite pipeline's own `timeline.jsonl` through `llm::timeline`.)

use std::path::Path;

use serde_json::Value;

pub const HEADER: &str = "| time | stage | score | latency | problem |\n|---|---|---|---|---|\n";

/// Stages that belong to rewrites rather than plain benchmarks: not shown here.
fn is_rewrite_stage(stage: &str) -> bool {
    ["rewrite", "candidate", "repair", "llm", "validate"].iter().any(|p| stage.starts_with(p))
}

pub fn table(root: &Path, file: Option<&Path>) -> String {
    let mut out = HEADER.to_string();
    let Ok(text) = std::fs::read_to_string(root.join(".kernel-lsp").join("history.jsonl")) else {
        return out;
    };
    for line in text.lines() {
        let Ok(Value::Object(entry)) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let get = |keys: &[&str]| keys.iter().find_map(|k| entry.get(*k).filter(|v| !v.is_null()));
        let stage = get(&["stage", "kind", "mode"]).map(cell).unwrap_or_default();
        if is_rewrite_stage(&stage) {
            continue;
        }
        let problem_value = get(&["problem", "task", "candidate", "file"]);
        if let (Some(file), Some(Value::String(p))) = (file, problem_value) {
            let recorded = Path::new(p);
            let same = recorded == file || file.ends_with(recorded) || recorded.file_name() == file.file_name();
            if !same && entry.contains_key("candidate") | entry.contains_key("file") {
                continue;
            }
        }
        let time = get(&["time", "timestamp", "ts", "date"]).map(cell).unwrap_or_default();
        let score = match get(&["score", "speedup"]) {
            Some(Value::Number(n)) if entry.contains_key("speedup") && !entry.contains_key("score") => {
                format!("{:.2}x", n.as_f64().unwrap_or(0.0))
            }
            Some(v) => cell(v),
            None => String::new(),
        };
        let latency = match get(&["latency", "latency_ms", "new_ms", "ms"]) {
            Some(Value::Number(n)) => format!("{:.1} ms", n.as_f64().unwrap_or(0.0)),
            Some(v) => cell(v),
            None => String::new(),
        };
        let problem = problem_value
            .map(|v| match v {
                Value::String(s) => {
                    Path::new(s).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or(s.clone())
                }
                other => cell(other),
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            esc(&time),
            esc(&stage),
            esc(&score),
            esc(&latency),
            esc(&problem)
        ));
    }
    out
}

fn cell(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn esc(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_lines_become_rows() {
        let root = std::env::temp_dir().join(format!("kernel-lsp-history-{}", std::process::id()));
        std::fs::create_dir_all(root.join(".kernel-lsp")).unwrap();
        std::fs::write(
            root.join(".kernel-lsp/history.jsonl"),
            "{\"time\":\"2025-01-02T03:04:05Z\",\"stage\":\"bench\",\"speedup\":1.5,\"new_ms\":2.0,\"candidate\":\"/x/k.py\"}\n\
             not json\n\
             {\"time\":\"t2\",\"stage\":\"rewrite\",\"score\":0.9,\"latency\":12,\"problem\":\"lstm\"}\n",
        )
        .unwrap();
        let h = table(&root, Some(Path::new("/x/k.py")));
        assert_eq!(h, format!("{HEADER}| 2025-01-02T03:04:05Z | bench | 1.50x | 2.0 ms | k.py |\n"));
        std::fs::remove_dir_all(&root).unwrap();
        assert_eq!(table(&root, None), HEADER);
    }
}
