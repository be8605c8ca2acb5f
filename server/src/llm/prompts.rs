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

/// The template `name`: `dir/name` when that file exists, else the embedded default.
pub fn load(name: &str, dir: Option<&Path>) -> Result<String, LlmError> {
    if let Some(path) = dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
        return std::fs::read_to_string(&path)
            .map_err(|e| LlmError::Setup(format!("cannot read the prompt {}: {e}", path.display())));
    }
    DEFAULTS
        .iter()
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
}
