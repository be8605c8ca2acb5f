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
pub mod forest;
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
pub use forest::Forest;
pub use index::{inside, NodeIndex};
pub use kernel::*;
pub use launches::*;
pub(crate) use nodes::*;
pub use scopes::imports;
pub(crate) use scopes::{bound_from, import_binds, imports_of, module_reads, triton_imported, version_flags};

/// Parses Python source; pass the previous (already `edit`ed) tree to reparse
/// incrementally (where a bracket left open may have moved, see [`Forest::reparse`]).
/// A statement whose bracket is left open is read masked from the line where
/// it cannot go on ([`recovery`]): one small `ERROR`, and the rest of the file
/// parses as if it were closed.
pub fn parse(text: &str, old: Option<&Tree>) -> Tree {
    parse_around(text, &recovery::gaps(text), old)
}

/// [`parse`] with the gaps of `text` given: one tree over the whole text
/// (a document's text is parsed as a [`Forest`]).
pub(crate) fn parse_around(text: &str, gaps: &[recovery::Gap], old: Option<&Tree>) -> Tree {
    let read = recovery::masked(text, gaps);
    forest::parse_chunk(read.as_bytes(), None, old, None).expect("a parse without a budget always yields a tree")
}

fn python_parser() -> Parser {
    let mut parser = Parser::new();
    parser.set_language(language()).expect("the bundled tree-sitter-python grammar matches the linked tree-sitter");
    parser
}

/// Parses `text` afresh as a document is parsed: a [`Forest`].
pub fn parse_forest(text: &str) -> Forest {
    Forest::parse(text, &recovery::scanned(text))
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
