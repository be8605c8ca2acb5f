//! A document's syntax as several trees: a large file is cut into chunks of
//! top-level statements, each parsed on its own (through `included_ranges`,
//! so that every node keeps the file's byte offsets and positions).
//!
//! tree-sitter-python rebuilds the module's whole statement list on every
//! reparse: in one tree, a keystroke pays for every top-level statement of
//! the file (scripts/ts_reparse_scaling.py). Cut into chunks, a keystroke
//! reparses the chunk it falls in and moves the trees after it
//! (`Tree::edit`, about 1 us each; scripts/ts_chunk_reparse.py).
//!
//! Where the chunks start is decided by the text alone ([`starts`]), so a
//! fresh parse and an incremental one cut a text alike: at checkpoints
//! ([`recovery::Scanned::checkpoints`], lines where a statement starts at
//! column 0 outside brackets and strings, not a decorated definition's
//! `def`), chosen by a hash of the line, at least [`MIN_BYTES`] apart, in
//! files of at least [`CHUNKED_FROM`] checkpoints. A smaller file is one
//! tree, parsed as before. Every top-level statement of valid Python parses
//! the same in its chunk as in the whole file; a syntax error's recovery
//! stays inside its chunk.

use tree_sitter::{InputEdit, Node, Parser, Range, Tree};

use super::recovery::{self, Scanned};
use crate::text::LineIndex;

/// Files with fewer checkpoints are one tree. (The unit tests cut small
/// files too, often: the random-edit tests then edit across chunks.)
const CHUNKED_FROM: usize = if cfg!(test) { 2 } else { 64 };

/// A checkpoint starts a chunk when the hash of its line is a multiple of this ...
const SPREAD: u64 = if cfg!(test) { 2 } else { 16 };

/// ... and the chunk before it holds at least this many bytes.
const MIN_BYTES: usize = if cfg!(test) { 1 } else { 2048 };

/// How many reparses one [`Clean`] tree serves.
const CLEAN_VERSIONS: usize = 500;

/// How long a reparse from a [`Clean`] tree may take (see [`parse_chunk`])
/// before it is given up for one from the last tree. One takes 0.2-3 ms on
/// the 5,000-line benchmark file, except where the error changed the reading
/// of much of the file: a `"""` that pairs with a later docstring's took 1.8 s
/// (the reuse of the clean tree's nodes fails at every token), against 2-75
/// ms from the last tree.
const CLEAN_BUDGET: std::time::Duration = std::time::Duration::from_millis(15);

/// The trees of a text, one per chunk, in order; together they cover it.
#[derive(Clone)]
pub struct Forest {
    chunks: Vec<Chunk>,
}

#[derive(Clone)]
struct Chunk {
    start: usize,
    end: usize,
    tree: Tree,
    /// While `tree` has a syntax error: the last tree of this chunk without
    /// one, edited since.
    clean: Option<Clean>,
}

/// The last tree of a chunk that parsed without a syntax error, edited
/// since: what a reparse starts from while the chunk has an error. A tree
/// parsed around an error (`z = -` while `z = -n` is typed, a header before
/// its `:`) is built while the parser weighs several recoveries, and
/// tree-sitter reuses none of the nodes it built then: the next keystroke
/// that mends the error read the rest of the text again (24-44 ms at the top
/// of the 5,000-line benchmark file as one tree, against 0.3 ms from a tree
/// without the error).
#[derive(Clone)]
struct Clean {
    tree: Tree,
    /// Versions reparsed from it; past [`CLEAN_VERSIONS`] it is let go, as
    /// every region edited since it was kept is read again from it.
    versions: usize,
}

impl From<Tree> for Forest {
    /// One tree over its whole text.
    fn from(tree: Tree) -> Forest {
        let end = tree.root_node().end_byte();
        Forest { chunks: vec![Chunk { start: 0, end, tree, clean: None }] }
    }
}

impl Forest {
    /// Parses `text` afresh (`scanned` is its [`recovery::scanned`]).
    pub fn parse(text: &str, scanned: &Scanned) -> Forest {
        Self::parse_with(text, scanned, None)
    }

    /// [`Self::parse`] for a caller that keeps the text's line index (a
    /// document): a file cut into chunks reads their positions from it
    /// rather than indexing the text again.
    pub fn parse_indexed(text: &str, scanned: &Scanned, index: &LineIndex) -> Forest {
        Self::parse_with(text, scanned, Some(index))
    }

    fn parse_with(text: &str, scanned: &Scanned, index: Option<&LineIndex>) -> Forest {
        let starts = starts(text, scanned);
        let read = recovery::masked(text, &scanned.gaps);
        let built;
        let index = match index {
            _ if starts.len() < 2 => None,
            Some(index) => Some(index),
            None => {
                built = LineIndex::new(text);
                Some(&built)
            }
        };
        let ends = starts.iter().skip(1).copied().chain(std::iter::once(text.len()));
        let chunks = starts
            .iter()
            .zip(ends)
            .map(|(&start, end)| {
                let range = index.map(|index| range(index, start, end));
                let tree = parse_chunk(read.as_bytes(), range, None, None).expect("a parse without a budget");
                Chunk { start, end, tree, clean: None }
            })
            .collect();
        Forest { chunks }
    }

    /// Reparses every chunk from itself, changing nothing: the first
    /// incremental reparse of a freshly parsed tree costs several times a
    /// later one (5 ms against 1 ms for a 5,000-line file as one tree), paid
    /// here rather than on the first keystroke.
    pub fn warm(&mut self, text: &str, scanned: &Scanned, index: &LineIndex) {
        let read = recovery::masked(text, &scanned.gaps);
        let whole = self.chunks.len() == 1;
        for c in &mut self.chunks {
            let range = (!whole).then(|| range(index, c.start, c.end));
            c.tree = parse_chunk(read.as_bytes(), range, Some(&c.tree), None).expect("a parse without a budget");
        }
    }

    /// The root of each chunk's tree, in order.
    pub fn roots(&self) -> impl Iterator<Item = Node<'_>> {
        self.chunks.iter().map(|c| c.tree.root_node())
    }

    /// The top-level nodes of the text (each root's children), in order.
    pub fn top_level(&self) -> Vec<Node<'_>> {
        let mut out = Vec::new();
        for root in self.roots() {
            let mut cursor = root.walk();
            out.extend(root.children(&mut cursor));
        }
        out
    }

    /// [`Self::top_level`], named nodes only.
    pub fn named_top_level(&self) -> Vec<Node<'_>> {
        self.top_level().into_iter().filter(|n| n.is_named()).collect()
    }

    /// How many named top-level nodes.
    pub fn named_top_count(&self) -> usize {
        self.roots().map(|r| r.named_child_count() as usize).sum()
    }

    /// Whether any chunk has a syntax error.
    pub fn has_error(&self) -> bool {
        self.roots().any(|r| r.has_error())
    }

    /// The root of the chunk that holds byte `at` (the last chunk for the text's end).
    pub fn root_at(&self, at: usize) -> Node<'_> {
        let i = self.chunks.partition_point(|c| c.start <= at).saturating_sub(1);
        self.chunks[i].tree.root_node()
    }

    /// The smallest node that spans `start..end`, within the chunk of `start`.
    pub fn descendant_for_byte_range(&self, start: usize, end: usize) -> Option<Node<'_>> {
        self.root_at(start).descendant_for_byte_range(start, end)
    }

    /// The top-level node that holds byte `at` (or starts after it), as
    /// `Node::first_child_for_byte` of the root gives.
    pub fn first_top_for_byte(&self, at: usize) -> Option<Node<'_>> {
        let i = self.chunks.partition_point(|c| c.start <= at).saturating_sub(1);
        self.chunks[i..].iter().find_map(|c| c.tree.root_node().first_child_for_byte(at))
    }

    /// The byte range of the whole text the trees cover.
    pub fn byte_range(&self) -> std::ops::Range<usize> {
        let first = self.chunks.first().map_or(0, |c| c.tree.root_node().start_byte());
        let last = self.chunks.last().map_or(0, |c| c.tree.root_node().end_byte());
        first..last
    }

    /// Each tree's S-expression, one per line (for tests and logs).
    pub fn to_sexp(&self) -> String {
        self.roots().map(|r| r.to_sexp()).collect::<Vec<_>>().join("\n")
    }

    /// How many trees.
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Applies an edit made to the text to every tree (the chunks' own byte
    /// ranges are those of the text before; [`Self::reparse`] reads them so).
    pub fn edit(&mut self, edit: &InputEdit) {
        for c in &mut self.chunks {
            c.tree.edit(edit);
            if let Some(clean) = &mut c.clean {
                clean.tree.edit(edit);
            }
        }
    }

    /// Reparses `text` from these trees, parsed around `scanned` (the old
    /// text's) and since edited by `edits` (`(start, old_end, new_end)`, in
    /// order, each already given to [`Self::edit`]; `index` is the new
    /// text's): the chunks an edit touched, and those whose masking changed,
    /// are read again; the others are kept as they are. Returns the new
    /// text's [`Scanned`] and whether the masking changed (then the edits
    /// changed other lines' structure too).
    pub fn reparse(
        &mut self,
        text: &str,
        scanned: &Scanned,
        edits: &[(usize, usize, usize)],
        index: &LineIndex,
    ) -> (Scanned, bool) {
        let now = recovery::rescan(text, scanned, edits);
        let masking = recovery::masking_changed(&scanned.gaps, &now.gaps, edits);
        if let Some((lo, hi)) = masking {
            self.edit(&recovery::same_length_edit(lo, hi, index));
        }
        let starts = starts(text, &now);
        let read = recovery::masked(text, &now.gaps);
        let whole = starts.len() == 1;
        // Where each old chunk's start and end are now, as `Tree::edit` moved
        // them (`None`: inside an edit; text inserted at a chunk's end went
        // into it).
        let moved = |p: usize| -> Option<usize> {
            edits.iter().try_fold(p, |p, &(start, old_end, new_end)| {
                if p < start {
                    Some(p)
                } else if p >= old_end {
                    Some(p + new_end - old_end)
                } else {
                    None
                }
            })
        };
        let old: Vec<(Option<usize>, Option<usize>)> =
            self.chunks.iter().map(|c| (moved(c.start), moved(c.end))).collect();
        // The old chunk that starts at each place now (moved starts are distinct).
        let starting: rustc_hash::FxHashMap<usize, usize> =
            old.iter().enumerate().filter_map(|(k, o)| Some((o.0?, k))).collect();
        // A chunk no edit reached: before every edit (not ending where one
        // starts) or after it. Edits are in order, each in the text the last left.
        let untouched: Vec<bool> = self
            .chunks
            .iter()
            .map(|chunk| {
                let mut c = (chunk.start, chunk.end);
                edits.iter().all(|&(start, old_end, new_end)| {
                    let before = c.1 < start;
                    let after = c.0 >= old_end;
                    if after {
                        c = (c.0 + new_end - old_end, c.1 + new_end - old_end);
                    }
                    before || after
                })
            })
            .collect();
        let ends = starts.iter().skip(1).copied().chain(std::iter::once(text.len()));
        let mut chunks = Vec::with_capacity(starts.len());
        let mut taken = vec![false; self.chunks.len()];
        for (&start, end) in starts.iter().zip(ends) {
            let marked = masking.is_some_and(|(lo, hi)| lo <= end && start <= hi);
            let from = starting.get(&start).copied().filter(|&k| !taken[k]);
            if let Some(k) = from.filter(|&k| old[k].1 == Some(end) && untouched[k] && !marked) {
                taken[k] = true;
                let mut c = self.chunks[k].clone();
                (c.start, c.end) = (start, end);
                chunks.push(c);
                continue;
            }
            // Reparsed from the old chunk that started here, if one did.
            let range = (!whole).then(|| range(index, start, end));
            let chunk = match from {
                Some(k) => {
                    taken[k] = true;
                    let prev = &mut self.chunks[k];
                    let kept_range = old[k] == (Some(start), Some(end));
                    reparse_chunk(read.as_bytes(), range, &prev.tree, prev.clean.take().filter(|_| kept_range))
                }
                None => (parse_chunk(read.as_bytes(), range, None, None).expect("a parse without a budget"), None),
            };
            chunks.push(Chunk { start, end, tree: chunk.0, clean: chunk.1 });
        }
        self.chunks = chunks;
        (now, masking.is_some())
    }
}

/// Reparses a chunk from `old` (edited), or from `clean` while `old` has a
/// syntax error; returns the tree and the clean tree to keep with it.
fn reparse_chunk(read: &[u8], range: Option<Range>, old: &Tree, clean: Option<Clean>) -> (Tree, Option<Clean>) {
    let had_error = old.root_node().has_error();
    let mut clean = clean.filter(|c| c.versions < CLEAN_VERSIONS && had_error);
    let from_clean = clean.as_mut().and_then(|c| {
        c.versions += 1;
        parse_chunk(read, range, Some(&c.tree), Some(CLEAN_BUDGET))
    });
    let tree = match from_clean {
        Some(tree) => tree,
        None => {
            // No clean tree, or one whose parse took too long (the error
            // changed the reading of much of the chunk, as a `"""` that pairs
            // with a later docstring's): from the last tree, as it stands.
            clean = None;
            parse_chunk(read, range, Some(old), None).expect("a parse without a budget")
        }
    };
    if !had_error && tree.root_node().has_error() {
        clean = Some(Clean { tree: old.clone(), versions: 0 });
    }
    (tree, clean)
}

/// The included range `start..end` of a text whose line index is `index`.
fn range(index: &LineIndex, start: usize, end: usize) -> Range {
    let (start_point, end_point) = (recovery::point(index, start), recovery::point(index, end));
    Range { start_byte: start, end_byte: end, start_point, end_point }
}

/// Where the chunks of `text` start (the first at 0).
fn starts(text: &str, scanned: &Scanned) -> Vec<usize> {
    let checkpoints = scanned.checkpoints();
    let mut out = vec![0];
    if checkpoints.len() < CHUNKED_FROM {
        return out;
    }
    let b = text.as_bytes();
    let mut gaps = scanned.gaps.iter().peekable();
    for &c in checkpoints {
        while gaps.peek().is_some_and(|g| g.end <= c) {
            gaps.next();
        }
        if gaps.peek().is_some_and(|g| g.start < c) || c < out[out.len() - 1] + MIN_BYTES {
            continue;
        }
        let line = &b[c..b[c..].iter().position(|&x| x == b'\n').map_or(b.len(), |k| c + k)];
        if continues(line) || hash(&line[..line.len().min(64)]) % SPREAD != 0 {
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether a line at column 0 goes on the compound statement before it.
fn continues(line: &[u8]) -> bool {
    ["else", "elif", "except", "finally"].iter().any(|k| {
        line.starts_with(k.as_bytes())
            && !line.get(k.len()).is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80)
    })
}

/// FNV-1a: the same on every machine and every run.
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Parses `read` (the masked text) within `range` (`None`: the whole text)
/// from `old`; `None` when the parser reports its progress after `budget`
/// has passed. It reports rarely in some recoveries (every 45 ms in one that
/// took 1.8 s), so the budget may be overrun by that much.
///
/// Each thread keeps its parser (and the buffers it grew) between calls: a
/// keystroke's reparse does not build and free one.
pub(super) fn parse_chunk(
    read: &[u8],
    range: Option<Range>,
    old: Option<&Tree>,
    budget: Option<std::time::Duration>,
) -> Option<Tree> {
    thread_local! {
        static PARSER: std::cell::RefCell<Option<Parser>> = const { std::cell::RefCell::new(None) };
    }
    let parse = |parser: &mut Parser| {
        let ranges = range.map(|r| vec![r]).unwrap_or_default();
        if parser.set_included_ranges(&ranges).is_err() {
            parser.set_included_ranges(&[]).expect("no ranges are always valid");
        }
        let mut input = |at: usize, _: tree_sitter::Point| read.get(at..).unwrap_or_default();
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
        Ok(mut slot) => parse(slot.get_or_insert_with(super::python_parser)),
        // Only reentry could find it borrowed; a parser of its own then.
        Err(_) => parse(&mut super::python_parser()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(n: usize) -> String {
        let mut s = String::from("import torch\nimport triton\nimport triton.language as tl\n\n");
        for i in 0..n {
            s += &format!(
                "@triton.jit\ndef k{i}(x_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    tl.store(x_ptr + offs, offs, mask=offs < n)\n\n\n\
                 def run{i}(x):\n    k{i}[(1,)](x, x.numel(), BLOCK=1024)\n    return x\n\n\n"
            );
        }
        s
    }

    fn shape(forest: &Forest) -> Vec<(u16, usize, usize)> {
        forest.top_level().iter().map(|n| (n.kind_id(), n.start_byte(), n.end_byte())).collect()
    }

    #[test]
    fn a_large_file_is_cut_and_reads_as_one_tree_does() {
        let text = blocks(200);
        let scanned = recovery::scanned(&text);
        let forest = Forest::parse(&text, &scanned);
        assert!(forest.len() > 4, "{} chunks", forest.len());
        let one = Forest::from(super::super::parse(&text, None));
        assert_eq!(one.len(), 1);
        assert_eq!(shape(&forest), shape(&one));
        let sexp = |f: &Forest| f.top_level().iter().map(|n| n.to_sexp()).collect::<Vec<_>>();
        assert_eq!(sexp(&forest), sexp(&one));
        assert!(!forest.has_error());
    }

    #[test]
    fn a_file_of_fewer_checkpoints_is_one_tree() {
        // Decorated definitions start no chunk: one checkpoint (the import).
        let text = "import triton

@triton.jit
def k(x):
    pass


@triton.jit
def j(x):
    pass
";
        assert_eq!(recovery::scanned(text).checkpoints().len(), 1);
        assert_eq!(Forest::parse(text, &recovery::scanned(text)).len(), 1);
        assert!(CHUNKED_FROM > 1);
    }

    /// The unit tests' random edits (`checker::tests`, `lsp::document`) edit
    /// texts cut into several trees.
    #[test]
    fn the_random_edit_fixtures_are_cut() {
        for text in [crate::checker::tests::FIXTURE, crate::checker::tests::LINKED] {
            assert!(Forest::parse(text, &recovery::scanned(text)).len() > 1, "{text}");
        }
    }

    #[test]
    fn continuation_clauses_start_no_chunk() {
        assert!(continues(b"else:") && continues(b"except ValueError:") && continues(b"finally:"));
        assert!(!continues(b"elsewhere = 1") && !continues(b"def f():"));
    }
}
