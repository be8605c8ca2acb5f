//! The documentation quotes the binary: docs/configuration.md's "every key"
//! block is the defaults (read back through the real config loader), every
//! rule of the registry is in docs/rules.md, README.md and `check --help`.

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
