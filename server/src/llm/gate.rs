//! The hygiene gate: what makes an LLM answer not a rewrite (KL101-KL105,
//! KL107: a PyTorch fallback, PyTorch computing the task, a kernel never
//! launched, a cached output, a side stream, a patched timer) and what makes
//! it unsafe to run at all (KL108's findings, read strictly: every import
//! outside the task's needs). Checked on the answer's text before anything
//! runs; the reasons go back in the repair prompt.
//!
//! The rules run directly on the model: an answer cannot switch them off with
//! a `# kernel-lsp: ignore` comment or the user's `select`/`ignore` settings.

use crate::analysis::{parse, FileModel};
use crate::config::Settings;
use crate::rules;

/// Rules whose diagnostics refuse an answer.
pub const REFUSING: &[&str] = &["KL101", "KL102", "KL103", "KL104", "KL105", "KL107"];

/// Why `text` is refused, one `- ` line per reason; empty when it passes.
pub fn refusals(text: &str) -> Vec<String> {
    let tree = parse(text, None);
    let model = FileModel::build(text, &tree);
    let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
    let mut out = Vec::new();
    let unsafe_code = rules::kl108::findings(&model, true);
    for (range, why) in &unsafe_code {
        out.push(format!(
            "- line {}: {why} (KL108 untrusted-side-effect). The answer is not run: remove it; a kernel file needs only torch, triton and pure helpers",
            line(range.start)
        ));
    }
    let settings = Settings::default();
    let mut diagnostics = Vec::new();
    for code in REFUSING {
        if let Some(rule) = rules::by_code(code) {
            (rule.check)(&model, &settings, &mut diagnostics);
        }
    }
    rules::finish(&mut diagnostics);
    for d in diagnostics {
        out.push(format!("- line {}: {} {}: {}", line(d.range.start), d.code, d.name, d.message));
    }
    out
}

/// Whether the answer may run at all (no KL108 finding): checked before the sandbox is even set up.
pub fn is_safe_to_run(text: &str) -> bool {
    let tree = parse(text, None);
    let model = FileModel::build(text, &tree);
    rules::kl108::findings(&model, true).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_that_runs_a_command_is_refused_with_the_line() {
        let text =
            "import os; os.system(\"touch /tmp/x\")\nimport torch\n\nclass ModelNew(torch.nn.Module):\n    pass\n";
        let r = refusals(text);
        assert!(r.iter().any(|l| l.starts_with("- line 1: runs a command (`os.system`)")), "{r:#?}");
        assert!(!is_safe_to_run(text));
    }

    #[test]
    fn suppression_comments_do_not_open_the_gate() {
        let text = "import torch\nimport torch.nn.functional as F\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    pass\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return F.gelu(x)  # kernel-lsp: ignore\n";
        let r = refusals(text);
        assert!(r.iter().any(|l| l.contains("KL103 kernel-never-launched")), "{r:#?}");
        assert!(is_safe_to_run(text));
    }
}
