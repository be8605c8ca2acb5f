//! Prompt templates: the files of `prompts/`, embedded as defaults, each
//! overridable by a file of the same name in the `prompts-dir` setting.
//! Placeholders are `{{name}}`; unknown ones are left as they are.

use std::path::Path;

use super::LlmError;

pub const SYSTEM: &str = "system.md";
pub const PERSISTENT: &str = "persistent.md";
pub const GRID_2D: &str = "grid-2d.md";
pub const BLOCK_SIZE: &str = "block-size.md";
pub const REPAIR_COMPILE: &str = "repair-compile.md";
pub const REPAIR_ACCURACY: &str = "repair-accuracy.md";

const DEFAULTS: &[(&str, &str)] = &[
    (SYSTEM, include_str!("../../../prompts/system.md")),
    (PERSISTENT, include_str!("../../../prompts/persistent.md")),
    (GRID_2D, include_str!("../../../prompts/grid-2d.md")),
    (BLOCK_SIZE, include_str!("../../../prompts/block-size.md")),
    (REPAIR_COMPILE, include_str!("../../../prompts/repair-compile.md")),
    (REPAIR_ACCURACY, include_str!("../../../prompts/repair-accuracy.md")),
];

/// The verified few-shot kernels of `prompts/examples/` (the persistent
/// recurrent kernels of `examples/recurrent/`, measured on an H100), with the
/// line that introduces each in a prompt.
pub const EXAMPLES: &[(&str, &str, &str)] = &[
    (
        "examples/gru_wavefront.py",
        "a stacked unidirectional GRU as one wavefront launch (KernelBench 39_GRU on an H100: correct at its fp32 tolerance 1e-4, 32x faster than cuDNN)",
        include_str!("../../../prompts/examples/gru_wavefront.py"),
    ),
    (
        "examples/gru_bidir_persistent.py",
        "a bidirectional GRU, one launch per layer with both directions side by side (KernelBench 41_GRUBidirectional on an H100: correct, 10x faster than cuDNN)",
        include_str!("../../../prompts/examples/gru_bidir_persistent.py"),
    ),
    (
        "examples/lstm_wavefront.py",
        "a stacked LSTM as one wavefront launch (KernelBench 35_LSTM on an H100: correct, 14x faster than cuDNN)",
        include_str!("../../../prompts/examples/lstm_wavefront.py"),
    ),
];

/// The example closest to the task: an LSTM, a bidirectional GRU, or else the
/// unidirectional GRU (the reference and the file are searched).
pub(crate) fn example_for(task_text: &str) -> &'static str {
    let compact: String = task_text.chars().filter(|c| !c.is_whitespace()).collect();
    if compact.contains("nn.LSTM(") || compact.contains("LSTM(") {
        EXAMPLES[2].0
    } else if compact.contains("bidirectional=True") {
        EXAMPLES[1].0
    } else {
        EXAMPLES[0].0
    }
}

/// The prompt section that shows the example `name` (as loaded by [`load`]).
pub(crate) fn example_section(name: &str, dir: Option<&Path>) -> Result<String, LlmError> {
    let what = EXAMPLES.iter().find(|(n, _, _)| *n == name).map(|(_, w, _)| *w).unwrap_or("a verified example");
    let code = load(name, dir)?;
    Ok(format!("A verified kernel for a related task: {what}.\n\n```python\n{}\n```", code.trim_end()))
}

/// The template `name`: `dir/name` when that file exists, else the embedded default.
pub fn load(name: &str, dir: Option<&Path>) -> Result<String, LlmError> {
    if let Some(path) = dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
        return std::fs::read_to_string(&path)
            .map_err(|e| LlmError::Setup(format!("cannot read the prompt {}: {e}", path.display())));
    }
    DEFAULTS
        .iter()
        .copied()
        .chain(EXAMPLES.iter().map(|(n, _, t)| (*n, *t)))
        .find(|(n, _)| *n == name)
        .map(|(_, t)| t.to_string())
        .ok_or_else(|| LlmError::Setup(format!("no prompt template named {name}")))
}

/// Replaces `{{key}}` by its value, in one pass (a value is never re-expanded).
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        match after.find("}}") {
            Some(close) => {
                let key = after[..close].trim();
                match vars.iter().find(|(k, _)| *k == key) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[open..open + 4 + close]),
                }
                rest = &after[close + 2..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn placeholders_are_replaced_once() {
        let out = super::render("a {{x}} b {{ y }} {{z}}", &[("x", "{{y}}"), ("y", "2")]);
        assert_eq!(out, "a {{y}} b 2 {{z}}");
    }

    #[test]
    fn every_default_template_is_embedded() {
        for name in [
            super::SYSTEM,
            super::PERSISTENT,
            super::GRID_2D,
            super::BLOCK_SIZE,
            super::REPAIR_COMPILE,
            super::REPAIR_ACCURACY,
        ] {
            assert!(super::load(name, None).unwrap().contains("CRITICAL"), "{name}");
        }
    }

    /// Every file of `prompts/examples/` is embedded, and every embedded
    /// example still passes the checker with no diagnostics.
    #[test]
    fn every_example_is_embedded_and_clean() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../prompts/examples");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .expect("prompts/examples exists")
            .map(|e| format!("examples/{}", e.unwrap().file_name().to_string_lossy()))
            .filter(|n| n.ends_with(".py"))
            .collect();
        files.sort();
        let mut embedded: Vec<String> = super::EXAMPLES.iter().map(|(n, _, _)| n.to_string()).collect();
        embedded.sort();
        assert_eq!(files, embedded);
        let settings = crate::config::Settings::default();
        for (name, _, text) in super::EXAMPLES {
            let result = crate::checker::check_text(text, &settings);
            assert!(result.diagnostics.is_empty(), "{name}: {:?}", result.diagnostics);
            assert!(text.contains("grid_barrier(") && text.contains("check_residency("), "{name}");
        }
    }

    #[test]
    fn the_example_follows_the_task() {
        assert_eq!(super::example_for("self.lstm = nn.LSTM(input_size, hidden_size)"), "examples/lstm_wavefront.py");
        assert_eq!(
            super::example_for("nn.GRU(a, b, n, bias, bf, dropout=0, bidirectional = True)"),
            "examples/gru_bidir_persistent.py"
        );
        assert_eq!(
            super::example_for("nn.GRU(a, b, n, bias, bf, dropout=0, bidirectional=False)"),
            "examples/gru_wavefront.py"
        );
        let section = super::example_section(super::example_for("nn.GRU"), None).unwrap();
        assert!(section.contains("def gru_wavefront_kernel(") && section.contains("32x"), "{section}");
    }
}
