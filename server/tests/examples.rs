//! The bundled examples are the README demo: snapshot what `check` reports on
//! each, so a change in what the rules see there is a reviewed change.

use std::path::{Path, PathBuf};

use kernel_lsp::checker::check_text;
use kernel_lsp::config::Settings;
use kernel_lsp::text::{ColumnUnit, LineIndex};

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            python_files(&e, out);
        } else if e.extension().is_some_and(|x| x == "py") {
            out.push(e);
        }
    }
}

#[test]
fn examples_report_their_mistakes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut files = Vec::new();
    python_files(&root, &mut files);
    let mut out = String::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let index = LineIndex::new(&text);
        let rel = f.strip_prefix(&root).unwrap().display().to_string();
        let result = check_text(&text, &Settings::default());
        for d in &result.diagnostics {
            let (l, c) = index.position(&text, d.range.start, ColumnUnit::Char);
            out.push_str(&format!("{rel}:{}:{}: {}\n", l + 1, c + 1, d.code));
        }
        for k in &result.kernels {
            out.push_str(&format!("{rel}: kernel {} persistent={}\n", k.name, k.persistent));
        }
    }
    insta::assert_snapshot!(out);
}
