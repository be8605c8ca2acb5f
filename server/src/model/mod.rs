//! The model layer: tree-sitter-python -> what a Triton kernel file contains
//! (`FileModel`), its syntax errors and Triton's name tables.
//!
//! Everything here is a fact about the code: parse, scopes and name
//! resolution, kernel facts, launch facts, host loops, and what several
//! rules, the checker or the rewrite gate ask alike (`candidate`, `task`,
//! `untrusted`). The model keeps facts and memos of them, not state its
//! callers set or read back: a question that may need more of a host
//! function than its stub keeps takes a [`StubReads`] and records it there.
//! What makes a fact a mistake is the rules' business, and running them is the checker's: this
//! layer may depend on `text`, `config` and `diagnostic` only, never on
//! `rules`, `fix`, `checker`, `lsp`, `bench` or `llm` (`server/tests/layers.rs`
//! checks that).

use tree_sitter::{Parser, Tree};

/// `node.child_by_field_name("name")` without looking the name up on every
/// call: the field id is resolved once per call site.
macro_rules! field {
    ($node:expr, $name:literal) => {{
        static ID: std::sync::OnceLock<Option<u16>> = std::sync::OnceLock::new();
        ID.get_or_init(|| $crate::model::field_id($name)).and_then(|id| $node.child_by_field_id(id))
    }};
}
pub(crate) use field;

/// Sends tree-sitter's own allocations (its trees' nodes, the parser's stacks)
/// to jemalloc, the binary's allocator, instead of glibc's malloc: one heap
/// rather than two (peak RSS with 20 open 5,000-line files 45.0 -> 44.6 MB),
/// and no glibc consolidation in a reparse that recovers from an error (a
/// fifth of such a reparse's samples under `perf`; docs/performance.md).
/// Call it first thing in `main`, before any tree-sitter object exists, and
/// only where jemalloc is linked.
#[cfg(all(unix, not(target_os = "openbsd"), any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn tree_sitter_on_jemalloc() {
    use tikv_jemalloc_sys as je;
    let allocator =
        tree_sitter::Allocator { malloc: je::malloc, calloc: je::calloc, realloc: je::realloc, free: je::free };
    // SAFETY: the four functions are one allocator's (jemalloc's, aligned as
    // malloc is), and this runs before any tree-sitter object is made (the
    // caller's contract), on one thread.
    unsafe { tree_sitter::set_allocator(Some(allocator)) };
}

/// The Python grammar, made once: field ids, kind ids and the parser read it.
pub(crate) fn language() -> &'static tree_sitter::Language {
    static LANGUAGE: std::sync::OnceLock<tree_sitter::Language> = std::sync::OnceLock::new();
    LANGUAGE.get_or_init(|| tree_sitter_python::LANGUAGE.into())
}

pub(crate) fn field_id(name: &str) -> Option<u16> {
    language().field_id_for_name(name).map(u16::from)
}

/// A node's kind, read from a table made once per kind id: `Node::kind`
/// measures its C string and checks it is UTF-8 on every call, a tenth of a
/// host keystroke's analysis (callgrind) where the model and rules ask it of
/// every node they pass. The same names as `Node::kind`.
pub(crate) trait NodeKind {
    fn kind_name(&self) -> &'static str;
}

impl NodeKind for tree_sitter::Node<'_> {
    #[inline]
    fn kind_name(&self) -> &'static str {
        static NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
        let language = language();
        let names = NAMES.get_or_init(|| {
            (0..language.node_kind_count()).map(|id| language.node_kind_for_id(id as u16).unwrap_or("")).collect()
        });
        let id = self.kind_id();
        match names.get(id as usize) {
            Some(&name) if !name.is_empty() => name,
            // `ERROR` (an id past the grammar's symbols) and anything the table lacks.
            _ => language.node_kind_for_id(id).unwrap_or(""),
        }
    }
}

pub mod candidate;
mod dataflow;
mod file;
mod host_loops;
mod index;
mod kernel;
mod launches;
mod nodes;
pub mod recovery;
mod scopes;
pub mod shape_configs;
mod shape_ops;
pub mod shapes;
pub mod smem;
mod step_state;
pub mod syntax;
pub mod task;
pub mod triton_api;
pub mod triton_names;
pub mod untrusted;
mod walk;
pub(crate) use walk::host_param_ranges;

pub(crate) use dataflow::collect_identifiers;
pub use file::*;
pub use index::{inside, NodeIndex};
pub use kernel::*;
pub use launches::*;
pub(crate) use nodes::*;
pub use scopes::imports;
pub(crate) use scopes::{bound_from, import_binds, imports_of, module_reads, triton_imported, version_flags};

/// Parses Python source; pass the previous (already `edit`ed) tree to reparse
/// incrementally (where a bracket left open may have moved, see [`reparse`]).
/// A statement whose bracket is left open is read masked from the line where
/// it cannot go on ([`recovery`]): one small `ERROR`, and the rest of the file
/// parses as if it were closed.
pub fn parse(text: &str, old: Option<&Tree>) -> Tree {
    parse_around(text, &recovery::gaps(text), old)
}

/// [`parse`] with the gaps of `text` given.
///
/// Each thread keeps its parser (and the buffers it grew) between calls: a
/// keystroke's reparse does not build and free one.
pub(crate) fn parse_around(text: &str, gaps: &[recovery::Gap], old: Option<&Tree>) -> Tree {
    parse_within(text, gaps, old, None).expect("a parse without a budget always yields a tree")
}

/// [`parse_around`], given up (`None`) when the parser reports its progress
/// after `budget` has passed. It reports rarely in some recoveries (every
/// 45 ms in one that took 1.8 s), so the budget may be overrun by that much.
fn parse_within(
    text: &str,
    gaps: &[recovery::Gap],
    old: Option<&Tree>,
    budget: Option<std::time::Duration>,
) -> Option<Tree> {
    thread_local! {
        static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
    }
    let read = recovery::masked(text, gaps);
    let bytes = read.as_bytes();
    let parse = |parser: &mut Parser| {
        let mut input = |at: usize, _: tree_sitter::Point| bytes.get(at..).unwrap_or_default();
        let Some(budget) = budget else {
            return parser.parse_with_options(&mut input, old, None);
        };
        let start = std::time::Instant::now();
        let mut progress = |_: &tree_sitter::ParseState| {
            if start.elapsed() > budget {
                std::ops::ControlFlow::Break(())
            } else {
                std::ops::ControlFlow::Continue(())
            }
        };
        let options = tree_sitter::ParseOptions::new().progress_callback(&mut progress);
        let tree = parser.parse_with_options(&mut input, old, Some(options));
        if tree.is_none() {
            // A parse given up would otherwise be resumed by the next one.
            parser.reset();
        }
        tree
    };
    PARSER.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => parse(slot.get_or_insert_with(python_parser)),
        // Only reentry could find it borrowed; a parser of its own then.
        Err(_) => parse(&mut python_parser()),
    })
}

fn python_parser() -> Parser {
    let mut parser = Parser::new();
    parser.set_language(language()).expect("the bundled tree-sitter-python grammar matches the linked tree-sitter");
    parser
}

/// The last tree of a document that parsed without a syntax error, edited
/// since ([`Clean::edit`]): what [`reparse`] starts from while the text has
/// an error. A tree parsed around an error (`z = -` while `z = -n` is typed,
/// a header before its `:`) is built while the parser weighs several
/// recoveries, and tree-sitter reuses none of the nodes it built then: the
/// next keystroke that mends the error read the rest of the file again
/// (24-44 ms at the top of the 5,000-line benchmark file, against 0.3 ms
/// from a tree without the error).
pub struct Clean {
    tree: Tree,
    /// The gaps `tree` is marked as parsed around (see [`recovery::mark_changed`]).
    gaps: Vec<recovery::Gap>,
    /// Versions reparsed from it; past [`CLEAN_VERSIONS`] it is let go, as
    /// every region edited since it was kept is read again from it.
    versions: usize,
}

/// How many reparses one [`Clean`] tree serves.
const CLEAN_VERSIONS: usize = 500;

/// How long a reparse from a [`Clean`] tree may take (see [`parse_within`])
/// before it is given up for one from the last tree. One takes 0.2-3 ms on
/// the 5,000-line benchmark file, except where the error changed the reading
/// of much of the file: a `"""` that pairs with a later docstring's took 1.8 s
/// (the reuse of the clean tree's nodes fails at every token), against 2-75
/// ms from the last tree.
const CLEAN_BUDGET: std::time::Duration = std::time::Duration::from_millis(15);

impl Clean {
    /// Applies an edit made to the text (as to the document's own tree).
    pub fn edit(&mut self, edit: &tree_sitter::InputEdit) {
        self.tree.edit(edit);
    }
}

/// Reparses `text` from `old`, a tree parsed around `scanned` (its text's
/// gaps) and since edited by `edits` (`(start, old_end, new_end)`, in order;
/// `index` is the new text's): the lines whose masking changed are read
/// again too. While `old` has a syntax error and `clean` holds the last tree
/// that had none (edited as `old` was), the parse starts from that one.
/// Returns the tree, the new text's [`recovery::Scanned`] and whether the
/// masking changed (then the edits changed other lines' structure too).
pub fn reparse(
    text: &str,
    old: &mut Tree,
    scanned: &recovery::Scanned,
    edits: &[(usize, usize, usize)],
    index: &crate::text::LineIndex,
    clean: &mut Option<Clean>,
) -> (Tree, recovery::Scanned, bool) {
    let now = recovery::rescan(text, scanned, edits);
    let changed = recovery::mark_changed(old, &scanned.gaps, &now.gaps, edits, index);
    let had_error = old.root_node().has_error();
    if clean.as_ref().is_some_and(|c| c.versions >= CLEAN_VERSIONS) || !had_error {
        *clean = None;
    }
    let from_clean = clean.as_mut().and_then(|c| {
        recovery::mark_changed(&mut c.tree, &c.gaps, &now.gaps, edits, index);
        c.gaps.clone_from(&now.gaps);
        c.versions += 1;
        parse_within(text, &now.gaps, Some(&c.tree), Some(CLEAN_BUDGET))
    });
    let tree = match from_clean {
        Some(tree) => tree,
        None => {
            // No clean tree, or one whose parse took too long (the error
            // changed the reading of much of the file, as a `"""` that pairs
            // with a later docstring's): from the last tree, as it stands.
            *clean = None;
            parse_around(text, &now.gaps, Some(old))
        }
    };
    if !had_error && tree.root_node().has_error() {
        *clean = Some(Clean { tree: old.clone(), gaps: now.gaps.clone(), versions: 0 });
    }
    (tree, now, changed)
}

#[cfg(test)]
mod tests {
    use super::NodeKind;

    #[test]
    fn kind_names_are_those_tree_sitter_gives() {
        // Every kind in the fixtures and examples, with errors, missing tokens and aliases.
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let mut texts = vec!["def f(:\n    x = [1, 2\nclass C(\n  pass\nprint(f'{x!r:>{w}}')\n".to_string()];
        for dir in ["tests/fixtures/rules", "tests/fixtures/hacks", "examples"] {
            for entry in std::fs::read_dir(format!("{root}/{dir}")).expect("a fixture folder") {
                let path = entry.expect("an entry").path();
                if path.extension().is_some_and(|x| x == "py") {
                    texts.push(std::fs::read_to_string(path).expect("a fixture"));
                }
            }
        }
        let mut kinds = std::collections::BTreeSet::new();
        for text in &texts {
            let tree = super::parse(text, None);
            let mut cursor = tree.walk();
            'walk: loop {
                let node = cursor.node();
                assert_eq!(node.kind_name(), node.kind(), "kind id {}", node.kind_id());
                kinds.insert(node.kind_id());
                if cursor.goto_first_child() {
                    continue;
                }
                while !cursor.goto_next_sibling() {
                    if !cursor.goto_parent() {
                        break 'walk;
                    }
                }
            }
        }
        assert!(kinds.len() > 100, "only {} kinds seen", kinds.len());
        assert!(kinds.contains(&u16::MAX), "no ERROR node seen");
    }
}
