//! Line diffs of a rewrite, with `similar`: the unified diff the CLI and the
//! editors show, and the changed line ranges (hunks) the editor's edit is made of.

use similar::{DiffOp, TextDiff};

/// A unified diff with three lines of context; empty when the texts are equal.
pub fn unified(old: &str, new: &str, old_name: &str, new_name: &str) -> String {
    if old == new {
        return String::new();
    }
    TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(old_name, new_name).to_string()
}

/// One changed region: old lines `old_lines` (0-based, end exclusive) become `new_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_lines: std::ops::Range<usize>,
    pub new_text: String,
}

/// The changed regions of `old` -> `new`, in order, adjacent changes merged.
pub(crate) fn hunks(old: &str, new: &str) -> Vec<Hunk> {
    let diff = TextDiff::from_lines(old, new);
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut out: Vec<Hunk> = Vec::new();
    for op in diff.ops() {
        let (old_range, new_range) = match *op {
            DiffOp::Equal { .. } => continue,
            DiffOp::Delete { old_index, old_len, new_index } => (old_index..old_index + old_len, new_index..new_index),
            DiffOp::Insert { old_index, new_index, new_len } => (old_index..old_index, new_index..new_index + new_len),
            DiffOp::Replace { old_index, old_len, new_index, new_len } => {
                (old_index..old_index + old_len, new_index..new_index + new_len)
            }
        };
        let text: String = new_lines[new_range].concat();
        match out.last_mut() {
            Some(last) if last.old_lines.end == old_range.start => {
                last.old_lines.end = old_range.end;
                last.new_text.push_str(&text);
            }
            _ => out.push(Hunk { old_lines: old_range, new_text: text }),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_changed_line_gets_one_hunk_with_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\n";
        assert_eq!(
            unified(old, new, "a/x.py", "b/x.py"),
            "--- a/x.py\n+++ b/x.py\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn equal_texts_have_no_diff() {
        assert_eq!(unified("x\n", "x\n", "a", "b"), "");
        assert!(hunks("x\n", "x\n").is_empty());
    }

    #[test]
    fn insertion_at_start_of_empty() {
        assert_eq!(unified("", "x\n", "a", "b"), "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n");
    }

    #[test]
    fn hunks_applied_in_reverse_give_the_new_text() {
        let old = "import torch\nx = 1\ny = 2\nz = 3\nw = 4\n";
        let new = "import torch\nimport triton\nx = 1\ny = 20\nz = 3\n";
        let hs = hunks(old, new);
        assert_eq!(hs.len(), 3, "{hs:?}");
        let mut lines: Vec<String> = old.split_inclusive('\n').map(str::to_string).collect();
        for h in hs.iter().rev() {
            lines.splice(h.old_lines.clone(), [h.new_text.clone()]);
        }
        assert_eq!(lines.concat(), new);
    }
}
