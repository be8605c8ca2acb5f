//! From an LLM answer to a candidate file: the fenced Python code, taken as
//! the whole file or spliced into the current file by top-level name, then
//! checked to parse.

use tree_sitter::Node;

use crate::diagnostic::{apply_edits, Edit};
use crate::model::NodeKind;
use crate::text::{LineIndex, TextRange};

/// Why an answer did not yield a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExtractError {
    NoCode,
    /// The answer's code could not be put into the file (message says why).
    Splice(String),
    /// The resulting file does not parse.
    Syntax(String),
}

impl std::fmt::Display for ExtractError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExtractError::NoCode => f.write_str("the answer has no ```python code block"),
            ExtractError::Splice(m) => {
                write!(f, "the answer's code cannot be spliced into the file: {m}")
            }
            ExtractError::Syntax(m) => write!(f, "syntax error: {m}"),
        }
    }
}

/// The Python code blocks of a Markdown answer (```python, ```py or bare ```), in order.
pub(crate) fn code_blocks(answer: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<(bool, String)> = None;
    for line in answer.lines() {
        let trimmed = line.trim_start();
        match current.as_mut() {
            None => {
                if let Some(lang) = trimmed.strip_prefix("```") {
                    let lang = lang.trim().to_ascii_lowercase();
                    current = Some((matches!(lang.as_str(), "" | "python" | "py" | "python3"), String::new()));
                }
            }
            Some((python, code)) => {
                if trimmed.starts_with("```") && trimmed.trim_end() == "```" {
                    if *python && !code.trim().is_empty() {
                        blocks.push(std::mem::take(code));
                    }
                    current = None;
                } else {
                    code.push_str(line);
                    code.push('\n');
                }
            }
        }
    }
    blocks
}

/// The candidate file an answer describes: a block that is a whole file
/// (`class ModelNew` and imports), or the answer's definitions spliced into
/// `original` by name.
pub(crate) fn candidate_file(answer: &str, original: &str) -> Result<String, ExtractError> {
    let blocks = code_blocks(answer);
    if blocks.is_empty() {
        return Err(ExtractError::NoCode);
    }
    let whole = blocks.iter().filter(|b| is_whole_file(b)).max_by_key(|b| b.len());
    let text = match whole {
        Some(b) => b.clone(),
        None => splice(&blocks.join("\n\n"), original)?,
    };
    let text = keep_directives(original, &text);
    check_syntax(&text)?;
    Ok(text)
}

/// A line that is only a `# kernel-lsp: ...` comment (a reference
/// declaration, a file-wide suppression), trimmed.
fn directive(line: &str) -> Option<&str> {
    let t = line.trim();
    t.strip_prefix('#')?.trim_start().starts_with("kernel-lsp:").then_some(t)
}

/// The answer's text with the user's own directive lines: the answer may not
/// change what the file is checked against or what it suppresses. Directive
/// lines the user's file does not have are dropped; the user's directive
/// lines the answer lost are put back at their line (or the end).
pub(crate) fn keep_directives(original: &str, candidate: &str) -> String {
    let theirs: Vec<(usize, &str)> =
        original.lines().enumerate().filter_map(|(i, l)| directive(l).map(|d| (i, d))).collect();
    let mut lines: Vec<String> = candidate
        .lines()
        .filter(|l| directive(l).is_none_or(|d| theirs.iter().any(|(_, t)| *t == d)))
        .map(str::to_string)
        .collect();
    for (at, d) in theirs {
        if !lines.iter().any(|l| directive(l) == Some(d)) {
            let line = original.lines().nth(at).unwrap_or(d).to_string();
            lines.insert(at.min(lines.len()), line);
        }
    }
    let mut out = lines.join("\n");
    if candidate.ends_with('\n') || !out.is_empty() {
        out.push('\n');
    }
    out
}

fn is_whole_file(code: &str) -> bool {
    let has = |p: &str| code.lines().any(|l| l.starts_with(p));
    has("class ModelNew") && (has("import ") || has("from "))
}

/// `Err` with the first syntax error's line when `text` does not parse.
pub(crate) fn check_syntax(text: &str) -> Result<(), ExtractError> {
    let tree = crate::model::parse(text, None);
    let root = tree.root_node();
    if !root.has_error() {
        return Ok(());
    }
    let node = first_error(root).unwrap_or(root);
    let line = node.start_position().row;
    let source = text.lines().nth(line).unwrap_or_default().trim();
    let what = if node.is_missing() { format!("missing `{}`", node.kind_name()) } else { "invalid syntax".to_string() };
    Err(ExtractError::Syntax(format!("line {}: {what}: `{}`", line + 1, source)))
}

fn first_error(node: Node) -> Option<Node> {
    if node.is_error() || node.is_missing() {
        return Some(node);
    }
    let mut cursor = node.walk();
    let children: Vec<Node> = node.children(&mut cursor).collect();
    children.into_iter().filter(|c| c.has_error()).find_map(first_error)
}

/// A top-level definition or import of a file.
struct Item {
    name: Option<String>,
    range: TextRange,
    import: bool,
}

fn items(text: &str) -> (Vec<Item>, bool) {
    let tree = crate::model::parse(text, None);
    let root = tree.root_node();
    let mut out = Vec::new();
    let mut cursor = root.walk();
    for node in root.children(&mut cursor) {
        let range = TextRange::new(node.start_byte(), node.end_byte());
        let def = if node.kind_name() == "decorated_definition" {
            node.child_by_field_name("definition")
        } else {
            Some(node)
        };
        match def.map(|d| (d.kind_name(), d)) {
            Some(("function_definition" | "class_definition", d)) => {
                let name = d.child_by_field_name("name").map(|n| text[n.byte_range()].to_string());
                out.push(Item { name, range, import: false });
            }
            Some(("import_statement" | "import_from_statement", _)) => {
                out.push(Item { name: None, range, import: true })
            }
            _ => {}
        }
    }
    (out, root.has_error())
}

/// Replaces each definition of `snippet` in `original` by name; definitions
/// the file lacks go before the first one replaced, imports it lacks after its imports.
pub(crate) fn splice(snippet: &str, original: &str) -> Result<String, ExtractError> {
    let (new_items, broken) = items(snippet);
    if broken {
        check_syntax(snippet)?;
    }
    let defs: Vec<&Item> = new_items.iter().filter(|i| i.name.is_some()).collect();
    if defs.is_empty() {
        return Err(ExtractError::Splice(
            "the code block is neither a whole file (with `class ModelNew` and its imports) nor top-level functions or classes".into(),
        ));
    }
    let (old_items, _) = items(original);
    let mut edits = Vec::new();
    let mut added = String::new();
    let mut first_replaced: Option<usize> = None;
    for def in &defs {
        let code = &snippet[def.range.start..def.range.end];
        match old_items.iter().find(|o| o.name == def.name) {
            Some(old) => {
                first_replaced = Some(first_replaced.map_or(old.range.start, |f| f.min(old.range.start)));
                edits.push(Edit { range: old.range, new_text: code.to_string() });
            }
            None => {
                added.push_str(code);
                added.push_str("\n\n\n");
            }
        }
    }
    if !added.is_empty() {
        let at = first_replaced.unwrap_or(original.len());
        let text = if at == original.len() { format!("\n\n{}", added.trim_end()) + "\n" } else { added };
        edits.push(Edit { range: TextRange::new(at, at), new_text: text });
    }
    let missing_imports: Vec<&str> = new_items
        .iter()
        .filter(|i| i.import)
        .map(|i| snippet[i.range.start..i.range.end].trim())
        .filter(|imp| !original.lines().any(|l| l.trim() == *imp))
        .collect();
    if !missing_imports.is_empty() {
        let after = old_items.iter().filter(|i| i.import).map(|i| i.range.end).max();
        let (at, text) = match after {
            Some(end) => (end, format!("\n{}", missing_imports.join("\n"))),
            None => (0, format!("{}\n", missing_imports.join("\n"))),
        };
        edits.push(Edit { range: TextRange::new(at, at), new_text: text });
    }
    apply_edits(original, &edits).map_err(ExtractError::Splice)
}

/// `line` (1-based) of `text`, for error context.
pub(crate) fn source_line(text: &str, line: u32) -> Option<String> {
    let index = LineIndex::new(text);
    let l = (line as usize).checked_sub(1)?;
    if l >= index.line_count() {
        return None;
    }
    text.lines().nth(l).map(|s| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_directives_survive_and_the_answers_own_are_dropped() {
        let original = "# kernel-lsp: reference = ref_gru.py\nimport torch\n# kernel-lsp: ignore[KL005]\nx = 1\n";
        let answer = "# kernel-lsp: reference = reference_gru.py\nimport torch\n# kernel-lsp: ignore\nx = 2\n";
        let kept = keep_directives(original, answer);
        assert_eq!(kept, "# kernel-lsp: reference = ref_gru.py\nimport torch\n# kernel-lsp: ignore[KL005]\nx = 2\n");
        assert_eq!(keep_directives(original, original), original, "an answer that kept them is unchanged");
        assert_eq!(keep_directives("x = 1\n", "y = 2\n"), "y = 2\n");
    }

    const FILE: &str = r#"import triton
import triton.language as tl


@triton.jit
def k(x_ptr):
    pass


class ModelNew:
    pass
"#;

    #[test]
    fn whole_file_block_is_taken_as_is() {
        let answer = "Here:\n```python\nimport torch\nclass ModelNew:\n    x = 1\n```\n";
        assert_eq!(candidate_file(answer, FILE).unwrap(), "import torch\nclass ModelNew:\n    x = 1\n");
    }

    #[test]
    fn a_function_is_spliced_by_name_with_its_decorator() {
        let answer =
            "```python\nimport math\n\n@triton.jit\ndef k(x_ptr):\n    return 1\n\ndef helper():\n    pass\n```";
        let out = candidate_file(answer, FILE).unwrap();
        assert_eq!(
            out,
            "import triton\nimport triton.language as tl\nimport math\n\n\ndef helper():\n    pass\n\n\n@triton.jit\ndef k(x_ptr):\n    return 1\n\n\nclass ModelNew:\n    pass\n"
        );
    }

    #[test]
    fn no_block_and_syntax_errors_are_reported() {
        assert_eq!(candidate_file("just prose", FILE), Err(ExtractError::NoCode));
        let broken = "```python\nimport torch\nclass ModelNew:\n    def f(:\n```";
        assert!(matches!(candidate_file(broken, FILE), Err(ExtractError::Syntax(m)) if m.starts_with("line ")));
    }
}
