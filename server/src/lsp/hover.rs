//! Hover: the rule's documentation over a diagnostic's range, over a
//! `tl.NAME` whether `triton.language` has NAME, and over `ModelNew` the
//! figures of its last benchmark.

use crate::model::triton_names;
use crate::rules;

use super::bench_view;
use super::document::Document;
use super::state::BenchState;

/// Markdown for the hover at byte `offset`, if any.
pub fn hover_markdown(doc: &Document, offset: usize, bench: Option<&BenchState>) -> Option<String> {
    let mut sections = Vec::new();
    if let Some(r) = bench.and_then(|b| b.result.as_ref()) {
        let on_model = doc.result.classes.iter().any(|c| c.name == "ModelNew" && c.range.contains(offset));
        if on_model {
            sections.push(bench_view::hover_section(r));
        }
    }
    for d in doc.result.diagnostics.iter().filter(|d| d.range.contains(offset) || d.range.start == offset) {
        let mut s = format!("**{}** `{}`: {}\n\n", d.code, d.name, d.message);
        if let Some(doc) = rule_doc(&d.code) {
            s.push_str(&doc);
        }
        if let Some(fix) = &d.fix {
            s.push_str(&format!("\n\nFix: {}", fix.title));
        }
        sections.push(s);
    }
    if let Some(s) = triton_name_hover(doc, offset) {
        sections.push(s);
    }
    (!sections.is_empty()).then(|| sections.join("\n\n---\n\n"))
}

/// A rule's documentation: the registry's doc, or the `KL9xx` table's.
pub fn rule_doc(code: &str) -> Option<String> {
    // A doc that opens with its own heading keeps it; the heading is never shown twice.
    let titled = |code: &str, name: &str, doc: &str| match doc.trim_start().starts_with("# ") {
        true => doc.trim_start().to_string(),
        false => format!("# {code} {name}\n\n{doc}"),
    };
    if let Some(rule) = rules::by_code(code) {
        return Some(titled(rule.code, rule.name, rule.doc));
    }
    bench_view::bench_code_by_code(code).map(|c| titled(c.code, c.name, c.doc))
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The `NAME` of a `tl.NAME` that `offset` sits on.
pub fn tl_name_at(text: &str, offset: usize) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    let offset = offset.min(bytes.len());
    let mut start = offset;
    while start > 0 && is_ident(bytes[start - 1]) {
        start -= 1;
    }
    let mut end = offset;
    while end < bytes.len() && is_ident(bytes[end]) {
        end += 1;
    }
    if start == end {
        return None;
    }
    let before = &text[..start];
    let qualified = before.ends_with("tl.") || before.ends_with("triton.language.");
    let prefix_ok = before.trim_end_matches("tl.").as_bytes().last().is_none_or(|b| !is_ident(*b) && *b != b'.');
    (qualified && (prefix_ok || before.ends_with("triton.language."))).then(|| (start, &text[start..end]))
}

fn triton_name_hover(doc: &Document, offset: usize) -> Option<String> {
    let (start, name) = tl_name_at(doc.text(), offset)?;
    let version = triton_names::generated_from();
    if triton_names::is_known(name) {
        return Some(format!("`tl.{name}`: `triton.language.{name}` exists (Triton {version})."));
    }
    let mut s =
        format!("`tl.{name}`: **`triton.language` has no `{name}`** (Triton {version}); this fails to compile.");
    let fix = doc
        .result
        .diagnostics
        .iter()
        .find(|d| d.code == "KL005" && d.range.contains(start))
        .and_then(|d| d.fix.as_ref());
    match (fix, closest(name)) {
        (Some(f), _) => s.push_str(&format!("\n\nFix: {}", f.title)),
        (None, Some(near)) => s.push_str(&format!("\n\nDid you mean `tl.{near}`?")),
        (None, None) => {}
    }
    if name == "tanh" {
        s.push_str("\n\nFor tanh use `tl.extra.cuda.libdevice.tanh(x)` or `2 * tl.sigmoid(2 * x) - 1`.");
    }
    Some(s)
}

/// The known name nearest to `name` by edit distance, if close enough to be a typo.
fn closest(name: &str) -> Option<&'static str> {
    triton_names::all()
        .map(|k| (levenshtein(name, k), k))
        .filter(|(d, _)| *d <= 2.max(name.len() / 4))
        .min()
        .map(|(_, k)| k)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;
    use std::sync::Arc;

    #[test]
    fn every_rule_doc_has_its_heading_once() {
        let codes = crate::rules::RULES.iter().map(|r| r.code).chain(["KL901", "KL907"]);
        for code in codes {
            let Some(doc) = rule_doc(code) else { continue };
            let heading = doc.lines().next().unwrap_or_default().to_string();
            assert!(heading.starts_with(&format!("# {code} ")), "{code}: {heading}");
            assert_eq!(doc.matches(&heading).count(), 1, "{code}'s heading twice:\n{doc}");
        }
    }

    #[test]
    fn tl_names_are_found_under_the_cursor() {
        let t = "y = tl.tanh(x) + mytl.exp(x)\n";
        assert_eq!(tl_name_at(t, t.find("tanh").unwrap() + 2), Some((7, "tanh")));
        assert_eq!(tl_name_at(t, t.find("exp").unwrap()), None);
        assert_eq!(tl_name_at(t, 0), None);
    }

    #[test]
    fn hover_tells_known_from_unknown_names() {
        let doc = Document::new("y = tl.tanh(x)\nz = tl.sigmoid(x)\n", 0, Arc::new(Settings::default()));
        let unknown = hover_markdown(&doc, 8, None).unwrap();
        assert!(unknown.contains("has no `tanh`"), "{unknown}");
        let known = hover_markdown(&doc, doc.text().find("sigmoid").unwrap(), None).unwrap();
        assert!(known.contains("exists"), "{known}");
    }

    #[test]
    fn hover_over_model_new_shows_its_last_benchmark() {
        let text = "import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    pass\n";
        let doc = Document::new(text, 0, Arc::new(Settings::default()));
        let at = text.find("ModelNew").unwrap() + 2;
        let mut result = crate::bench::BenchResult::failed("timeout", "x", None, None);
        result.error = None;
        result.mode = "gpu".into();
        result.correct = Some(true);
        result.speedup = Some(3.0);
        result.extra.insert("kernelbench_speedup".into(), 3.2.into());
        let bench = BenchState { result: Some(result), ..Default::default() };
        let h = hover_markdown(&doc, at, Some(&bench)).expect("a hover over ModelNew");
        assert!(h.contains("**Benchmark** (GPU)") && h.contains("3.20x KernelBench's speedup"), "{h}");
        // Not elsewhere, and not without a result.
        assert!(hover_markdown(&doc, text.find("pass").unwrap(), Some(&bench)).is_none());
        assert!(hover_markdown(&doc, at, Some(&BenchState::default())).is_none());
    }
}
