//! The KernelBench hygiene rules (KL101-KL108) beyond their fixtures' snapshots
//! (those are in `rules.rs`, like every rule's): files they must leave alone.

use std::path::{Path, PathBuf};

use kernel_lsp::checker::check_text;
use kernel_lsp::config::Settings;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn hygiene_codes(text: &str) -> Vec<String> {
    let settings = Settings { select: vec!["KL1".into()], ..Settings::default() };
    check_text(text, &settings).diagnostics.into_iter().map(|d| format!("{} {}", d.code, d.message)).collect()
}

#[test]
fn a_reference_file_gets_none_of_them() {
    let text = std::fs::read_to_string(root().join("tests/fixtures/rules/KL10x_reference.py")).unwrap();
    assert_eq!(hygiene_codes(&text), Vec::<String>::new());
    // The same code with `ModelNew` added is a candidate: KL107 and KL108 fire (KL106 does not: the
    // reference itself computes in half precision, so the task is not fp32).
    let candidate = format!("{text}\n\nclass ModelNew(Model):\n    pass\n");
    let codes: Vec<String> = hygiene_codes(&candidate).iter().map(|c| c[..5].to_string()).collect();
    for code in ["KL107", "KL108"] {
        assert!(codes.iter().any(|c| c == code), "{code} missing: {codes:?}");
    }
}

#[test]
fn a_launch_through_an_autograd_function_counts() {
    let text = std::fs::read_to_string(root().join("tests/fixtures/rules/KL103_ok.py")).unwrap();
    assert_eq!(hygiene_codes(&text), Vec::<String>::new());
}

fn python_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            python_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "py") {
            out.push(p);
        }
    }
}

#[test]
fn examples_and_prompt_examples_are_clean() {
    let mut files = Vec::new();
    python_files(&root().join("examples"), &mut files);
    python_files(&root().join("prompts/examples"), &mut files);
    assert!(files.len() > 20, "{files:?}");
    let mut dirty = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for d in hygiene_codes(&text) {
            dirty.push(format!("{}: {d}", f.display()));
        }
    }
    assert!(dirty.is_empty(), "{dirty:#?}");
}

/// The prompts' examples are what an answer imitates: the gate's strict reading
/// (every import outside the task's needs) must pass them too.
#[test]
fn prompt_examples_pass_the_strict_import_check() {
    let mut files = Vec::new();
    python_files(&root().join("prompts/examples"), &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let tree = kernel_lsp::model::parse_forest(&text);
        let model = kernel_lsp::model::FileModel::build(&text, &tree);
        let found = kernel_lsp::model::untrusted::findings(&model, true);
        assert!(found.is_empty(), "{}: {found:?}", f.display());
    }
}
