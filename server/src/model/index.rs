//! Nodes of the kinds the whole-file hygiene questions look for (imports,
//! calls, assignments, attributes, `try` statements, `__builtins__`), listed
//! once per file in document order by one walk of the tree.
//!
//! Several rules ask "every call in this function", "every import in the
//! file": a tree-cursor walk per question and per function made those rules
//! cost more than the whole file model. A list in document order answers
//! "the nodes of this kind inside this node" with two binary searches.

use tree_sitter::Node;

use super::nodes::{range_of, visit_nodes};
use crate::model::NodeKind;

/// Nodes by kind, each list in document order (a pre-order walk: start bytes never decrease).
#[derive(Debug, Default, PartialEq)]
pub struct NodeIndex<'a> {
    /// `import_statement` and `import_from_statement`.
    pub imports: Vec<Node<'a>>,
    pub calls: Vec<Node<'a>>,
    /// `assignment` and `augmented_assignment`.
    pub assignments: Vec<Node<'a>>,
    pub attributes: Vec<Node<'a>>,
    pub tries: Vec<Node<'a>>,
    /// Identifiers that read `__builtins__`.
    pub builtins: Vec<Node<'a>>,
}

impl<'a> NodeIndex<'a> {
    /// Walks `root` once, exactly as [`visit_nodes`] does.
    pub fn build(root: Node<'a>, src: &str) -> Self {
        Self::build_units(&[root], src)
    }

    /// [`Self::build`] over some top-level statements, in document order.
    pub(super) fn build_units(units: &[Node<'a>], src: &str) -> Self {
        let mut index = NodeIndex::default();
        for unit in units {
            visit_nodes(*unit, &mut |n| index.note(n, src));
        }
        index
    }

    /// The nodes a per-node rule reads of the statement `unit` (see
    /// `rules::Rule::per_node`), in document order: those of the kinds this
    /// index holds inside it (`try` statements aside), and the module names
    /// inside its imports. Read off the lists, not by a walk of the
    /// statement (a 220-line class on every keystroke that changes it).
    pub(crate) fn statement_nodes(&self, unit: Node<'a>) -> Vec<Node<'a>> {
        let mut out: Vec<Node<'a>> = Vec::new();
        for list in [&self.assignments, &self.calls, &self.attributes, &self.builtins] {
            out.extend(inside(list, unit));
        }
        for import in inside(&self.imports, unit) {
            visit_nodes(import, &mut |n| {
                if matches!(n.kind_name(), "dotted_name" | "aliased_import" | "relative_import") {
                    out.push(n);
                }
            });
        }
        // Keys read once per node: each read is a call into tree-sitter.
        out.sort_by_cached_key(|n| (n.start_byte(), std::cmp::Reverse(n.end_byte())));
        out
    }

    /// Lists `n` if it is of a kind the index holds.
    pub(super) fn note(&mut self, n: Node<'a>, src: &str) {
        let ids = Ids::get();
        let k = n.kind_id();
        if k == ids.call {
            self.calls.push(n);
        } else if k == ids.attribute {
            self.attributes.push(n);
        } else if k == ids.identifier {
            if src.get(n.byte_range()) == Some("__builtins__") {
                self.builtins.push(n);
            }
        } else if k == ids.assignment || k == ids.augmented_assignment {
            self.assignments.push(n);
        } else if k == ids.import || k == ids.import_from {
            self.imports.push(n);
        } else if k == ids.try_statement {
            self.tries.push(n);
        }
    }

    /// Puts lists noted out of document order, or with a node noted twice,
    /// as [`Self::build_units`] gives them: by start, an enclosing node
    /// before the nodes inside it (two nodes of one kind never share both
    /// ends), each node once.
    pub(super) fn finish(&mut self) {
        for list in [
            &mut self.imports,
            &mut self.calls,
            &mut self.assignments,
            &mut self.attributes,
            &mut self.tries,
            &mut self.builtins,
        ] {
            if list.windows(2).any(|w| {
                (w[0].start_byte(), std::cmp::Reverse(w[0].end_byte()))
                    >= (w[1].start_byte(), std::cmp::Reverse(w[1].end_byte()))
            }) {
                list.sort_by_key(|n| (n.start_byte(), std::cmp::Reverse(n.end_byte())));
                list.dedup();
            }
        }
    }
}

/// The nodes of `list` (in document order) that lie inside `scope`, `scope`
/// itself included: what [`visit_nodes`] on `scope` would meet.
pub fn inside<'l, 'a>(list: &'l [Node<'a>], scope: Node) -> impl Iterator<Item = Node<'a>> + 'l {
    let r = range_of(scope);
    let lo = list.partition_point(|n| n.start_byte() < r.start);
    let hi = lo + list[lo..].partition_point(|n| n.start_byte() < r.end);
    list[lo..hi].iter().copied().filter(move |n| n.end_byte() <= r.end)
}

struct Ids {
    call: u16,
    attribute: u16,
    identifier: u16,
    assignment: u16,
    augmented_assignment: u16,
    import: u16,
    import_from: u16,
    try_statement: u16,
}

impl Ids {
    fn get() -> &'static Ids {
        static IDS: std::sync::OnceLock<Ids> = std::sync::OnceLock::new();
        IDS.get_or_init(|| {
            let language = super::language();
            let id = |name: &str| language.id_for_node_kind(name, true);
            Ids {
                call: id("call"),
                attribute: id("attribute"),
                identifier: id("identifier"),
                assignment: id("assignment"),
                augmented_assignment: id("augmented_assignment"),
                import: id("import_statement"),
                import_from: id("import_from_statement"),
                try_statement: id("try_statement"),
            }
        })
    }
}
