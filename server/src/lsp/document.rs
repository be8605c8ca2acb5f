//! One open document: its text, the tree-sitter tree kept in step with every
//! edit, and the last analysis.
//!
//! Every change goes through [`Document::apply_changes`]: each LSP change is
//! applied to the text and the line index, turned into a tree-sitter
//! `InputEdit` and applied to the old tree, and the file is reparsed once with
//! that tree, so tree-sitter reuses what the edits did not touch. The
//! analysis then starts from the snapshot of the previous one and re-reads
//! only the top-level statements that changed (`checker::incremental`).
//! Positions are clamped, never trusted: a client with a bad range gets a
//! warning in the log, not a dead server.

use std::sync::Arc;

use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};
use tree_sitter::{InputEdit, Point, Tree};

use crate::checker::incremental::{self, Snapshot};
use crate::checker::CheckResult;
use crate::config::Settings;
use crate::model;
use crate::text::{LineIndex, TextRange};

use super::convert::Encoding;

pub struct Document {
    pub version: i32,
    /// Shared with a running analysis job rather than copied.
    text: Arc<str>,
    line_index: Arc<LineIndex>,
    /// Kept only for recently edited documents (see `State::touch`): a tree of
    /// a 5,000-line file is several MB, and incremental reparsing only pays
    /// off for the file being typed in. Without one, the next change parses afresh.
    tree: Option<Tree>,
    pub settings: Arc<Settings>,
    /// The analysis of version `analyzed`; after an edit it lags until the
    /// background analysis of the new version lands.
    pub result: CheckResult,
    pub analyzed: i32,
    /// What the next analysis starts from; kept, like the tree, only for recently edited documents.
    snapshot: Option<Arc<Snapshot>>,
    /// Whether the last change was reparsed from the edited old tree.
    reparsed_incrementally: bool,
}

/// What the analysis of one version needs, taken under the state lock and
/// analysed outside it.
pub struct AnalysisJob {
    pub version: i32,
    text: Arc<str>,
    line_index: Arc<LineIndex>,
    tree: Tree,
    settings: Arc<Settings>,
    previous: Option<Arc<Snapshot>>,
}

/// A tree and snapshot taken from a document, freed when this is dropped.
pub struct Evicted {
    _tree: Option<Tree>,
    _snapshot: Option<Arc<Snapshot>>,
}

/// The outcome of an [`AnalysisJob`], for [`Document::install`].
pub struct Analysis {
    pub result: CheckResult,
    /// None after an analysis that panicked (the next one starts afresh).
    snapshot: Option<Snapshot>,
    /// The settings it was made with.
    settings: Arc<Settings>,
}

impl AnalysisJob {
    /// The analysis of this version. It does not panic: a panic in the
    /// incremental analysis is retried afresh (without the previous
    /// snapshot), and a panic there too gives an empty result, so that what
    /// waits for this version's analysis (code actions, lenses, a pull) is
    /// not held, and nothing found in an older text is shown for this one.
    /// Both are logged; the panic itself goes to the log through the panic hook.
    pub fn run(&self) -> Analysis {
        let attempt = |previous: Option<&Snapshot>| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                #[cfg(test)]
                tests::failpoint(previous.is_some());
                incremental::analyze(&self.text, &self.tree, &self.settings, &self.line_index, previous)
            }))
        };
        let settings = self.settings.clone();
        let outcome = attempt(self.previous.as_deref()).or_else(|_| {
            tracing::error!("the incremental analysis of version {} panicked; analysing it afresh", self.version);
            attempt(None)
        });
        match outcome {
            Ok((result, snapshot)) => Analysis { result, snapshot: Some(snapshot), settings },
            Err(_) => {
                tracing::error!("the analysis of version {} panicked; it has no diagnostics", self.version);
                Analysis { result: CheckResult::default(), snapshot: None, settings }
            }
        }
    }
}

#[cfg(test)]
impl Analysis {
    fn snapshot(&self) -> &Snapshot {
        self.snapshot.as_ref().expect("an analysis that did not panic")
    }
}

impl Document {
    pub fn new(text: &str, version: i32, settings: Arc<Settings>) -> Self {
        let tree = model::parse(text, None);
        // The first incremental reparse of a freshly parsed tree costs several
        // times a later one (5 ms against 1 ms for a 5,000-line file): pay it
        // here, with a reparse that changes nothing, not on the first keystroke.
        let tree = model::parse(text, Some(&tree));
        let line_index = LineIndex::new(text);
        let text: Arc<str> = Arc::from(text);
        let (result, snapshot) = incremental::analyze(&text, &tree, &settings, &line_index, None);
        Document {
            version,
            text,
            line_index: Arc::new(line_index),
            tree: Some(tree),
            settings,
            result,
            analyzed: version,
            snapshot: Some(Arc::new(snapshot)),
            reparsed_incrementally: false,
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
        let mut text = String::from(&*self.text);
        let index = Arc::make_mut(&mut self.line_index);
        for change in changes {
            match change.range {
                // A client without incremental sync sends the whole text:
                // recover the edit it made (the span between the common
                // prefix and suffix) so that the tree and the analysis stay
                // incremental. Only when there is no tree to edit is the new
                // text parsed afresh.
                None if self.tree.is_none() => {
                    text = change.text.clone();
                    *index = LineIndex::new(&text);
                    full_reparse = true;
                }
                None => {
                    let (start, old_end, new_end) = changed_span(&text, &change.text);
                    apply_bytes(&mut text, index, self.tree.as_mut(), start, old_end, &change.text[start..new_end]);
                }
                Some(range) => {
                    if let Some(w) = apply_ranged(&mut text, index, self.tree.as_mut(), range, &change.text, encoding) {
                        warnings.push(w);
                    }
                }
            }
        }
        self.version = version;
        self.text = Arc::from(text);
        let old = if full_reparse { None } else { self.tree.as_ref() };
        self.reparsed_incrementally = old.is_some();
        let tree = model::parse(&self.text, old);
        self.tree = Some(tree);
        warnings
    }

    /// Whether the last `apply_changes` reparsed from the edited old tree
    /// (tree-sitter reusing what the edit did not touch) rather than afresh.
    pub fn reparsed_incrementally(&self) -> bool {
        self.reparsed_incrementally
    }

    /// The analysis of the current version, to run off the state lock.
    pub fn analysis_job(&self) -> AnalysisJob {
        AnalysisJob {
            version: self.version,
            text: self.text.clone(),
            line_index: self.line_index.clone(),
            tree: self.tree.clone().unwrap_or_else(|| model::parse(&self.text, None)),
            settings: self.settings.clone(),
            previous: self.snapshot.clone(),
        }
    }

    /// Installs the result of a job if the document is still at its version
    /// and its settings (a settings change re-analyses the document at once:
    /// a job started before it must not put the old settings' result back).
    pub fn install(&mut self, version: i32, analysis: Analysis) -> bool {
        // The same `Arc` unless the settings changed since the job started: no deep comparison per edit.
        let same_settings = Arc::ptr_eq(&analysis.settings, &self.settings) || *analysis.settings == *self.settings;
        if version != self.version || !same_settings {
            return false;
        }
        self.result = analysis.result;
        self.analyzed = version;
        self.snapshot = analysis.snapshot.filter(|_| self.tree.is_some()).map(Arc::new);
        true
    }

    /// Whether `result` describes the current text.
    pub fn is_analyzed(&self) -> bool {
        self.analyzed == self.version
    }

    /// Re-runs the analysis on the current text from scratch (after a settings change).
    pub fn reanalyze(&mut self) {
        let tree = self.tree.take().unwrap_or_else(|| model::parse(&self.text, None));
        let (result, snapshot) = incremental::analyze(&self.text, &tree, &self.settings, &self.line_index, None);
        self.result = result;
        self.analyzed = self.version;
        self.snapshot = Some(Arc::new(snapshot));
        self.tree = Some(tree);
    }

    /// Takes away the tree (and the analysis snapshot) of a document nobody
    /// is typing in; the caller frees them, outside the state lock (freeing
    /// the tree of a 5,000-line file takes ~15 ms).
    pub fn take_tree(&mut self) -> Evicted {
        Evicted { _tree: self.tree.take(), _snapshot: self.snapshot.take() }
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

/// Applies one ranged change to `text`, its line index and (when kept) the tree.
fn apply_ranged(
    text: &mut String,
    index: &mut LineIndex,
    tree: Option<&mut Tree>,
    range: Range,
    new_text: &str,
    encoding: Encoding,
) -> Option<String> {
    let (mut start, clamped_start) = byte_of(text, index, range.start, encoding);
    let (mut end, clamped_end) = byte_of(text, index, range.end, encoding);
    let mut warning = (clamped_start || clamped_end).then(|| format!("clamped change range {range:?} to the document"));
    if start > end {
        std::mem::swap(&mut start, &mut end);
        warning = Some(format!("change range {range:?} ends before it starts; applied it reversed"));
    }
    apply_bytes(text, index, tree, start, end, new_text);
    warning
}

/// The bytes `old[start..old_end]` that became `new[start..new_end]`: what is
/// left between the longest common prefix and the longest common suffix that
/// does not overlap it, on character boundaries of both texts.
fn changed_span(old: &str, new: &str) -> (usize, usize, usize) {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut start = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    while !(old.is_char_boundary(start) && new.is_char_boundary(start)) {
        start -= 1;
    }
    let max_suffix = (a.len() - start).min(b.len() - start);
    let mut suffix = a.iter().rev().zip(b.iter().rev()).take(max_suffix).take_while(|(x, y)| x == y).count();
    while !(old.is_char_boundary(a.len() - suffix) && new.is_char_boundary(b.len() - suffix)) {
        suffix -= 1;
    }
    (start, a.len() - suffix, b.len() - suffix)
}

/// Replaces the bytes `start..end` of `text` with `new_text`, keeping the line
/// index and (when kept) the tree in step.
fn apply_bytes(
    text: &mut String,
    index: &mut LineIndex,
    tree: Option<&mut Tree>,
    start: usize,
    end: usize,
    new_text: &str,
) {
    let start_position = point_of(index, start);
    let old_end_position = point_of(index, end);
    text.replace_range(start..end, new_text);
    index.edit(start, end, new_text);
    let new_end = start + new_text.len();
    let new_end_position = point_of(index, new_end);
    if let Some(tree) = tree {
        tree.edit(&InputEdit {
            start_byte: start,
            old_end_byte: end,
            new_end_byte: new_end,
            start_position,
            old_end_position,
            new_end_position,
        });
    }
}

/// Byte offset of an LSP position, and whether it had to be clamped. Lines
/// count `\n` only, as the analysis does; a column inside a character lands after it.
fn byte_of(text: &str, index: &LineIndex, pos: Position, encoding: Encoding) -> (usize, bool) {
    let line = pos.line as usize;
    if line >= index.line_count() {
        return (text.len(), true);
    }
    let start = index.line_start(line);
    let end = if line + 1 < index.line_count() { index.line_start(line + 1) - 1 } else { text.len() };
    let col = pos.character as usize;
    let mut units = 0usize;
    for (i, ch) in text[start..end].char_indices() {
        if units >= col {
            return (start + i, false);
        }
        units += encoding.width(ch);
    }
    (end, units < col)
}

fn point_of(index: &LineIndex, byte: usize) -> Point {
    let row = index.line_of(byte);
    Point { row, column: byte - index.line_start(row) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker;
    use crate::checker::incremental::Path;

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

    thread_local! {
        /// Which analyses panic on this thread: 1 the incremental ones, 2 all.
        static PANICS: std::cell::Cell<u8> = const { std::cell::Cell::new(0) };
    }

    pub(super) fn failpoint(incremental: bool) {
        match PANICS.with(|p| p.get()) {
            1 if incremental => panic!("failpoint: incremental analysis"),
            2 => panic!("failpoint: every analysis"),
            _ => {}
        }
    }

    /// An analysis that panics does not take the server's answer with it: the
    /// incremental one is retried afresh (same result as a fresh analysis),
    /// and if that panics too the version gets an empty result, installed, so
    /// that nothing waits for it and nothing of the older text is shown.
    #[test]
    fn a_panicking_analysis_is_retried_afresh_then_left_empty() {
        let mut doc = Document::new(FIXTURE, 1, Arc::new(Settings::default()));
        let change = TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(0, 0), Position::new(0, 0))),
            range_length: None,
            text: "# a comment\n".into(),
        };
        doc.apply_changes(2, std::slice::from_ref(&change), Encoding::Utf16);
        PANICS.with(|p| p.set(1));
        let analysis = doc.analysis_job().run();
        PANICS.with(|p| p.set(0));
        let fresh = checker::check(doc.text(), &model::parse(doc.text(), None), &Settings::default());
        assert_eq!(analysis.result.diagnostics, fresh.diagnostics);
        assert!(doc.install(2, analysis));
        assert!(doc.is_analyzed() && !doc.result.diagnostics.is_empty());

        doc.apply_changes(3, &[change], Encoding::Utf16);
        PANICS.with(|p| p.set(2));
        let analysis = doc.analysis_job().run();
        PANICS.with(|p| p.set(0));
        assert!(analysis.result.diagnostics.is_empty());
        assert!(doc.install(3, analysis));
        assert!(doc.is_analyzed());
        // The next edit is analysed afresh (no snapshot) and finds everything again.
        let change = TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(0, 0), Position::new(0, 0))),
            range_length: None,
            text: "#\n".into(),
        };
        doc.apply_changes(4, &[change], Encoding::Utf16);
        let analysis = doc.analysis_job().run();
        let fresh = checker::check(doc.text(), &model::parse(doc.text(), None), &Settings::default());
        assert_eq!(analysis.result.diagnostics, fresh.diagnostics);
    }

    /// A job started before a settings change does not put its result back
    /// over the document's re-analysis with the new settings.
    #[test]
    fn an_analysis_with_old_settings_is_not_installed() {
        let mut doc = Document::new(FIXTURE, 1, Arc::new(Settings::default()));
        assert!(doc.result.diagnostics.iter().any(|d| d.code == "KL005"));
        let change = TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(0, 0), Position::new(0, 0))),
            range_length: None,
            text: "# a comment\n".into(),
        };
        doc.apply_changes(2, &[change], Encoding::Utf16);
        let job = doc.analysis_job();
        doc.settings = Arc::new(Settings { ignore: vec!["KL005".to_string()], ..Default::default() });
        doc.reanalyze();
        assert!(!doc.result.diagnostics.iter().any(|d| d.code == "KL005"));
        assert!(!doc.install(2, job.run()), "made with the old settings");
        assert!(!doc.result.diagnostics.iter().any(|d| d.code == "KL005"));
        // A job of the current settings is installed.
        assert!(doc.install(2, doc.analysis_job().run()));
    }

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

    /// Several definitions that read each other: a barrier helper called from a
    /// kernel, kernels launched from host functions with module-level
    /// constants, autotune configs in a module-level list, suppressions, a
    /// class, and host syncs in time loops.
    const LINKED: &str = r#"import torch
import triton
import triton.language as tl

BLOCK = 100
CONFIGS = [triton.Config({"BM": 256, "BN": 256, "BK": 64}, num_stages=4)]


@triton.jit
def grid_barrier(bar_ptr, target):
    tl.atomic_add(bar_ptr, 1)
    while tl.atomic_add(bar_ptr, 0) < target:
        pass


@triton.jit
def step_kernel(h_ptr, w_ptr, bar_ptr, n, seq_len, H: tl.constexpr, B: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * B + tl.arange(0, B)
    cols = tl.arange(0, H)
    for t in range(seq_len):
        h = tl.load(h_ptr + offs, mask=offs < n)
        acc = tl.sum(tl.load(w_ptr + cols), axis=0) * h
        grid_barrier(bar_ptr, t + 1)
        tl.store(h_ptr + offs, tl.tanh(acc), mask=offs < n)  # kernel-lsp: ignore[KL005]


@triton.autotune(configs=CONFIGS, key=["n"])
@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


def run_step(h, w, bar, steps):
    n = h.numel()
    for t in range(steps):
        step_kernel[(4,)](h, w, bar, n, 1, H=64, B=BLOCK)
        if h.sum().item() > 0:
            break
    return h


class Persistent:
    @triton.jit
    def fused(h_ptr, bar_ptr, n):
        for t in range(n):
            tl.store(h_ptr + t, tl.load(h_ptr + t))
            grid_barrier(bar_ptr, t)

    def run(self, h, bar):
        for t in range(h.size(0)):
            step_kernel[(4,)](h, h, bar, 8, 1, H=64, B=64)


class ModelNew(torch.nn.Module):
    def forward(self, x, w, bar):
        for t in range(x.size(0)):
            h = run_step(x[t], w, bar, 8)
        mm_kernel[(1,)](x, w, h, x.numel())
        return h
"#;

    const LINKED_SNIPPETS: &[&str] = &[
        "h_ptr",
        "w_ptr",
        "tl.store(w_ptr + offs, h)\n        ",
        "_kernel",
        "step",
        "grid_barrier(bar_ptr, 1)\n    ",
        "# kernel-lsp: ignore\n",
        "  # kernel-lsp: ignore[KL004]",
        "@triton.jit\ndef ",
        "BLOCK = 96\n",
        "\n\n",
        "    tl.store(h_ptr, tl.relu(h))\n",
        "x.item()",
        "tl.arange(0, n)",
        "mm_kernel[(2,)](a, b, c, 8, BM=48)\n",
        "import triton.language as tk\n",
        "while k < n:\n        ",
        "BLOCK",
        "def ",
        "(",
        ":",
        "\n    ",
        "",
    ];

    /// Random edit batches through the path the server takes (`apply_changes`,
    /// then an analysis job from the previous snapshot) give, after every batch,
    /// the text, line index and analysis that a fresh parse and analysis of the
    /// same text give. Returns how many analyses took the kernel path, how
    /// many the host path, how many of those read some statement as a stub,
    /// and how many read a host function as a stub.
    fn random_edits(fixture: &str, snippets: &[&str], seeds: u64, versions: i32) -> (usize, usize, usize, usize) {
        let settings = Arc::new(Settings::default());
        let (mut incremental, mut host, mut stubbed, mut host_stubbed) = (0, 0, 0, 0);
        let mut syntax_errors = 0;
        for seed in 1..=seeds {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let encoding = if seed % 2 == 0 { Encoding::Utf8 } else { Encoding::Utf16 };
            let mut doc = Document::new(fixture, 0, settings.clone());
            let mut expected = fixture.to_string();
            for version in 1..=versions {
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
                    let insert = if rng.below(4) == 0 { "" } else { snippets[rng.below(snippets.len())] };
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
                // Sometimes the batch arrives as a client without incremental
                // sync sends it: the whole new text.
                if rng.below(5) == 0 {
                    changes = vec![TextDocumentContentChangeEvent {
                        range: None,
                        range_length: None,
                        text: expected.clone(),
                    }];
                }
                let warnings = doc.apply_changes(version, &changes, encoding);
                assert!(warnings.is_empty(), "seed {seed}: {warnings:?}");
                assert_eq!(doc.text(), expected, "seed {seed} version {version}");
                assert_eq!(*doc.line_index, LineIndex::new(&expected), "seed {seed} version {version}");
                // Sometimes two edits land before an analysis, as when typing fast.
                if rng.below(4) == 0 && version < versions {
                    continue;
                }
                let analysis = doc.analysis_job().run();
                incremental += usize::from(analysis.snapshot().path() == Path::Kernels);
                host += usize::from(analysis.snapshot().path() == Path::Host);
                stubbed += usize::from(analysis.snapshot().stubs() > 0);
                host_stubbed += usize::from(analysis.snapshot().host_stubs() > 0);
                assert!(doc.install(version, analysis));
                syntax_errors += usize::from(doc.result.diagnostics.iter().any(|d| d.code == "KL900"));
                // Exactly what a full analysis of the same tree gives. (After
                // some edits with syntax errors, tree-sitter's incremental
                // reparse recovers differently from a fresh parse of the same
                // text; the trees meet again once the errors are gone.)
                let tree = doc.tree.as_ref().expect("tree kept");
                let full = checker::check(&expected, tree, &settings);
                assert_eq!(doc.result, full, "seed {seed} version {version}\n{expected}");
                let fresh_tree = model::parse(&expected, None);
                if tree.root_node().to_sexp() == fresh_tree.root_node().to_sexp() {
                    assert_eq!(doc.result, checker::check(&expected, &fresh_tree, &settings), "seed {seed}");
                }
            }
            // With a syntax error left at the end, tree-sitter's incremental
            // reparse may still recover differently from a fresh parse: edit
            // back to the fixture (a whole-text change, diffed into an edit),
            // so that the trees must meet.
            if model::parse(&expected, None).root_node().has_error() {
                let back =
                    vec![TextDocumentContentChangeEvent { range: None, range_length: None, text: fixture.to_string() }];
                assert!(doc.apply_changes(versions + 1, &back, encoding).is_empty(), "seed {seed}");
                expected = fixture.to_string();
                let analysis = doc.analysis_job().run();
                assert!(doc.install(versions + 1, analysis));
            }
            let fresh_tree = model::parse(&expected, None);
            assert_eq!(
                doc.tree.as_ref().expect("tree kept").root_node().to_sexp(),
                fresh_tree.root_node().to_sexp(),
                "seed {seed}"
            );
            let fresh = checker::check(&expected, &fresh_tree, &settings);
            assert_eq!(doc.result, fresh, "seed {seed}");
        }
        // The edits break the syntax often: KL900 must have been compared too.
        assert!(syntax_errors > 0, "no analysis reported a syntax error");
        (incremental, host, stubbed, host_stubbed)
    }

    #[test]
    fn random_edits_match_a_fresh_analysis() {
        let (incremental, host, _, _) = random_edits(FIXTURE, SNIPPETS, 40, 30);
        assert!(incremental > 0, "no analysis took the kernel path");
        assert!(host > 0, "no analysis took the host path");
    }

    /// Edits that rename kernels, move definitions, change helpers, launches,
    /// module constants, imports and suppressions in a file whose definitions read each other.
    #[test]
    fn random_edits_across_linked_definitions_match_a_fresh_analysis() {
        let (incremental, host, stubbed, host_stubbed) = random_edits(LINKED, LINKED_SNIPPETS, 60, 30);
        eprintln!("linked: {incremental} kernel-path, {host} host-path analyses, {stubbed} with stubs, {host_stubbed} with host stubs");
        assert!(incremental > 0, "no analysis took the kernel path");
        assert!(host > 0, "no analysis took the host path");
        assert!(stubbed > 0, "no host-path analysis read a kernel as a stub");
        assert!(host_stubbed > 0, "no host-path analysis read a host function as a stub");
    }

    /// Replaces the first `old` after `anchor` with `new` and runs the analysis
    /// job; returns how the analysis was made, after checking it against a fresh analysis.
    fn edit_and_check(doc: &mut Document, version: i32, anchor: &str, old: &str, new: &str) -> Path {
        let text = doc.text().to_string();
        let at =
            text.find(anchor).expect("anchor") + text[text.find(anchor).expect("anchor")..].find(old).expect("old");
        let index = LineIndex::new(&text);
        let change = TextDocumentContentChangeEvent {
            range: Some(Range::new(
                position_of(&text, &index, at, Encoding::Utf16),
                position_of(&text, &index, at + old.len(), Encoding::Utf16),
            )),
            range_length: None,
            text: new.to_string(),
        };
        doc.apply_changes(version, &[change], Encoding::Utf16);
        let analysis = doc.analysis_job().run();
        let path = analysis.snapshot().path();
        doc.install(version, analysis);
        let fresh = checker::check(doc.text(), &model::parse(doc.text(), None), &Settings::default());
        assert_eq!(doc.result, fresh, "after replacing {old:?} with {new:?} at {anchor:?}");
        path
    }

    /// The cases the incremental path exists for take it, and stay exact:
    /// typing in a kernel (through a syntax error and out of it), then in
    /// another kernel while the first still has an error, and editing a helper
    /// kernel whose callers (a kernel, and a class whose method launches
    /// kernels in a time loop) must be checked again.
    #[test]
    fn typing_in_kernels_is_incremental_and_exact() {
        let mut doc = Document::new(LINKED, 0, Arc::new(Settings::default()));
        let anchor = "def mm_kernel";
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 1, anchor, "tl.dot(a, b)", "tl.dot(a, b) +"));
        assert!(doc.result.diagnostics.len() > 3);
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 2, anchor, "tl.dot(a, b) +", "tl.dot(a, b) + 1"));
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 3, anchor, "tl.dot(a, b) + 1", "tl.dot(a, b) +"));
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 4, "def step_kernel", "tl.tanh(acc)", "tl.tanh(acc * 2)"));
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 5, "def grid_barrier", "< target", "< target + 1"));
        assert_eq!(
            Path::Kernels,
            edit_and_check(&mut doc, 6, "def grid_barrier", "tl.atomic_add(bar_ptr, 1)", "tl.atomic_xchg(bar_ptr, 1)")
        );
        // Host code takes the host path; kernel names and imports are analysed afresh; all exactly.
        assert_eq!(Path::Host, edit_and_check(&mut doc, 7, "def run_step", "range(steps)", "range(h.size(0))"));
        assert_eq!(Path::Host, edit_and_check(&mut doc, 8, "def mm_kernel", "mm_kernel", "mm2_kernel"));
        assert_eq!(Path::Fresh, edit_and_check(&mut doc, 9, "import triton.language", "as tl", "as tk"));
    }

    /// A helper whose arange bound is a parameter, called from a kernel and
    /// through another helper: KL004 on the helper depends on what the callers pass.
    const HELPERS: &str = r#"import triton
import triton.language as tl


@triton.jit
def _tile(ptr, LEN):
    offs = tl.arange(0, LEN)
    return tl.load(ptr + offs)


@triton.jit
def _through(ptr, LEN):
    return _tile(ptr, LEN) * 2.0


@triton.jit
def caller(x_ptr, y_ptr, n, B: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, B), _tile(x_ptr, B))


@triton.jit
def other(x_ptr, y_ptr, n, B: tl.constexpr):
    tl.store(y_ptr + tl.arange(0, B), _through(x_ptr, B))


def run(x, y):
    caller[(1,)](x, y, x.numel(), B=64)
    other[(1,)](x, y, x.numel(), B=64)
"#;

    const HELPER_SNIPPETS: &[&str] = &["n", "B", "64", "_tile(x_ptr, n)", "_through(ptr, 8)", "\n    ", "(", ""];

    /// Editing a caller re-checks the helpers it calls (directly and through
    /// another helper): KL004 on `_tile` appears and goes as the caller passes
    /// a runtime value or a constexpr, incrementally and exactly.
    #[test]
    fn editing_a_caller_rechecks_its_helpers() {
        let kl004 = |doc: &Document| doc.result.diagnostics.iter().filter(|d| d.code == "KL004").count();
        let mut doc = Document::new(HELPERS, 0, Arc::new(Settings::default()));
        assert_eq!(kl004(&doc), 0);
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 1, "def caller", "_tile(x_ptr, B)", "_tile(x_ptr, n)"));
        assert_eq!(kl004(&doc), 1, "{:?}", doc.result.diagnostics);
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 2, "def caller", "_tile(x_ptr, n)", "_tile(x_ptr, B)"));
        assert_eq!(kl004(&doc), 0);
        // Through `_through`: `other` is two calls away from `_tile`'s arange.
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 3, "def other", "_through(x_ptr, B)", "_through(x_ptr, n)"));
        assert_eq!(kl004(&doc), 1, "{:?}", doc.result.diagnostics);
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 4, "def other", "_through(x_ptr, n)", "_through(x_ptr, B)"));
        assert_eq!(kl004(&doc), 0);
    }

    #[test]
    fn random_edits_of_helpers_and_callers_match_a_fresh_analysis() {
        let (incremental, host, _, _) = random_edits(HELPERS, HELPER_SNIPPETS, 40, 30);
        assert!(incremental > 0, "no analysis took the kernel path");
        assert!(host > 0, "no analysis took the host path");
    }

    /// A KernelBench candidate: `ModelNew`, launching helpers, and the host
    /// code the hygiene rules (KL101-KL109) read, so that random edits of host
    /// code go through the analysis a candidate gets.
    const CANDIDATE: &str = r#"import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gelu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x * tl.sigmoid(1.702 * x), mask=offs < n)


@triton.jit
def unused_kernel(x_ptr):
    tl.store(x_ptr, 1.0)


def run_gelu(x):
    y = torch.empty_like(x)
    n = x.numel()
    try:
        gelu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    except Exception:
        y = torch.nn.functional.gelu(x)
    return y


def run_steps(x, steps):
    for t in range(steps):
        x = run_gelu(x)
        if x.sum().item() > 0:
            break
    return x


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = None

    def forward(self, x):
        x = x.half()
        self.cache = run_steps(x, 4)
        return self.cache
"#;

    const CANDIDATE_SNIPPETS: &[&str] = &[
        "torch.cuda.synchronize()\n    ",
        "import os\n",
        "from .kernels import step\n",
        "time.perf_counter = lambda: 0.0\n",
        "return torch.nn.functional.gelu(x)\n        ",
        "s = torch.cuda.Stream()\n    ",
        "unused_kernel[(1,)](x)\n    ",
        "for i in range(4):\n        ",
        "x = x.float()\n        ",
        "try:\n        ",
        "except Exception:\n        pass\n",
        "run_gelu(x)",
        "eval(\"1\")\n    ",
        "os.environ[\"A\"] = \"1\"\n    ",
        "time.perf_counter = None\n    ",
        "gelu_kernel(x_ptr, y_ptr, n, BLOCK)\n    ",
        "x = tl.load(x_ptr + offs)\n    ",
        "self.cache",
        ".item()",
        "\n    ",
        "(",
        ":",
        "",
    ];

    /// Edits of a candidate (helpers, `forward`, imports, `try` statements,
    /// patches, and inside kernels what the hygiene rules also read there:
    /// `eval`, `os.environ`, timer patches, kernels calling kernels) match a
    /// fresh analysis.
    #[test]
    fn random_edits_of_a_candidates_host_code_match_a_fresh_analysis() {
        let (incremental, host, stubbed, host_stubbed) = random_edits(CANDIDATE, CANDIDATE_SNIPPETS, 60, 30);
        eprintln!("candidate: {incremental} kernel-path, {host} host-path analyses, {stubbed} with stubs, {host_stubbed} with host stubs");
        assert!(host > 0, "no analysis took the host path");
        assert!(stubbed > 0, "no host-path analysis read a kernel as a stub");
        assert!(host_stubbed > 0, "no host-path analysis read a host function as a stub");
        // Edits inside kernels still take the incremental path in a candidate.
        assert!(incremental > 0, "no analysis took the incremental path");
    }

    /// In a candidate, typing in a kernel stays on the kernel path, and what
    /// the hygiene rules read or report inside kernels is analysed again: an
    /// `eval` or a timer patch typed into a kernel, an import edited, a kernel
    /// that carries KL103 (nothing `forward` reaches launches). Those take
    /// the host path (an import, a fresh analysis).
    #[test]
    fn hygiene_inside_a_candidates_kernels_is_analysed_afresh() {
        let with_imports = CANDIDATE.replacen("import torch\n", "import time\nimport torch\n", 1);
        let mut doc = Document::new(&with_imports, 0, Arc::new(Settings::default()));
        let count = |doc: &Document, code: &str| doc.result.diagnostics.iter().filter(|d| d.code == code).count();
        let kernel = "def gelu_kernel";
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 1, kernel, "1.702 * x", "1.7 * x"));
        assert_eq!(
            Path::Host,
            edit_and_check(&mut doc, 2, kernel, "    x = tl.load", "    eval(\"1\")\n    x = tl.load")
        );
        assert_eq!(count(&doc, "KL108"), 1, "{:?}", doc.result.diagnostics);
        assert_eq!(Path::Host, edit_and_check(&mut doc, 3, kernel, "    eval(\"1\")\n", ""));
        assert_eq!(count(&doc, "KL108"), 0);
        assert_eq!(
            Path::Host,
            edit_and_check(&mut doc, 4, kernel, "    x = tl.load", "    time.perf_counter = None\n    x = tl.load")
        );
        assert_eq!(count(&doc, "KL107"), 1, "{:?}", doc.result.diagnostics);
        assert_eq!(Path::Host, edit_and_check(&mut doc, 5, kernel, "    time.perf_counter = None\n", ""));
        assert_eq!(count(&doc, "KL107"), 0);
        assert_eq!(Path::Fresh, edit_and_check(&mut doc, 6, "import time", "import time", "import tim"));
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 7, kernel, "1.7 * x", "1.702 * x"));
        // `forward` stops launching: KL103 on both kernels' names, which typing
        // in a kernel must not drop.
        assert_eq!(Path::Host, edit_and_check(&mut doc, 8, "def forward", "run_steps(x, 4)", "x * 2"));
        assert_eq!(count(&doc, "KL103"), 2, "{:?}", doc.result.diagnostics);
        assert_eq!(Path::Host, edit_and_check(&mut doc, 9, kernel, "1.702 * x", "1.7 * x"));
        assert_eq!(count(&doc, "KL103"), 2, "{:?}", doc.result.diagnostics);
    }

    /// On the host path KL107 and KL108 are asked of the changed statements
    /// only: a helper read as it was keeps its findings, moved with it (an
    /// edit above it adds a line), and a changed helper is asked again.
    #[test]
    fn host_edits_keep_the_hygiene_findings_of_unchanged_statements() {
        let text = CANDIDATE.replacen("import torch\n", "import time\nimport torch\n", 1).replacen(
            "    for t in range(steps):\n",
            "    eval(\"1\")\n    time.perf_counter = None\n    for t in range(steps):\n",
            1,
        );
        let mut doc = Document::new(&text, 0, Arc::new(Settings::default()));
        let count = |doc: &Document, code: &str| doc.result.diagnostics.iter().filter(|d| d.code == code).count();
        let line_of = |doc: &Document, code: &str| {
            doc.result.diagnostics.iter().find(|d| d.code == code).map(|d| doc.line_index().line_of(d.range.start))
        };
        assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (1, 1), "{:?}", doc.result.diagnostics);
        let (kl107_line, kl108_line) = (line_of(&doc, "KL107"), line_of(&doc, "KL108"));
        let helper = "def run_gelu";
        assert_eq!(
            Path::Host,
            edit_and_check(&mut doc, 1, helper, "    n = x.numel()\n", "    n = x.numel()\n    m = n\n")
        );
        assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (1, 1));
        assert_eq!(line_of(&doc, "KL107"), kl107_line.map(|l| l + 1));
        assert_eq!(line_of(&doc, "KL108"), kl108_line.map(|l| l + 1));
        assert_eq!(Path::Host, edit_and_check(&mut doc, 2, "def run_steps", "    eval(\"1\")\n", ""));
        assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (1, 0));
        assert_eq!(Path::Host, edit_and_check(&mut doc, 3, "def forward", "x.half()", "x.half() + 0"));
        assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (1, 0));
        assert_eq!(Path::Host, edit_and_check(&mut doc, 4, "def run_steps", "    time.perf_counter = None\n", ""));
        assert_eq!((count(&doc, "KL107"), count(&doc, "KL108")), (0, 0));
    }

    /// KL001 at a launch site reads what the launched kernel stores and loads
    /// (whether the loop carries state) and its parameters: a kernel edit that
    /// changes those is analysed afresh, and KL001 follows.
    #[test]
    fn kl001_follows_what_the_launched_kernel_stores() {
        let src = r#"import torch
import triton
import triton.language as tl


@triton.jit
def step(x_ptr, h_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    h = tl.load(h_ptr + offs)
    x = tl.load(x_ptr + offs)
    tl.store(out_ptr + offs, h + x)


def run(x, h, T):
    out = torch.empty_like(h)
    for t in range(T):
        step[(1,)](x[t], h, out, h.numel(), BLOCK=64)
        h, out = out, h
    return h
"#;
        let mut doc = Document::new(src, 0, Arc::new(Settings::default()));
        let kl001 = |doc: &Document| doc.result.diagnostics.iter().filter(|d| d.code == "KL001").count();
        assert_eq!(kl001(&doc), 1, "{:?}", doc.result.diagnostics);
        edit_and_check(&mut doc, 1, "def step", "tl.store(out_ptr + offs, h + x)", "tl.store(x_ptr + offs, h + x)");
        edit_and_check(&mut doc, 2, "def step", "tl.store(x_ptr + offs, h + x)", "tl.store(out_ptr + offs, h + x)");
        assert_eq!(kl001(&doc), 1);
        edit_and_check(&mut doc, 3, "def step", "    tl.store(out_ptr + offs, h + x)\n", "");
        edit_and_check(
            &mut doc,
            4,
            "def step",
            "    x = tl.load(x_ptr + offs)\n",
            "    x = tl.load(x_ptr + offs)\n    tl.store(out_ptr + offs, h + x)\n",
        );
        assert_eq!(kl001(&doc), 1);
        // No longer reading `h`: the loop carries no state, and KL001 goes.
        assert_ne!(
            Path::Kernels,
            edit_and_check(&mut doc, 5, "def step", "h = tl.load(h_ptr + offs)", "h = tl.load(x_ptr + offs)")
        );
        assert_eq!(kl001(&doc), 0, "{:?}", doc.result.diagnostics);
        assert_ne!(
            Path::Kernels,
            edit_and_check(&mut doc, 6, "def step", "h = tl.load(x_ptr + offs)", "h = tl.load(h_ptr + offs)")
        );
        assert_eq!(kl001(&doc), 1);
        // The parameters renamed: the launch's arguments map to other names.
        assert_ne!(
            Path::Kernels,
            edit_and_check(&mut doc, 7, "def step", "x_ptr, h_ptr, out_ptr", "h_ptr, x_ptr, out_ptr")
        );
        // Typing that leaves loads, stores and parameters alone stays incremental.
        assert_eq!(Path::Kernels, edit_and_check(&mut doc, 8, "def step", "h + x)", "h + x * 2)"));
    }

    /// The random-edit property over every rule's fixture (each a kernel
    /// file or a candidate that fires its rule), with edits that change what
    /// rules read across statements: pointers loaded and stored, parameters,
    /// constexpr annotations, launches, loops, syncs, imports.
    #[test]
    fn random_edits_of_every_rule_fixture_match_a_fresh_analysis() {
        const GENERIC: &[&str] = &[
            "tl.load(x_ptr + offs)",
            "tl.store(out_ptr + offs, x)\n    ",
            "_ptr",
            ": tl.constexpr",
            "BLOCK",
            "for t in range(T):\n        ",
            ".item()",
            "import os\n",
            "[(1,)](",
            "\n    ",
            "(",
            "",
        ];
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rules");
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .expect("fixtures")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "py"))
            .collect();
        paths.sort();
        assert!(paths.len() >= 20, "{} fixtures", paths.len());
        let (mut incremental, mut host, mut stubbed, mut host_stubbed) = (0, 0, 0, 0);
        for path in &paths {
            let text = std::fs::read_to_string(path).expect("fixture");
            let (kernels, host_path, with_stubs, with_host_stubs) = random_edits(&text, GENERIC, 6, 20);
            incremental += kernels;
            host += host_path;
            stubbed += with_stubs;
            host_stubbed += with_host_stubs;
        }
        eprintln!(
            "rule fixtures: {incremental} kernel-path, {host} host-path analyses, {stubbed} with stubs, {host_stubbed} with host stubs"
        );
        assert!(stubbed > 0, "no host-path analysis read a kernel as a stub");
        assert!(host_stubbed > 0, "no host-path analysis read a host function as a stub");
        assert!(incremental > 0, "no analysis took the kernel path");
        assert!(host > 0, "no analysis took the host path");
    }

    /// KL004's pad-and-mask fix is verified by parsing what it edits: the
    /// kernel's statement and its launch sites', not the whole file (which
    /// made the fix depend on every statement: a syntax error typed anywhere
    /// took it away, and a kernel the host path reads as a stub kept it). A
    /// syntax error typed in unrelated host code takes the host path, keeps
    /// both fixes, and equals a fresh analysis.
    #[test]
    fn a_syntax_error_in_host_code_leaves_the_fixes_of_other_kernels() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rules/KL004.py")).unwrap();
        let mut doc = Document::new(&text, 0, Arc::new(Settings::default()));
        let padded = |doc: &Document| {
            let pad =
                |d: &&crate::diagnostic::Diagnostic| d.fix.as_ref().is_some_and(|f| f.title.starts_with("Pad to"));
            doc.result.diagnostics.iter().filter(pad).count()
        };
        assert_eq!(padded(&doc), 2);
        let mut version = 0;
        for bad in ["n = x.numel() $", "n = = x.numel()", "n = x.numel()]"] {
            version += 1;
            assert_eq!(Path::Host, edit_and_check(&mut doc, version, "def launch(x)", "n = x.numel()", bad));
            assert!(doc.result.diagnostics.iter().any(|d| d.code == "KL900"), "{bad}");
            assert_eq!(padded(&doc), 2, "{bad}");
            version += 1;
            assert_eq!(Path::Host, edit_and_check(&mut doc, version, "def launch(x)", bad, "n = x.numel()"));
            assert_eq!(padded(&doc), 2);
        }
    }

    #[test]
    fn changed_span_stops_on_character_boundaries() {
        assert_eq!(changed_span("abcdef", "abXdef"), (2, 3, 3));
        assert_eq!(changed_span("abc", "abc"), (3, 3, 3));
        assert_eq!(changed_span("aaa", "aaaa"), (3, 3, 4));
        assert_eq!(changed_span("", "x"), (0, 0, 1));
        assert_eq!(changed_span("x = 1\n", ""), (0, 6, 0));
        // 'é' (c3 a9) and 'è' (c3 a8) share their first byte; 'Ѐ' (d0 80) and 'Ā' (c4 80) their last.
        assert_eq!(changed_span("aéb", "aèb"), (1, 3, 3));
        assert_eq!(changed_span("aЀb", "aĀb"), (1, 3, 3));
    }

    /// A client that sends the whole text on every change (no incremental
    /// sync) still gets the incremental analysis, with the exact result.
    #[test]
    fn full_text_changes_are_diffed_into_edits() {
        let mut doc = Document::new(LINKED, 0, Arc::new(Settings::default()));
        let full = |doc: &mut Document, version: i32, text: String| {
            let change = TextDocumentContentChangeEvent { range: None, range_length: None, text };
            doc.apply_changes(version, &[change], Encoding::Utf16);
            assert!(doc.reparsed_incrementally(), "version {version}: the recovered edit reparses from the old tree");
            let analysis = doc.analysis_job().run();
            let incremental = analysis.snapshot().is_incremental();
            doc.install(version, analysis);
            let fresh = checker::check(doc.text(), &model::parse(doc.text(), None), &Settings::default());
            assert_eq!(doc.result, fresh, "version {version}");
            incremental
        };
        let typed = LINKED.replacen("tl.dot(a, b)", "tl.dot(a, b) +", 1);
        assert!(full(&mut doc, 1, typed.clone()));
        assert_eq!(doc.text(), typed);
        let fixed = LINKED.replacen("tl.dot(a, b)", "tl.dot(a, b) + 1", 1);
        assert!(full(&mut doc, 2, fixed.clone()));
        assert_eq!(doc.text(), fixed);
        // Unchanged text, then a whole different file: still exact.
        assert!(full(&mut doc, 3, fixed.clone()));
        assert!(!full(&mut doc, 4, FIXTURE.to_string()));
        assert_eq!(doc.text(), FIXTURE);
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
