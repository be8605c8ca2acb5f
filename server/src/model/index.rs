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

/// Nodes by kind, each list in document order (a pre-order walk: start bytes never decrease).
#[derive(Debug, Default)]
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
    pub(super) fn build(root: Node<'a>, src: &str) -> Self {
        Self::build_units(&[root], src)
    }

    /// [`Self::build`] over some top-level statements, in document order.
    pub(super) fn build_units(units: &[Node<'a>], src: &str) -> Self {
        let ids = Ids::get();
        let mut index = NodeIndex::default();
        let mut visit = |n: Node<'a>| {
            let k = n.kind_id();
            if k == ids.call {
                index.calls.push(n);
            } else if k == ids.attribute {
                index.attributes.push(n);
            } else if k == ids.identifier {
                if src.get(n.byte_range()) == Some("__builtins__") {
                    index.builtins.push(n);
                }
            } else if k == ids.assignment || k == ids.augmented_assignment {
                index.assignments.push(n);
            } else if k == ids.import || k == ids.import_from {
                index.imports.push(n);
            } else if k == ids.try_statement {
                index.tries.push(n);
            }
        };
        for unit in units {
            visit_nodes(*unit, &mut visit);
        }
        index
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
            let language: tree_sitter::Language = tree_sitter_python::LANGUAGE.into();
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
