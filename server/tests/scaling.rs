//! The analysis is linear in the file: names resolve to the binding visible
//! where they are used, and questions that follow assignments visit each
//! name once. Work is counted in `FileModel::steps`, not timed.

use std::path::Path;

use kernel_lsp::checker::check_text;
use kernel_lsp::config::Settings;
use kernel_lsp::model::{parse_forest, FileModel};
use kernel_lsp::rules::RULES;

fn steps(text: &str) -> usize {
    let tree = parse_forest(text);
    let model = FileModel::build(text, &tree);
    let settings = Settings::default();
    let mut out = Vec::new();
    for rule in RULES {
        (rule.check)(&kernel_lsp::rules::Scope::whole(&model, &settings, &Default::default()), &mut out);
    }
    model.kernel_summaries(&Default::default());
    model.steps()
}

fn kl001_fixture() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/rules/KL001.py");
    std::fs::read_to_string(path).expect("the KL001 fixture")
}

/// A host function that rebinds `n` parameters through one tuple assignment
/// and loops over their product: following every assignment without a memo
/// made this exponential in `n`.
fn rebinding(n: usize) -> String {
    let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
    let list = names.join(", ");
    format!(
        r#"import itertools
import triton
import triton.language as tl

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)

def tune(x, {list}):
    {list} = [v if isinstance(v, list) else [v] for v in ({list})]
    for cfg in itertools.product({list}):
        k[(1,)](x, x.numel(), BLOCK=128)
"#
    )
}

#[test]
fn rebinding_many_names_is_linear() {
    let (small, large) = (steps(&rebinding(7)), steps(&rebinding(14)));
    assert!(large <= 3 * small.max(1), "7 names: {small} steps, 14 names: {large}");
}

#[test]
fn a_repeated_module_costs_in_proportion_to_its_copies() {
    let text = kl001_fixture();
    let (ten, twenty) = (steps(&text.repeat(10)), steps(&text.repeat(20)));
    assert!(ten > 0);
    assert!(twenty <= ten * 5 / 2, "10 copies: {ten} steps, 20 copies: {twenty}");
}

#[test]
fn each_copy_of_a_repeated_module_relates_to_its_own_launches() {
    let text = kl001_fixture();
    let settings = Settings { select: vec!["KL001".to_string()], ..Settings::default() };
    let once: Vec<String> =
        check_text(&text, &settings).diagnostics.into_iter().map(|d| d.message.to_string()).collect();
    assert!(!once.is_empty());
    let repeated: Vec<String> =
        check_text(&text.repeat(5), &settings).diagnostics.into_iter().map(|d| d.message.to_string()).collect();
    let expected: Vec<String> = (0..5).flat_map(|_| once.iter().cloned()).collect();
    assert_eq!(repeated, expected);
}
