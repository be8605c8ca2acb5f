//! The documentation's transcripts are the binary's output. Every code block
//! of README.md and docs/*.md whose first line is `$ COMMAND` is run (bash,
//! `kernel-lsp` on PATH being this build) in a folder that holds what the
//! transcripts name: the repository's `examples/`, a clean `clean.py` and a
//! `latin1.py` that is not UTF-8. The lines after the command must be exactly
//! what it prints, stdout and stderr interleaved as a terminal shows them.
//! The usage blocks' flags must exist in `--help`, docs/bench.md's sample run
//! must be what `bench` prints on this machine's CPU (versions aside), and the
//! JSON docs/check.md quotes must be found in `check --format json`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

fn python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON").unwrap_or_else(|_| repo().join(".venv/bin/python").display().to_string())
}

/// The documents, each as (name, text).
fn documents() -> Vec<(String, String)> {
    let mut paths = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|p| {
            let name = p.strip_prefix(repo()).unwrap_or(&p).display().to_string();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// Fenced blocks of a markdown text: (1-based line of the fence, info string, body).
fn blocks(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match open.as_mut() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some((i + 1, info.trim().to_string(), String::new()));
                }
            }
            Some(block) => {
                if line.starts_with("```") {
                    out.push(open.take().unwrap());
                } else {
                    block.2.push_str(line);
                    block.2.push('\n');
                }
            }
        }
    }
    out
}

/// A folder holding what the transcripts name.
fn world() -> PathBuf {
    let dir = common::temp_workspace("docs-transcripts");
    std::os::unix::fs::symlink(repo().join("examples").canonicalize().unwrap(), dir.join("examples")).unwrap();
    std::fs::write(dir.join("clean.py"), "x = 1\n").unwrap();
    // Byte 5 (0-based) is Latin-1 é, not UTF-8.
    std::fs::write(dir.join("latin1.py"), b"x = \"\xe9\"\n").unwrap();
    dir
}

#[test]
fn every_transcript_is_what_the_binary_prints() {
    let bin_dir = common::server_binary().parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let mut seen = 0;
    let mut wrong = Vec::new();
    for (name, text) in documents() {
        for (line, _, body) in blocks(&text) {
            let Some(command) = body.lines().next().and_then(|l| l.strip_prefix("$ ")) else {
                continue;
            };
            seen += 1;
            let expected: Vec<&str> = body.lines().skip(1).collect();
            let dir = world();
            let out = Command::new("bash")
                .args(["-c", &format!("exec 2>&1\n{command}")])
                .current_dir(&dir)
                .env("PATH", &path)
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            let printed = String::from_utf8_lossy(&out.stdout);
            let printed: Vec<&str> = printed.lines().collect();
            if printed != expected {
                wrong.push(format!(
                    "{name}:{line}: `{command}`\n--- the document shows\n{}\n--- the binary prints\n{}",
                    expected.join("\n"),
                    printed.join("\n")
                ));
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    assert!(seen >= 3, "the transcripts were not found ({seen})");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

/// Each `--flag` a usage block shows for `kernel-lsp SUBCOMMAND` is in that
/// subcommand's `--help`.
#[test]
fn usage_blocks_name_only_flags_the_binary_has() {
    let mut checked = 0;
    let mut unknown = Vec::new();
    for (name, text) in documents() {
        for (line, _, body) in blocks(&text) {
            for row in body.lines() {
                let row = row.trim_start_matches("$ ").trim_start();
                let Some(rest) = row.strip_prefix("kernel-lsp ") else {
                    continue;
                };
                let sub = rest.split_whitespace().next().unwrap_or_default();
                if !["check", "bench", "rewrite", "rules", "history", "serve"].contains(&sub) {
                    continue;
                }
                let help = Command::new(common::server_binary()).args([sub, "--help"]).output().unwrap();
                let help = String::from_utf8_lossy(&help.stdout).to_string();
                let code = row.split(" #").next().unwrap_or(row);
                for word in code.split(|c: char| c.is_whitespace() || "[]|".contains(c)) {
                    let Some(flag) = word.strip_prefix("--").map(|f| f.split('=').next().unwrap_or(f)) else {
                        continue;
                    };
                    if flag.is_empty() {
                        continue;
                    }
                    checked += 1;
                    if !help.contains(&format!("--{flag}")) {
                        unknown.push(format!("{name}:{line}: `kernel-lsp {sub}` has no --{flag}"));
                    }
                }
            }
        }
    }
    assert!(checked >= 10, "few flags found ({checked})");
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
}

/// docs/bench.md's sample run on a CPU is what `bench` prints on this
/// machine's CPU, but for the versions and the CPU's name.
#[test]
fn the_sample_benchmark_is_what_bench_prints() {
    let doc = std::fs::read_to_string(repo().join("docs/bench.md")).unwrap();
    let (_, _, sample) = blocks(&doc)
        .into_iter()
        .find(|(_, _, b)| b.starts_with("candidate  examples/tanh_activation/candidate_fixed.py"))
        .expect("docs/bench.md's sample run");
    // Run from a copy of the repository's layout: the paths print relative to it.
    let dir = common::temp_workspace("docs-bench-sample");
    let example = dir.join("examples/tanh_activation");
    std::fs::create_dir_all(&example).unwrap();
    for f in ["candidate_fixed.py", "reference.py"] {
        std::fs::copy(repo().join("examples/tanh_activation").join(f), example.join(f)).unwrap();
    }
    let out = Command::new(common::server_binary())
        .args(["bench", "examples/tanh_activation/candidate_fixed.py", "--cpu", "--python", &python()])
        .current_dir(&dir)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).to_string();
    // Versions, the machine and the last digits of the CPU's rounding differ
    // from one install to the next.
    let mask = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| match l.strip_prefix("mode       ") {
                Some(mode) => format!("mode       {}", mode.split(" on ").next().unwrap_or(mode)),
                None => match l.find("; max abs diff ") {
                    Some(i) => format!("{}; max abs diff <masked>", &l[..i]),
                    None => l.trim_end().to_string(),
                },
            })
            .collect()
    };
    assert_eq!(mask(&printed), mask(&sample), "docs/bench.md's sample; the binary printed:\n{printed}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The JSON docs/check.md quotes: its kernel entry is in `check --format json`
/// on the examples as it is written, its diagnostic's place and the start of
/// its message too.
#[test]
fn the_quoted_check_json_is_in_the_output() {
    let doc = std::fs::read_to_string(repo().join("docs/check.md")).unwrap();
    let (_, _, quoted) = blocks(&doc).into_iter().find(|(_, info, _)| info == "json").expect("the JSON block");
    let quoted: serde_json::Value = serde_json::from_str(&quoted).expect("the quoted JSON parses");
    let out = Command::new(common::server_binary())
        .args(["check", "examples/", "--format", "json"])
        .current_dir(repo())
        .output()
        .unwrap();
    let actual: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kernel = &quoted["kernels"][0];
    assert!(
        actual["kernels"].as_array().unwrap().contains(kernel),
        "docs/check.md's kernel entry is not in the output: {kernel}"
    );
    let d = &quoted["diagnostics"][0];
    let prefix = d["message"].as_str().unwrap().trim_end_matches("...").trim_end();
    let found = actual["diagnostics"].as_array().unwrap().iter().find(|a| {
        ["file", "code", "name", "severity", "line", "column", "end_line", "end_column", "related"]
            .iter()
            .all(|k| a[*k] == d[*k])
    });
    let found = found.unwrap_or_else(|| panic!("docs/check.md's diagnostic is not in the output: {d}"));
    assert!(found["message"].as_str().unwrap().starts_with(prefix), "{found}");
}
