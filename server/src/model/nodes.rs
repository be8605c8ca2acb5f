//! Small questions about tree-sitter nodes that the whole model (and the
//! rules) asks: a node's byte range, the value of an integer literal, the
//! arguments of a call, a visit of every descendant without recursion.

use tree_sitter::Node;

use crate::model::NodeKind;
use crate::text::TextRange;

/// Deeper syntax than this is not descended into: it only occurs in generated
/// or hostile input, and the walk must not overflow the stack.
pub(super) const MAX_DEPTH: usize = 200;

pub(crate) fn range_of(node: Node) -> TextRange {
    TextRange::new(node.start_byte(), node.end_byte())
}

pub(crate) fn parse_int(t: &str) -> Option<i64> {
    let t = t.replace('_', "");
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i64::from_str_radix(h, 16).ok();
    }
    t.parse().ok()
}

/// Calls `f` on `node` and every descendant, without recursion.
pub(crate) fn visit_nodes<'t>(node: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    visit_nodes_where(node, |_| true, &mut |n| {
        f(n);
        false
    });
}

/// Whether `node` or a descendant satisfies `pred` (the walk stops at the first).
pub(crate) fn any_node<'t>(node: Node<'t>, mut pred: impl FnMut(Node<'t>) -> bool) -> bool {
    visit_nodes_where(node, |_| true, &mut pred)
}

/// [`visit_nodes`] over the statements under `node` and the assignments they
/// make (`a = b = c` visits both), without entering expressions: a walk for
/// what only statements hold, which skips most of a function's nodes.
pub(crate) fn visit_statements<'t>(node: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    let holds_statements = |n: Node| {
        let k = n.kind_name();
        k == "block"
            || k == "module"
            || k == "expression_statement"
            || k == "assignment"
            || k == "decorated_definition"
            || k.ends_with("_statement")
            || k.ends_with("_definition")
            || k.ends_with("_clause")
            // what a syntax error left unparsed may hold statements too
            || n.is_error()
    };
    visit_nodes_where(node, holds_statements, &mut |n| {
        f(n);
        false
    });
}

/// Calls `f` on `node` and on the descendants reached through nodes that
/// `enter` accepts (their children are visited, those of the others are
/// not), until `f` returns true; returns whether it did.
fn visit_nodes_where<'t>(
    node: Node<'t>,
    enter: impl Fn(Node<'t>) -> bool,
    f: &mut impl FnMut(Node<'t>) -> bool,
) -> bool {
    let mut cursor = node.walk();
    let mut depth = 0usize;
    loop {
        let n = cursor.node();
        if f(n) {
            return true;
        }
        if depth < MAX_DEPTH * 4 && enter(n) && cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if depth == 0 {
                return false;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            cursor.goto_parent();
            depth -= 1;
        }
    }
}

/// Calls `f` on each child of `node` in order (only the named ones with
/// `named`), moving `cursor` there: one cursor serves a whole traversal,
/// where `node.walk()` for every node visited allocates a cursor each time.
pub(crate) fn for_each_child<'t>(
    cursor: &mut tree_sitter::TreeCursor<'t>,
    node: Node<'t>,
    named: bool,
    mut f: impl FnMut(Node<'t>),
) {
    cursor.reset(node);
    if !cursor.goto_first_child() {
        return;
    }
    loop {
        let child = cursor.node();
        if !named || child.is_named() {
            f(child);
        }
        if !cursor.goto_next_sibling() {
            return;
        }
    }
}

/// Positional arguments and keyword arguments of a call.
pub(crate) fn call_arguments<'a>(call: Node<'a>, src: &str) -> (Vec<Node<'a>>, Vec<(String, Node<'a>)>) {
    let mut args = Vec::new();
    let mut kwargs = Vec::new();
    if let Some(list) = field!(call, "arguments") {
        let mut c = list.walk();
        for a in list.named_children(&mut c) {
            match a.kind_name() {
                "keyword_argument" => {
                    if let (Some(n), Some(v)) = (field!(a, "name"), field!(a, "value")) {
                        kwargs.push((src[n.byte_range()].to_string(), v));
                    }
                }
                // `**config` names no parameter by position.
                "comment" | "dictionary_splat" => {}
                _ => args.push(a),
            }
        }
    }
    (args, kwargs)
}
