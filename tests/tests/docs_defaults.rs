//! The documentation quotes the binary: docs/configuration.md's "every key"
//! block is the defaults (read back through the real config loader); the
//! rule tables of docs/rules.md, README.md's rule ranges and `check --help`
//! are generated from the rule files (the registry), and fail here when
//! stale. `KL_UPDATE_DOCS=1` writes the generated parts instead of failing.

mod common;

use std::path::Path;

use kernel_lsp::config::Settings;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn the_every_key_block_is_the_defaults() {
    let doc = std::fs::read_to_string(repo().join("docs/configuration.md")).unwrap();
    let start = doc.find("## Every key").expect("the section");
    let open = start + doc[start..].find("```toml\n").expect("a toml block") + "```toml\n".len();
    let block = &doc[open..open + doc[open..].find("```").unwrap()];
    let dir = common::temp_workspace("docs-defaults");
    std::fs::write(dir.join("kernel-lsp.toml"), block).unwrap();
    let (read, from) = Settings::discover(&dir.join("k.py")).unwrap_or_else(|e| panic!("the block does not load: {e}"));
    assert!(from.is_some());
    assert_eq!(read, Settings::default(), "docs/configuration.md's block differs from the defaults");
    // Every key is in it, set or commented out.
    let defaults = serde_json::to_value(Settings::default()).unwrap();
    let mut missing = Vec::new();
    for (key, value) in defaults.as_object().unwrap() {
        match value.as_object() {
            Some(table) => {
                let section = &block[block.find(&format!("[{key}]")).unwrap_or_else(|| panic!("[{key}] is missing"))..];
                for k in table.keys() {
                    if !section.contains(&format!("\n{k} =")) && !section.contains(&format!("\n# {k} =")) {
                        missing.push(format!("{key}.{k}"));
                    }
                }
            }
            None => {
                if !block.contains(&format!("\n{key} =")) && !block.contains(&format!("\n# {key} =")) {
                    missing.push(key.clone());
                }
            }
        }
    }
    assert!(missing.is_empty(), "keys the block does not show: {missing:?}");
}

/// Replaces what lies between the line holding `begin` and the next
/// `<!-- end rules table -->` line with `table`.
fn with_table(doc: &str, begin: &str, table: &str) -> String {
    let start = doc.find(begin).unwrap_or_else(|| panic!("no `{begin}` marker"));
    let body = start + doc[start..].find('\n').expect("a line") + 1;
    let end = body + doc[body..].find("<!-- end rules table -->").expect("an end marker");
    format!("{}{table}{}", &doc[..body], &doc[end..])
}

/// `path` as it should be; with `KL_UPDATE_DOCS=1` it is written so, else a stale one fails.
fn generated(path: &Path, expected: &str, current: &str) {
    if current == expected {
        return;
    }
    if std::env::var_os("KL_UPDATE_DOCS").is_some() {
        std::fs::write(path, expected).unwrap();
        return;
    }
    let diff = similar::TextDiff::from_lines(current, expected).unified_diff().to_string();
    panic!(
        "{} is stale (KL_UPDATE_DOCS=1 cargo test -p kernel-lsp-tests --test docs_defaults):\n{diff}",
        path.display()
    );
}

#[test]
fn the_rule_lists_are_generated_from_the_rule_files() {
    let path = repo().join("docs/rules.md");
    let doc = std::fs::read_to_string(&path).unwrap();
    let mut expected = doc.clone();
    for (hygiene, which) in [(false, "mistakes"), (true, "hygiene")] {
        let table = kernel_lsp::rules::markdown_table(hygiene);
        expected = with_table(&expected, &format!("<!-- begin rules table: {which} "), &table);
    }
    generated(&path, &expected, &doc);

    let path = repo().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let [mistakes, hygiene] = kernel_lsp::rules::code_ranges("–");
    let at = readme.find("| the rules KL").expect("README.md's rules row");
    let end = at + readme[at..].find(", KL900").expect("the rules row names KL900 after the ranges");
    let expected = format!("{}| the rules {mistakes} and {hygiene}{}", &readme[..at], &readme[end..]);
    generated(&path, &expected, &readme);

    let help = std::process::Command::new(common::server_binary()).args(["check", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let [mistakes, hygiene] = kernel_lsp::rules::code_ranges("-");
    assert!(help.contains(&format!("the {mistakes} mistakes and the {hygiene} KernelBench")), "{help}");
}

#[test]
fn every_rule_is_documented_where_rules_are_listed() {
    let rules = std::fs::read_to_string(repo().join("docs/rules.md")).unwrap();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let help = std::process::Command::new(common::server_binary()).args(["check", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for rule in kernel_lsp::rules::RULES {
        assert!(
            rules.contains(&format!("| {} | {} |", rule.code, rule.name)),
            "{} is not in docs/rules.md's table",
            rule.code
        );
    }
    let last_hygiene = kernel_lsp::rules::RULES.iter().map(|r| r.code).filter(|c| c.starts_with("KL1")).max().unwrap();
    assert!(readme.contains(&format!("KL101–{last_hygiene}")), "README.md's rule range ends at {last_hygiene}");
    assert!(help.contains(last_hygiene), "`check --help` names {last_hygiene}: {help}");
}
