//! KL900 syntax-error: where tree-sitter could not parse the file.
//!
//! tree-sitter recovers from errors: it wraps what it cannot place in an
//! `ERROR` node and inserts zero-width `MISSING` nodes for tokens it had to
//! assume, and the rest of the tree is ordinary, so the rules still analyse
//! everything that parses. This module only says where the parser gave up,
//! so that a file that does not parse is never reported as clean.
//!
//! Cheap enough for every keystroke: a subtree without errors is never
//! entered (`has_error` is a flag on the node), so a file that parses costs
//! one check of the root.
//!
//! One class of gaps in tree-sitter-python 0.25 is not reported: an
//! unpacking star whose operand the grammar does not take in that place (a
//! list or parenthesized display, a unary operator: `return dx, *[None] * 10`,
//! `return a, *([None] * 5)`, `x = a, *-b`) is valid Python (3.8+ for
//! `return`/`yield`) that the grammar cannot place. An `ERROR` whose lines
//! parse once every unpacking star is blanked out (a same-length change; the
//! operand itself stays) is that gap, not a mistake in the file. The parser still drops the code it could not place from the tree,
//! so the rules do not see it.

use tree_sitter::Node;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::Forest;
use crate::model::NodeKind;
use crate::text::TextRange;

pub const CODE: &str = "KL900";
pub const NAME: &str = "syntax-error";

/// At most this many syntax errors per file: after the first few, error
/// recovery mostly reports its own confusion.
const MAX_ERRORS: usize = 20;

/// One KL900 diagnostic per outermost `ERROR` node and per `MISSING` node, in source order.
pub fn errors(text: &str, tree: &Forest) -> Vec<Diagnostic> {
    errors_among(text, tree, &tree.top_level())
}

/// [`errors`], given the root's children (`top`, as the checker has them already).
pub(crate) fn errors_among(text: &str, tree: &Forest, top: &[Node]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    if !tree.has_error() {
        return out;
    }
    let mut top = top.iter().peekable();
    for root in tree.roots() {
        let end = root.end_byte();
        if root.is_missing() || root.is_error() {
            collect(text, root, &mut out);
            while top.next_if(|c| c.start_byte() < end).is_some() {}
            continue;
        }
        while let Some(child) = top.next_if(|c| c.start_byte() < end || c.end_byte() <= end) {
            if child.has_error() {
                collect(text, *child, &mut out);
            }
        }
    }
    out
}

fn collect(text: &str, node: Node, out: &mut Vec<Diagnostic>) {
    if out.len() >= MAX_ERRORS {
        return;
    }
    if node.is_missing() {
        out.push(diagnostic(node.start_byte(), node.start_byte(), missing_message(node)));
        return;
    }
    if node.is_error() {
        if let Some(d) = open_bracket(text, node) {
            out.push(d);
        } else if !is_grammar_gap(text, node) {
            out.push(error_diagnostic(text, node));
        }
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        if child.has_error() {
            collect(text, child, out);
        }
    }
}

fn diagnostic(start: usize, end: usize, message: String) -> Diagnostic {
    Diagnostic {
        code: CODE.into(),
        name: NAME.into(),
        severity: Severity::Error,
        range: TextRange::new(start, end),
        message: message.into(),
        related: Vec::new(),
        fix: None,
    }
}

fn missing_message(node: Node) -> String {
    if node.is_named() {
        format!("syntax error: missing {}", node.kind_name().replace('_', " "))
    } else {
        format!("syntax error: missing `{}`", node.kind_name())
    }
}

/// The `ERROR` of a statement masked because it is cut off (`model::recovery`):
/// reported where Python reports it: at the bracket left open, at the
/// opening quote of a string left open, at the end of a header without its `:`.
fn open_bracket(text: &str, node: Node) -> Option<Diagnostic> {
    use crate::model::recovery::Cut;
    let line_start = text[..node.start_byte()].rfind('\n').map_or(0, |i| i + 1);
    if !text[line_start..node.start_byte()].trim().is_empty() {
        return None;
    }
    let gap = crate::model::recovery::gap_at(text, line_start)?;
    let at = gap.opener;
    Some(match gap.why {
        Cut::Bracket => diagnostic(at, at + 1, format!("syntax error: `{}` is never closed", &text[at..at + 1])),
        Cut::String => diagnostic(at, at + 1, "syntax error: the string is never closed".to_string()),
        Cut::Colon => diagnostic(at, at, "syntax error: expected `:`".to_string()),
        Cut::Block => diagnostic(at, at + 1, "syntax error: expected an indented block after `:`".to_string()),
    })
}

/// What an `ERROR` node most likely means, placed where a reader would look:
/// a bracket that is never closed (at the bracket, as Python says it), a
/// statement cut off by the end of the file (at its last token), else the
/// first token that could not be placed.
fn error_diagnostic(text: &str, node: Node) -> Diagnostic {
    let leaves = leaves(node);
    let mut open: Vec<Node> = Vec::new();
    for leaf in &leaves {
        match leaf.kind_name() {
            "(" | "[" | "{" => open.push(*leaf),
            ")" | "]" | "}" => {
                open.pop();
            }
            _ => {}
        }
    }
    if let Some(bracket) = open.last() {
        let message = format!("syntax error: `{}` is never closed", bracket.kind_name());
        return diagnostic(bracket.start_byte(), bracket.end_byte(), message);
    }
    let first = leaves.first().copied().unwrap_or(node);
    let last = leaves.last().copied().unwrap_or(node);
    if text[node.end_byte()..].trim().is_empty() && last.end_byte() > last.start_byte() {
        let message =
            format!("syntax error: the file ends in the middle of a statement (after `{}`)", token(text, last));
        return diagnostic(last.start_byte(), last.end_byte(), message);
    }
    let message = match token(text, first) {
        t if t.is_empty() => "syntax error: the parser cannot read the code here".to_string(),
        t => format!("syntax error: unexpected `{t}`"),
    };
    // The whole ERROR node can run over many lines; the editor needs where it starts.
    let start = first.start_byte();
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    diagnostic(start, first.end_byte().clamp(start, line_end), message)
}

/// The tokens under `node`, in order.
fn leaves(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    let mut cursor = node.walk();
    'walk: loop {
        let n = cursor.node();
        if n.child_count() == 0 {
            out.push(n);
        } else if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() || cursor.node() == node {
                break 'walk;
            }
        }
    }
    out
}

/// Whether `node` (an `ERROR`) covers only code that is valid Python and that
/// tree-sitter-python cannot parse: a `*` that unpacks an operand the grammar
/// does not accept there (a list or parenthesized display, `-x`) in an
/// expression list (`return dx, *[None] * 10`, `return a, *((None,) * 5)`,
/// `x = a, *-b`). Its whole lines, with every unpacking star (one in prefix
/// position: after a comma, an opening bracket, `=`, `return`, `yield`...)
/// blanked and the first line's indentation taken off every line that has
/// it, must parse without an error. Blanking such a star never changes how
/// the rest of the line groups, so an error elsewhere on the lines remains.
fn is_grammar_gap(text: &str, node: Node) -> bool {
    let start = text[..node.start_byte()].rfind('\n').map_or(0, |i| i + 1);
    let end = text[node.end_byte()..].find('\n').map_or(text.len(), |i| node.end_byte() + i);
    let Some(region) = text.get(start..end) else { return false };
    let bytes = region.as_bytes();
    let mut patched = bytes.to_vec();
    let mut blanked = false;
    for (i, &b) in bytes.iter().enumerate() {
        if b != b'*' || bytes.get(i + 1) == Some(&b'*') || (i > 0 && bytes[i - 1] == b'*') {
            continue;
        }
        let next = bytes[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
        let before = region[..i].trim_end();
        let after_keyword = |kw: &str| {
            before.ends_with(kw)
                && !before[..before.len() - kw.len()].ends_with(|c: char| c.is_alphanumeric() || c == '_')
        };
        // In prefix position a `*` unpacks (it cannot multiply): after a
        // separator, an opening bracket, `=` or a keyword that starts an
        // expression list, and followed by an operand.
        let opens_item = before.is_empty()
            || before.ends_with([',', '(', '[', '{', '='])
            || ["return", "yield", "in", "else", "await"].iter().any(|kw| after_keyword(kw));
        let operand = next.is_some_and(|c| !b"),]}=*:".contains(c));
        if operand && opens_item {
            patched[i] = b' ';
            blanked = true;
        }
    }
    if !blanked {
        return false;
    }
    let Ok(patched) = String::from_utf8(patched) else { return false };
    let indent = &patched[..patched.len() - patched.trim_start_matches([' ', '\t']).len()];
    let dedented: String =
        patched.split_inclusive('\n').map(|line| line.strip_prefix(indent).unwrap_or(line)).collect();
    !crate::model::parse(&dedented, None).root_node().has_error()
}

/// A token's text, its first line, at most 40 characters.
fn token(text: &str, node: Node) -> String {
    let t = text.get(node.start_byte()..node.end_byte()).unwrap_or_default();
    t.lines().next().unwrap_or_default().trim().chars().take(40).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::LineIndex;

    /// `line:col CODE message` for each syntax error (1-based, columns in characters).
    fn render(text: &str) -> Vec<String> {
        let tree = crate::model::parse_forest(text);
        let index = LineIndex::new(text);
        errors(text, &tree)
            .iter()
            .map(|d| {
                let (l, c) = index.position(text, d.range.start, crate::text::ColumnUnit::Char);
                format!("{}:{} {} {}", l + 1, c + 1, d.code, d.message)
            })
            .collect()
    }

    #[test]
    fn a_list_unpacked_into_an_expression_list_is_valid_python() {
        // tree-sitter-python 0.25 cannot parse these; Python can
        for text in [
            "def backward(ctx, dy):\n    dx = dy * 2\n    return dx, *[None] * 10\n",
            "def f(a, b):\n    x = a, *[b]\n    y = 2\n    return x, y\n",
            "def g(a):\n    yield a, *[a, a]\n",
            "x = 1,  *  [2, 3]\n",
            // the class, not the instance: any operand after an unpacking star
            "def f(a):\n    return a, *([None] * 5)\n",
            "def f(a):\n    return a, *((None,) * 20), 3\n",
            "def f(a):\n    return *((None,) * 2), a\n",
            "def f(a):\n    x = a, *(a)\n    return x\n",
            "def f(b):\n    x = 1, *-b\n",
            "def f(g):\n    return g(*((None,) * 20)), *(1, 2)\n",
        ] {
            assert!(render(text).is_empty(), "{text:?}: {:?}", render(text));
        }
    }

    #[test]
    fn a_real_error_beside_an_unpacked_list_is_still_reported() {
        let text = "def f(dx):\n    return dx, *[None] * 10 +\n";
        assert_eq!(render(text).len(), 1, "{:?}", render(text));
        let text = "def f(dx):\n    return dx, *[None]\n    y = (\n";
        assert_eq!(render(text).len(), 1, "{:?}", render(text));
        // a star that is not an unpacking after a comma is left alone: `a *[1]` multiplies
        assert_eq!(render("def f(a):\n    return a *[1] +\n").len(), 1);
        // an unpacking star beside a real error: the error stays
        assert_eq!(render("def f(a):\n    return a, *((None,) * 2) +\n").len(), 1);
        assert_eq!(render("def f(a):\n    return a, *(None,), )\n").len(), 1);
        // a bare star with no operand is not an unpacking to blank
        assert_eq!(render("def f(a):\n    return a, *\n").len(), 1);
    }

    #[test]
    fn a_file_that_parses_has_none() {
        assert!(render("import triton\n\ndef k(x_ptr, N):\n    pass\n").is_empty());
    }

    #[test]
    fn an_unclosed_bracket_is_reported_at_the_bracket() {
        assert_eq!(render("def k(x_ptr, N"), ["1:6 KL900 syntax error: `(` is never closed"]);
        assert_eq!(render("x = (1, 2\ny = 3\n"), ["1:5 KL900 syntax error: `(` is never closed"]);
    }

    /// A bracket left open while the user types: one KL900 at the bracket,
    /// and the kernels after it are still read (the rest of the file is not
    /// swallowed by the parser's recovery, see `model::recovery`).
    #[test]
    fn a_bracket_left_open_mid_file_leaves_the_rest_analysed() {
        let kernel = "@triton.jit\ndef k(x_ptr):\n    x = tl.tanh(tl.load(x_ptr))\n";
        let head = "import triton\nimport triton.language as tl\n\n";
        for (typed, at) in [
            ("@triton.autotune(configs=[\n", "4:26"),
            ("y = torch.tanh(h * 0.2\n\n", "4:15"),
            ("def run(x):\n    out = f(x,\n    return out\n\n", "5:12"),
        ] {
            let text = format!("{head}{typed}{kernel}");
            let bracket = if typed.contains("[\n") { "[" } else { "(" };
            assert_eq!(render(&text), [format!("{at} KL900 syntax error: `{bracket}` is never closed")], "{text}");
            let result = crate::checker::check_text(&text, &crate::config::Settings::default());
            let codes: Vec<&str> = result.diagnostics.iter().map(|d| &*d.code).collect();
            assert_eq!(codes, ["KL900", "KL005"], "{text}");
            assert_eq!(result.kernels.len(), 1, "{text}");
        }
    }

    #[test]
    fn a_token_the_parser_had_to_assume_is_missing() {
        assert_eq!(render("def f(:\n"), ["1:7 KL900 syntax error: missing `)`"]);
        // A bracket left open before a statement keyword is reported at the bracket, as Python does.
        assert_eq!(render("def f(:\n    pass\n"), ["1:6 KL900 syntax error: `(` is never closed"]);
    }

    #[test]
    fn a_statement_cut_off_by_the_end_of_the_file() {
        assert_eq!(
            render("x = 1 +\n"),
            ["1:7 KL900 syntax error: the file ends in the middle of a statement (after `+`)"]
        );
    }

    #[test]
    fn an_error_inside_a_kernel_is_placed_there_and_the_rest_is_still_analysed() {
        let text = r#"import triton
import triton.language as tl

@triton.jit
def k(x_ptr, N):
    x = tl.load(x_ptr +)

@triton.jit
def act(x_ptr):
    x = tl.tanh(tl.load(x_ptr))
"#;
        assert_eq!(render(text), ["6:23 KL900 syntax error: unexpected `+`"]);
        let result = crate::checker::check_text(text, &crate::config::Settings::default());
        let codes: Vec<&str> = result.diagnostics.iter().map(|d| &*d.code).collect();
        assert_eq!(codes, ["KL900", "KL005"]);
        assert_eq!(result.kernels.len(), 2);
    }

    #[test]
    fn select_and_suppression_comments_do_not_hide_it() {
        let text = "x = (1,  # kernel-lsp: ignore\n";
        let settings = crate::config::Settings { select: vec!["KL001".to_string()], ..Default::default() };
        let result = crate::checker::check_text(text, &settings);
        assert_eq!(result.diagnostics.len(), 1);
        assert_eq!(result.diagnostics[0].code, "KL900");
    }

    #[test]
    fn an_unparsable_character_is_named() {
        assert_eq!(render("\u{1F600} = 3\n"), ["1:1 KL900 syntax error: unexpected `\u{1F600}`"]);
    }
}
