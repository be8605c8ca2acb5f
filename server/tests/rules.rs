//! Fixture + snapshot tests for every rule: `tests/fixtures/rules/KLxxx.py`
//! holds cases that must fire and cases that must not; the snapshot holds the
//! rendered diagnostics of that rule alone.

use std::path::{Path, PathBuf};

use kernel_lsp::checker::check_text;
use kernel_lsp::config::Settings;
use kernel_lsp::diagnostic::{apply_edits, Applicability, Diagnostic};
use kernel_lsp::rules::RULES;
use kernel_lsp::text::{ColumnUnit, LineIndex};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/rules")
}

fn render(text: &str, diagnostics: &[Diagnostic]) -> String {
    let index = LineIndex::new(text);
    let pos = |o: usize| {
        let (l, c) = index.position(text, o, ColumnUnit::Char);
        format!("{}:{}", l + 1, c + 1)
    };
    let mut out = String::new();
    for d in diagnostics {
        out.push_str(&format!("{} {} [{}] {}\n", pos(d.range.start), d.code, d.severity.as_str(), d.message));
        out.push_str(&format!("    | {}\n", text[d.range.start..d.range.end].lines().next().unwrap_or("")));
        for r in &d.related {
            out.push_str(&format!("    related {}: {}\n", pos(r.range.start), r.message));
        }
        if let Some(f) = &d.fix {
            out.push_str(&format!("    fix ({:?}): {}\n", f.applicability, f.title));
            for e in &f.edits {
                out.push_str(&format!("      {}-{} -> {:?}\n", pos(e.range.start), pos(e.range.end), e.new_text));
            }
        }
    }
    if out.is_empty() {
        out.push_str("(no diagnostics)\n");
    }
    out
}

fn only(code: &str) -> Settings {
    Settings { select: vec![code.to_string()], ..Settings::default() }
}

fn fixture(code: &str) -> String {
    let path = fixtures_dir().join(format!("{code}.py"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_rule_has_a_fixture_and_a_snapshot() {
    for rule in RULES {
        let text = fixture(rule.code);
        let result = check_text(&text, &only(rule.code));
        assert!(!result.diagnostics.is_empty(), "{} fires nowhere in its fixture", rule.code);
        assert!(result.diagnostics.iter().all(|d| d.code == rule.code));
        insta::assert_snapshot!(rule.code, render(&text, &result.diagnostics));
    }
}

/// Applying a rule's safe and reviewed fixes removes the diagnostics they were attached to.
#[test]
fn fixed_fixtures_lose_the_fixed_diagnostics() {
    for rule in RULES {
        let text = fixture(rule.code);
        let settings = only(rule.code);
        let before = check_text(&text, &settings).diagnostics;
        let fixable: Vec<&Diagnostic> = before
            .iter()
            .filter(|d| d.fix.as_ref().is_some_and(|f| f.applicability <= Applicability::NeedsReview))
            .collect();
        if fixable.is_empty() {
            continue;
        }
        let edits: Vec<_> =
            fixable.iter().flat_map(|d| d.fix.as_ref().map(|f| f.edits.clone()).unwrap_or_default()).collect();
        let fixed = apply_edits(&text, &edits).unwrap_or_else(|e| panic!("{}: {e}", rule.code));
        let after = check_text(&fixed, &settings).diagnostics;
        assert_eq!(
            after.len(),
            before.len() - fixable.len(),
            "{}: after fixing, left:\n{}",
            rule.code,
            render(&fixed, &after)
        );
        let tree = kernel_lsp::model::parse(&fixed, None);
        assert!(!tree.root_node().has_error(), "{}: the fix broke the syntax:\n{fixed}", rule.code);
    }
}

#[test]
fn suppression_comments_are_honoured() {
    let text = r#"import triton
import triton.language as tl

@triton.jit
def k(x_ptr):
    a = tl.tanh(x_ptr)  # kernel-lsp: ignore[KL005]
    b = tl.tanh(x_ptr)  # kernel-lsp: ignore[KL001]
    c = tl.tanh(x_ptr)  # kernel-lsp: ignore
    d = tl.tanh(x_ptr)
"#;
    let result = check_text(text, &Settings::default());
    let lines: Vec<usize> = result.diagnostics.iter().map(|d| text[..d.range.start].lines().count()).collect();
    assert_eq!(lines, vec![7, 9], "{}", render(text, &result.diagnostics));
}

#[test]
fn select_and_ignore_filter_by_prefix() {
    let text = fixture("KL005");
    let ignored = Settings { ignore: vec!["KL00".into()], ..Settings::default() };
    assert!(check_text(&text, &ignored).diagnostics.is_empty());
    let selected = Settings { select: vec!["KL005".into()], ..Settings::default() };
    assert_eq!(check_text(&text, &selected).diagnostics.len(), 10);
}

#[test]
fn target_gpu_changes_the_shared_memory_limit() {
    // fp32, 128x128x32, 4 stages: an H100 keeps 4 buffers of (128x32 + 32x128) x 4 B = 131,072 B (fits
    // 232,448); Turing keeps 3 = 98,304 B, over its 65,536.
    let text = r#"import triton
import triton.language as tl

@triton.jit
def mm(a_ptr, b_ptr, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], acc)

def run(a, b, c, K):
    mm[(1,)](a, b, c, K, BM=128, BN=128, BK=32, num_stages=4)
"#;
    assert!(check_text(text, &only("KL006")).diagnostics.is_empty());
    let turing = Settings { target_gpu: "turing".into(), ..only("KL006") };
    let on_turing = check_text(text, &turing).diagnostics;
    assert_eq!(on_turing.len(), 1);
    assert!(on_turing[0].message.contains("98,304"), "{}", on_turing[0].message);
}

#[test]
fn kernels_are_classified_persistent_or_not() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gru");
    let classify = |file: &str| {
        let text = std::fs::read_to_string(examples.join(file)).unwrap();
        check_text(&text, &Settings::default()).kernels.into_iter().map(|k| (k.name, k.persistent)).collect::<Vec<_>>()
    };
    let persistent = classify("gru_persistent.py");
    assert!(persistent.iter().any(|(n, p)| n == "gru_persistent_kernel" && *p), "{persistent:?}");
    let python_loop = classify("gru_python_loop.py");
    assert!(python_loop.iter().all(|(_, p)| !*p), "{python_loop:?}");
}

#[test]
fn persistent_means_a_grid_stride_tile_loop_or_a_state_loop_inside() {
    let path = fixtures_dir().join("../persistent/classified.py");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let kernels: Vec<(String, bool)> =
        check_text(&text, &Settings::default()).kernels.into_iter().map(|k| (k.name, k.persistent)).collect();
    let expected = [("tiles_grid_stride", true), ("state_loop", true), ("attention_forward", false)];
    for (name, persistent) in expected {
        assert!(kernels.iter().any(|(n, p)| n == name && *p == persistent), "{name}: {kernels:?}");
    }
}

/// What a kernel is: only a function Triton compiles. A bare `@jit` that
/// numba bound is NumPy code, whose arrays may be indexed by arrays.
#[test]
fn a_numba_jit_function_is_not_a_kernel() {
    let body = r#"
@jit
def pick(table, idx):
    out = table[idx]
    return out
"#;
    let numba = format!("import triton\nfrom numba import jit\n{body}");
    let result = check_text(&numba, &Settings::default());
    assert!(result.kernels.is_empty(), "{:?}", result.kernels);
    assert!(result.diagnostics.is_empty(), "{}", render(&numba, &result.diagnostics));
    // The same decorator bound by Triton makes a kernel, and the block indexed by a block is KL007.
    let triton_jit = r#"import triton.language as tl
from triton import jit


@jit
def pick(table_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    table = tl.load(table_ptr + offs)
    idx = tl.load(idx_ptr + offs)
    tl.store(out_ptr + offs, table[idx])
"#;
    let result = check_text(triton_jit, &only("KL007"));
    assert_eq!(result.kernels.len(), 1);
    assert_eq!(result.diagnostics.len(), 1, "{}", render(triton_jit, &result.diagnostics));
}

/// A file that never imports Triton has no kernels and no `tl.X`: a
/// comprehension variable named `tl` is a Python value, and a bare `@jit`
/// is someone else's. A fragment that names `@triton.jit` is Triton code
/// whose import is missing, and is checked.
#[test]
fn a_file_that_never_imports_triton_gets_no_kernel_rules() {
    let plain = r#"def labels(rows):
    return [tl.upper() for tl in rows]


@jit
def scale(x_ptr, n):
    y = tl.tanh(x_ptr)
"#;
    let result = check_text(plain, &Settings::default());
    assert!(result.kernels.is_empty(), "{:?}", result.kernels);
    assert!(result.diagnostics.is_empty(), "{}", render(plain, &result.diagnostics));
    let fragment = plain.replace("@jit", "@triton.jit");
    let result = check_text(&fragment, &only("KL005"));
    assert_eq!(result.kernels.len(), 1, "{:?}", result.kernels);
    assert!(result.diagnostics.iter().any(|d| d.code == "KL005"), "{}", render(&fragment, &result.diagnostics));
    // Importing Triton anywhere, even inside `try:`, makes the same code Triton code.
    let imported = format!(
        "try:\n    import triton\n    import triton.language as tl\nexcept ImportError:\n    pass\n\n\n{plain}"
    );
    let result = check_text(&imported, &only("KL005"));
    assert_eq!(result.kernels.len(), 1, "{:?}", result.kernels);
    assert!(result.diagnostics.iter().any(|d| d.code == "KL005"), "{}", render(&imported, &result.diagnostics));
}
