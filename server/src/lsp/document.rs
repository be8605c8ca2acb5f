//! One open document: its text (a rope, for cheap edits), the tree-sitter
//! tree kept in step with every edit, and the last analysis.
//!
//! Every change goes through [`Document::apply_changes`]: each LSP change is
//! applied to the rope, turned into a tree-sitter `InputEdit` and applied to
//! the old tree, and the file is reparsed once with that tree, so tree-sitter
//! reuses what the edits did not touch. Positions are clamped, never trusted:
//! a client with a bad range gets a warning in the log, not a dead server.

use std::sync::Arc;

use ropey::Rope;
use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};
use tree_sitter::{InputEdit, Point, Tree};

use crate::analysis::{self, CheckResult};
use crate::config::Settings;
use crate::text::{LineIndex, TextRange};

use super::convert::Encoding;

pub struct Document {
    pub version: i32,
    rope: Rope,
    /// The rope as one string, for the analysis and for offset conversions.
    text: String,
    line_index: LineIndex,
    /// Kept only for recently edited documents (see `State::touch`): a tree of
    /// a 5,000-line file is several MB, and incremental reparsing only pays
    /// off for the file being typed in. Without one, the next change parses afresh.
    tree: Option<Tree>,
    pub settings: Arc<Settings>,
    /// The analysis of version `analyzed`; after an edit it lags until the
    /// background analysis of the new version lands.
    pub result: CheckResult,
    pub analyzed: i32,
}

/// What the analysis of one version needs, taken under the state lock and
/// analysed outside it.
pub struct AnalysisJob {
    pub version: i32,
    pub text: String,
    pub tree: Tree,
    pub settings: Arc<Settings>,
}

impl AnalysisJob {
    pub fn run(&self) -> CheckResult {
        analysis::check(&self.text, &self.tree, &self.settings)
    }
}

impl Document {
    pub fn new(text: &str, version: i32, settings: Arc<Settings>) -> Self {
        let tree = analysis::parse(text, None);
        let result = analysis::check(text, &tree, &settings);
        Document {
            version,
            rope: Rope::from_str(text),
            text: text.to_string(),
            line_index: LineIndex::new(text),
            tree: Some(tree),
            settings,
            result,
            analyzed: version,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn line_index(&self) -> &LineIndex {
        &self.line_index
    }

    /// Applies the changes of one `didChange` in order and reparses
    /// incrementally; the analysis runs separately (`analysis_job`, then
    /// `install`). Returns warnings about ranges it had to clamp.
    pub fn apply_changes(
        &mut self,
        version: i32,
        changes: &[TextDocumentContentChangeEvent],
        encoding: Encoding,
    ) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut full_reparse = false;
        for change in changes {
            match change.range {
                None => {
                    self.rope = Rope::from_str(&change.text);
                    full_reparse = true;
                }
                Some(range) => {
                    if let Some(w) = self.apply_ranged(range, &change.text, encoding) {
                        warnings.push(w);
                    }
                }
            }
        }
        self.version = version;
        self.text = self.rope.to_string();
        self.line_index = LineIndex::new(&self.text);
        let old = if full_reparse { None } else { self.tree.as_ref() };
        let tree = analysis::parse(&self.text, old);
        self.tree = Some(tree);
        warnings
    }

    /// The analysis of the current version, to run off the state lock.
    pub fn analysis_job(&self) -> AnalysisJob {
        AnalysisJob {
            version: self.version,
            text: self.text.clone(),
            tree: self.tree.clone().unwrap_or_else(|| analysis::parse(&self.text, None)),
            settings: self.settings.clone(),
        }
    }

    /// Installs the result of a job if the document is still at its version.
    pub fn install(&mut self, version: i32, result: CheckResult) -> bool {
        if version != self.version {
            return false;
        }
        self.result = result;
        self.analyzed = version;
        true
    }

    /// Whether `result` describes the current text.
    pub fn is_analyzed(&self) -> bool {
        self.analyzed == self.version
    }

    /// Re-runs the analysis on the current text (after a settings change).
    pub fn reanalyze(&mut self) {
        self.analyzed = self.version;
        self.result = match &self.tree {
            Some(tree) => analysis::check(&self.text, tree, &self.settings),
            None => analysis::check(&self.text, &analysis::parse(&self.text, None), &self.settings),
        };
    }

    /// Frees the tree of a document nobody is typing in.
    pub fn drop_tree(&mut self) {
        self.tree = None;
    }

    fn apply_ranged(&mut self, range: Range, new_text: &str, encoding: Encoding) -> Option<String> {
        let (mut start, clamped_start) = char_of(&self.rope, range.start, encoding);
        let (mut end, clamped_end) = char_of(&self.rope, range.end, encoding);
        let mut warning =
            (clamped_start || clamped_end).then(|| format!("clamped change range {range:?} to the document"));
        if start > end {
            std::mem::swap(&mut start, &mut end);
            warning = Some(format!("change range {range:?} ends before it starts; applied it reversed"));
        }
        let start_byte = self.rope.char_to_byte(start);
        let old_end_byte = self.rope.char_to_byte(end);
        let start_position = point_of(&self.rope, start_byte);
        let old_end_position = point_of(&self.rope, old_end_byte);
        self.rope.remove(start..end);
        self.rope.insert(start, new_text);
        let new_end_byte = start_byte + new_text.len();
        let new_end_position = point_of(&self.rope, new_end_byte);
        let Some(tree) = self.tree.as_mut() else {
            return warning;
        };
        tree.edit(&InputEdit {
            start_byte,
            old_end_byte,
            new_end_byte,
            start_position,
            old_end_position,
            new_end_position,
        });
        warning
    }

    /// Byte offset of an LSP position in the current text (clamped).
    pub fn offset(&self, position: Position, encoding: Encoding) -> usize {
        self.line_index.offset(&self.text, position.line as usize, position.character as usize, encoding.unit())
    }

    pub fn range(&self, range: TextRange, encoding: Encoding) -> Range {
        super::convert::range(&self.text, &self.line_index, range, encoding)
    }

    /// The text of the 0-based line `line`, without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_index.line_start(line);
        let rest = &self.text[start.min(self.text.len())..];
        rest.split('\n').next().unwrap_or("")
    }
}

/// Char index of an LSP position in the rope, and whether it had to be clamped.
/// Lines count `\n` only (ropey is built without unicode/CR line breaks), as
/// the analysis does.
fn char_of(rope: &Rope, pos: Position, encoding: Encoding) -> (usize, bool) {
    let line = pos.line as usize;
    if line >= rope.len_lines() {
        return (rope.len_chars(), true);
    }
    let line_start = rope.line_to_char(line);
    let col = pos.character as usize;
    let mut units = 0usize;
    let mut idx = 0usize;
    for ch in rope.line(line).chars() {
        if units >= col || ch == '\n' {
            break;
        }
        units += encoding.width(ch);
        idx += 1;
    }
    (line_start + idx, units < col)
}

fn point_of(rope: &Rope, byte: usize) -> Point {
    let row = rope.byte_to_line(byte);
    Point { row, column: byte - rope.line_to_byte(row) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = r#"import triton
import triton.language as tl

# ümlauts and 𝄞 so that UTF-16 and UTF-8 columns differ
@triton.jit
def act(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)  # é
    tl.store(y_ptr + offs, tl.tanh(x), mask=offs < n)


@triton.jit
def bad(x_ptr, H):
    offs = tl.arange(0, H)
    tl.store(x_ptr + offs, tl.sigmoid(offs))


def launch(x, y):
    for t in range(16):
        act[(4,)](x, y, x.numel(), BLOCK=128)
"#;

    const SNIPPETS: &[&str] = &[
        "x",
        " ",
        "\n",
        "tl.tanh(",
        ")",
        "(",
        "é",
        "𝄞",
        "BLOCK",
        "tl.arange(0, H)",
        ":",
        "    ",
        "def ",
        "\n    ",
        "tl.",
        "@triton.jit\n",
        "#",
        "ü",
        "\"",
        "for t in range(8):\n        ",
    ];

    /// xorshift64*: seeded, reproducible, no extra crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
    }

    fn position_of(text: &str, index: &LineIndex, offset: usize, encoding: Encoding) -> Position {
        let (line, col) = index.position(text, offset, encoding.unit());
        Position::new(line as u32, col as u32)
    }

    fn char_boundary(text: &str, mut offset: usize) -> usize {
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        offset
    }

    /// A random edit sequence through the incremental path ends with the text,
    /// tree and diagnostics that a fresh full analysis of the same text gives.
    #[test]
    fn random_edits_match_a_fresh_analysis() {
        let settings = Arc::new(Settings::default());
        for seed in 1..=40u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let encoding = if seed % 2 == 0 { Encoding::Utf8 } else { Encoding::Utf16 };
            let mut doc = Document::new(FIXTURE, 0, settings.clone());
            let mut expected = FIXTURE.to_string();
            for version in 1..=30 {
                let batch = 1 + rng.below(3);
                let mut changes = Vec::new();
                for _ in 0..batch {
                    let index = LineIndex::new(&expected);
                    let a = char_boundary(&expected, rng.below(expected.len() + 1));
                    let b = if rng.below(3) == 0 {
                        a
                    } else {
                        char_boundary(&expected, (a + rng.below(12)).min(expected.len()))
                    };
                    let insert = if rng.below(4) == 0 { "" } else { SNIPPETS[rng.below(SNIPPETS.len())] };
                    changes.push(TextDocumentContentChangeEvent {
                        range: Some(Range::new(
                            position_of(&expected, &index, a, encoding),
                            position_of(&expected, &index, b, encoding),
                        )),
                        range_length: None,
                        text: insert.to_string(),
                    });
                    expected.replace_range(a..b, insert);
                }
                let warnings = doc.apply_changes(version, &changes, encoding);
                doc.reanalyze();
                assert!(warnings.is_empty(), "seed {seed}: {warnings:?}");
                assert_eq!(doc.text(), expected, "seed {seed} version {version}");
            }
            let fresh_tree = analysis::parse(&expected, None);
            assert_eq!(
                doc.tree.as_ref().expect("tree kept").root_node().to_sexp(),
                fresh_tree.root_node().to_sexp(),
                "seed {seed}"
            );
            let fresh = analysis::check(&expected, &fresh_tree, &settings);
            assert_eq!(doc.result, fresh, "seed {seed}");
        }
    }

    #[test]
    fn bad_ranges_are_clamped_not_fatal() {
        let mut doc = Document::new("a = 1\nb = 2\n", 0, Arc::new(Settings::default()));
        let change = |sl, sc, el, ec, text: &str| TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(sl, sc), Position::new(el, ec))),
            range_length: None,
            text: text.to_string(),
        };
        let warnings = doc.apply_changes(1, &[change(0, 99, 0, 99, "!")], Encoding::Utf16);
        assert_eq!(doc.text(), "a = 1!\nb = 2\n");
        assert_eq!(warnings.len(), 1);
        doc.apply_changes(2, &[change(50, 0, 60, 0, "c = 3\n")], Encoding::Utf16);
        assert_eq!(doc.text(), "a = 1!\nb = 2\nc = 3\n");
        doc.apply_changes(3, &[change(1, 3, 0, 0, "")], Encoding::Utf16);
        assert_eq!(doc.text(), " 2\nc = 3\n");
    }

    #[test]
    fn utf16_and_utf8_columns_land_on_the_same_character() {
        let text = "s = 'é𝄞x'\n";
        for (encoding, col) in [(Encoding::Utf16, 8), (Encoding::Utf8, 11)] {
            let mut doc = Document::new(text, 0, Arc::new(Settings::default()));
            let change = TextDocumentContentChangeEvent {
                range: Some(Range::new(Position::new(0, col), Position::new(0, col + 1))),
                range_length: None,
                text: "y".to_string(),
            };
            doc.apply_changes(1, &[change], encoding);
            assert_eq!(doc.text(), "s = 'é𝄞y'\n", "{encoding:?}");
        }
    }
}
