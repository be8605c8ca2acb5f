//! The hygiene gate: what makes an LLM answer not a rewrite (KL101-KL105,
//! KL107: a PyTorch fallback, PyTorch computing the task, a kernel never
//! launched, a cached output, a side stream, a patched timer) and what makes
//! it unsafe to run at all (KL108's findings, read strictly: every import
//! outside the task's needs). Checked on the answer's text before anything
//! runs; the reasons go back in the repair prompt.
//!
//! The rules run through the registry, directly on the model (with the
//! reference file's task, `model::task`, in their `Scope`), and the unsafe
//! code is `model::untrusted`'s facts: an answer cannot switch them off with
//! a `# kernel-lsp: ignore` comment or the user's `select`/`ignore` settings.

use std::path::Path;

use crate::config::Settings;
use crate::model::{parse_forest, task, untrusted, FileModel, StubReads};
use crate::rules;

/// Rules whose diagnostics refuse an answer.
pub const REFUSING: &[&str] = &["KL101", "KL102", "KL103", "KL104", "KL105", "KL107"];

/// Why `text` is refused, one `- ` line per reason; empty when it passes.
/// `reference`: the file the benchmark compares against, read here (the edge)
/// so that KL102 knows the task's main computation when the answer has no `Model`.
pub(crate) fn refusals(text: &str, reference: Option<&Path>) -> Vec<String> {
    let tree = parse_forest(text);
    let model = FileModel::build(text, &tree);
    let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let mut out = Vec::new();
    let unsafe_code = untrusted::findings(&model, true);
    for (range, why) in &unsafe_code {
        out.push(format!(
            "- line {}: {why} (KL108 untrusted-side-effect). The answer is not run: remove it; a kernel file needs only torch, triton and pure helpers",
            line(range.start)
        ));
    }
    let settings = Settings::default();
    let mut diagnostics = Vec::new();
    let reference_task = reference
        .filter(|_| crate::model::candidate::method(&model, "Model", "forward").is_none())
        .and_then(|p| std::fs::read_to_string(p).ok())
        .and_then(|r| {
            let tree = parse_forest(&r);
            task::of_reference(&FileModel::build(&r, &tree))
        });
    let stubs = StubReads::default();
    let scope = rules::Scope { task: reference_task.as_deref(), ..rules::Scope::whole(&model, &settings, &stubs) };
    for rule in REFUSING.iter().filter_map(|code| rules::by_code(code)) {
        (rule.check)(&scope, &mut diagnostics);
    }
    rules::finish(&mut diagnostics);
    for d in diagnostics {
        out.push(format!("- line {}: {} {}: {}", line(d.range.start), d.code, d.name, d.message));
    }
    out
}

/// The pipeline's own gate reasons (action-specific) followed by the hygiene refusals.
pub(crate) fn merge(gate: Option<String>, refusals: Vec<String>) -> Option<String> {
    let mut parts: Vec<String> = gate.into_iter().collect();
    parts.extend(refusals);
    (!parts.is_empty()).then(|| parts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_runs_a_command_is_refused_with_the_line() {
        let text =
            "import os; os.system(\"touch /tmp/x\")\nimport torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n";
        let r = refusals(text, None);
        assert!(r.iter().any(|l| l.starts_with("- line 1: runs a command (`os.system`)")), "{r:#?}");
    }

    #[test]
    fn the_reference_file_says_what_the_task_is() {
        let dir = std::env::temp_dir().join(format!("kernel-lsp-gate-ref-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let reference = dir.join("reference.py");
        std::fs::write(&reference, "import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, a, b):\n        return torch.matmul(a, b)\n").unwrap();
        let text = "import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, a, b):\n        k[(1,)](a)\n        return torch.matmul(a, b)\n";
        // Without the reference a matmul is not known to be the task; with it, it is.
        assert!(!refusals(text, None).iter().any(|l| l.contains("KL102")));
        let r = refusals(text, Some(&reference));
        assert!(r.iter().any(|l| l.contains("KL102 torch-computes-the-task") && l.contains("(matmul)")), "{r:#?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn suppression_comments_do_not_open_the_gate() {
        let text = "import torch\nimport torch.nn.functional as F\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return F.gelu(x)  # kernel-lsp: ignore\n";
        let r = refusals(text, None);
        assert!(r.iter().any(|l| l.contains("KL103 kernel-never-launched")), "{r:#?}");
        assert!(!r.iter().any(|l| l.contains("KL108")), "{r:#?}");
    }
}
