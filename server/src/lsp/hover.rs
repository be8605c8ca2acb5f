//! Hover: the rule's documentation over a diagnostic's range; over a
//! `tl.NAME` its signature and documentation from the Triton API in use (or
//! that `triton.language` has no NAME); over a kernel or jit helper its
//! signature, launch sites and last benchmark; over a launch its kernel, grid
//! and programs (`hover_api`); over `ModelNew` the figures of its last benchmark.

use crate::model::triton_api::TritonApi;
use crate::model::triton_names;
use crate::rules;

use super::bench_view;
use super::document::{AnalysisAt, Document};
use super::semantic::Facts;
use super::state::BenchState;

/// What a hover reads beside the document: the last benchmark, the Triton
/// API in use and the facts of the document's version.
pub struct HoverInputs<'a> {
    pub bench: Option<&'a BenchState>,
    pub api: &'a TritonApi,
    pub facts: &'a Facts,
    /// The last analysis at the offset, moved to the current text.
    pub at: &'a AnalysisAt,
}

/// Markdown for the hover at byte `offset`, if any.
pub(crate) fn hover_markdown(doc: &Document, offset: usize, inputs: &HoverInputs) -> Option<String> {
    let mut sections = Vec::new();
    let result = inputs.bench.and_then(|b| b.result.as_ref());
    if let Some(r) = result {
        if inputs.at.in_model_new {
            sections.push(bench_view::hover_section(r));
        }
    }
    sections.extend(super::hover_api::launch_hover(doc.text(), inputs.facts, offset));
    if let Some(f) = jit_under(doc.text(), inputs.facts, offset) {
        let mut s = super::hover_api::jit_hover(doc.text(), f);
        if let Some(r) = result.filter(|_| !f.launch_sites.is_empty()) {
            s.push_str(&format!("\n{}", bench_view::hover_section(r)));
        }
        sections.push(s);
    }
    for d in inputs.at.diagnostics.iter().filter(|d| d.range.contains(offset) || d.range.start == offset) {
        let mut s = format!("**{}** `{}`: {}\n\n", d.code, d.name, d.message);
        if let Some(doc) = rule_doc(&d.code) {
            // The line above names the rule: its heading would be the second.
            let heading = format!("# {} ", d.code);
            let body = match doc.strip_prefix(&heading) {
                Some(rest) => rest.split_once('\n').map_or("", |(_, b)| b).trim_start(),
                None => &doc,
            };
            s.push_str(body);
        }
        if let Some(fix) = &d.fix {
            s.push_str(&format!("\n\nFix: {}", fix.title));
        }
        sections.push(s);
    }
    if let Some(s) = triton_name_hover(doc, offset, inputs) {
        sections.push(s);
    }
    (!sections.is_empty()).then(|| sections.join("\n\n---\n\n"))
}

/// The jit function whose name is under `offset`: at its `def`, or used
/// anywhere (a launch, a call) by that name.
fn jit_under<'f>(text: &str, facts: &'f Facts, offset: usize) -> Option<&'f super::semantic::JitFn> {
    let (range, dotted) = super::hover_api::dotted_at(text, offset)?;
    if dotted.contains('.') || offset < range.start {
        return None;
    }
    facts.jit_named(dotted)
}

/// A rule's documentation: the registry's doc, or the `KL9xx` table's.
pub(crate) fn rule_doc(code: &str) -> Option<String> {
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
pub(crate) fn tl_name_at(text: &str, offset: usize) -> Option<(usize, &str)> {
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

fn triton_name_hover(doc: &Document, offset: usize, inputs: &HoverInputs) -> Option<String> {
    let (range, dotted) = super::hover_api::dotted_at(doc.text(), offset)?;
    let api_name = super::hover_api::api_name(inputs.facts, dotted)?;
    let api = inputs.api;
    if let Some(entry) = api.get(&api_name) {
        return Some(super::hover_api::api_hover(api, entry));
    }
    // Only `tl.NAME` is reported missing: a module such as `tl.math` or `tl.extra` is not a name.
    let (start, name) = tl_name_at(doc.text(), offset).filter(|(s, _)| *s >= range.start)?;
    if api.members(&format!("{api_name}.")).first().is_some() || api_name.contains('.') {
        return None;
    }
    let version = &api.version;
    let mut s =
        format!("`tl.{name}`: **`triton.language` has no `{name}`** (Triton {version}); this fails to compile.");
    let fix = inputs
        .at
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

    fn hover(doc: &Document, offset: usize, bench: Option<&BenchState>) -> Option<String> {
        let facts = doc.semantic().facts();
        let api = TritonApi::embedded();
        let at = doc.analysis_at(offset).expect("the test's document is analysed");
        hover_markdown(doc, offset, &HoverInputs { bench, api: &api, facts: &facts, at: &at })
    }

    #[test]
    fn hover_tells_known_from_unknown_names() {
        let doc = Document::new("y = tl.tanh(x)\nz = tl.sigmoid(x)\n", 0, Arc::new(Settings::default()));
        let unknown = hover(&doc, 8, None).unwrap();
        assert!(unknown.contains("has no `tanh`"), "{unknown}");
        let known = hover(&doc, doc.text().find("sigmoid").unwrap(), None).unwrap();
        assert!(known.contains("tl.sigmoid(x)") && known.contains("triton.language.sigmoid.html"), "{known}");
    }

    /// The diagnostic's line names KL005; the rule's doc under it does not name it again.
    #[test]
    fn an_unknown_tl_name_shows_the_kl005_heading_once() {
        let text = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.tanh(1.0))\n";
        let doc = Document::new(text, 0, Arc::new(Settings::default()));
        let h = hover(&doc, text.find("tanh").unwrap() + 1, None).expect("a hover");
        assert_eq!(h.matches("KL005").count(), 1, "{h}");
        assert!(h.contains("has no `tanh`") && h.contains("## What it does"), "{h}");
    }

    #[test]
    fn hover_on_a_kernel_and_on_its_launch() {
        let text = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    pass\n\ndef run(x):\n    k[(triton.cdiv(1000, 128),)](x, BLOCK=128)\n";
        let doc = Document::new(text, 0, Arc::new(Settings::default()));
        let h = hover(&doc, text.find("def k").unwrap() + 4, None).expect("on the def");
        assert!(h.contains("def k(x_ptr, BLOCK: tl.constexpr)") && h.contains("constexpr: `BLOCK`"), "{h}");
        assert!(h.contains("launched at line 9"), "{h}");
        let h = hover(&doc, text.find("k[(").unwrap(), None).expect("on the launch");
        assert!(h.contains("**Launch** of `k`") && h.contains(": 8 programs"), "{h}");
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
        let h = hover(&doc, at, Some(&bench)).expect("a hover over ModelNew");
        assert!(h.contains("**Benchmark** (GPU)") && h.contains("3.20x KernelBench's speedup"), "{h}");
        // Not elsewhere, and not without a result.
        assert!(hover(&doc, text.find("pass").unwrap(), Some(&bench)).is_none());
        assert!(hover(&doc, at, Some(&BenchState::default())).is_none());
    }
}
