//! One open document: its text, the tree-sitter trees kept in step with every
//! edit (a [`Forest`]: a large file is several trees), and the last analysis.
//!
//! Every change goes through [`Document::apply_changes`]: each LSP change is
//! applied to the text and the line index, turned into a tree-sitter
//! `InputEdit` and applied to the old trees, and the file is reparsed once
//! from them: only the chunks the edits touched are read again, and
//! tree-sitter reuses what the edits did not touch in them. The
//! analysis then starts from the snapshot of the previous one and re-reads
//! only the top-level statements that changed (`checker::analyze`).
//! Positions are clamped, never trusted: a client with a bad range gets a
//! warning in the log, not a dead server.

use std::sync::Arc;

use tower_lsp_server::ls_types::{Position, Range, TextDocumentContentChangeEvent};
use tree_sitter::InputEdit;

use crate::checker::CheckResult;
use crate::checker::{self, Snapshot};
use crate::config::Settings;
use crate::model::{self, Forest};
use crate::text::{changed_span, LineIndex, TextRange};

use super::convert::Encoding;
use super::semantic::Semantic;

pub struct Document {
    pub version: i32,
    /// Shared with a running analysis job rather than copied.
    text: Arc<str>,
    line_index: Arc<LineIndex>,
    /// Kept only for recently edited documents (see `State::touch`): a tree of
    /// a 5,000-line file is several MB, and incremental reparsing only pays
    /// off for the file being typed in. Without one, the next change parses afresh.
    tree: Option<Forest>,
    /// Where statements with a bracket left open were masked when `tree`
    /// was parsed (`model::recovery`): the next reparse reads again the
    /// lines whose masking changes.
    scanned: model::recovery::Scanned,
    pub settings: Arc<Settings>,
    /// The analysis of version `analyzed`; after an edit it lags until the
    /// background analysis of the new version lands.
    pub result: CheckResult,
    analyzed: i32,
    /// Tells readers waiting for an analysis (`Document::analyzed_changes`)
    /// each version whose analysis is installed.
    analyzed_tx: tokio::sync::watch::Sender<i32>,
    /// What the next analysis starts from; kept, like the tree, only for recently edited documents.
    snapshot: Option<Arc<Snapshot>>,
    /// Whether the last change was reparsed from the edited old tree.
    reparsed_incrementally: bool,
    /// The semantic snapshot of this version, made for the first reader that asks.
    semantic: std::sync::OnceLock<Arc<Semantic>>,
    /// The edits made since the text `result` describes, in order (byte
    /// start, old end, new end): a hover reads `result` through them rather
    /// than wait for the next analysis (`Document::analysis_at`).
    moved: Vec<Moved>,
    /// The last outline a reader had built and the edits since, for the next version's snapshot.
    seed: Option<super::semantic::Seed>,
    /// How long the last analysis installed from an edit took, which decides
    /// where the next one runs (`server/did_change.rs`).
    pub(crate) analysis_took: Option<std::time::Duration>,
}

/// One edit as bytes: `start..old_end` of the text before became `start..new_end`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Moved {
    pub(crate) start: usize,
    pub(crate) old_end: usize,
    pub(crate) new_end: usize,
    /// Whether it changed only the middle of one line: after the line's
    /// first token, no line break, quote, backslash, bracket, `#` or
    /// `import` removed or typed. Such an edit leaves every other line's
    /// structure as it was.
    pub(crate) in_line: bool,
}

impl Moved {
    /// `start..old_end` of `text` (before the edit) replaced by `new_text`.
    fn of(text: &str, start: usize, old_end: usize, new_text: &str) -> Moved {
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        // A bracket or `#` may open or close a statement's bracket, which masks
        // or unmasks the lines after it (`model::recovery`).
        let plain = |t: &str| {
            !t.contains(['\n', '\r', '"', '\'', '\\', '#', '(', ')', '[', ']', '{', '}']) && !t.contains("import")
        };
        let in_line = text[line_start..start].contains(|c: char| !c.is_whitespace())
            && plain(&text[start..old_end])
            && plain(new_text);
        Moved { start, old_end, new_end: start + new_text.len(), in_line }
    }

    /// Where `pos` of the text before this edit is after it (inside the replaced text: its start).
    fn forward(self, pos: usize) -> usize {
        if pos >= self.old_end {
            pos - self.old_end + self.new_end
        } else {
            pos.min(self.start)
        }
    }
}

/// What the last analysis says at one offset of the current text (`Document::analysis_at`).
#[derive(Debug, Default)]
pub struct AnalysisAt {
    /// The diagnostics on the offset's line, their ranges in the current text.
    pub diagnostics: Vec<crate::diagnostic::Diagnostic>,
    /// Whether the offset is inside `class ModelNew`.
    pub in_model_new: bool,
}

/// What the analysis of one version needs, taken under the state lock and
/// analysed outside it.
pub struct AnalysisJob {
    pub version: i32,
    text: Arc<str>,
    line_index: Arc<LineIndex>,
    tree: Forest,
    settings: Arc<Settings>,
    previous: Option<Arc<Snapshot>>,
}

/// A tree and snapshot taken from a document, freed when this is dropped.
pub struct Evicted {
    _tree: Option<Forest>,
    _snapshot: Option<Arc<Snapshot>>,
    _semantic: Option<Arc<Semantic>>,
}

/// What an installed analysis replaced, freed where it is dropped.
pub struct Replaced {
    _result: CheckResult,
    _snapshot: Option<Arc<Snapshot>>,
}

/// The outcome of an [`AnalysisJob`], for [`Document::install_replacing`].
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
                checker::analyze(&self.text, &self.tree, &self.settings, &self.line_index, previous)
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
        let scanned = model::recovery::scanned(text);
        let line_index = LineIndex::new(text);
        let mut tree = Forest::parse_indexed(text, &scanned, &line_index);
        tree.warm(text, &scanned, &line_index);
        let text: Arc<str> = Arc::from(text);
        let (result, snapshot) = checker::analyze(&text, &tree, &settings, &line_index, None);
        Document {
            version,
            text,
            line_index: Arc::new(line_index),
            tree: Some(tree),
            scanned,
            settings,
            result,
            analyzed: version,
            analyzed_tx: tokio::sync::watch::Sender::new(version),
            snapshot: Some(Arc::new(snapshot)),
            reparsed_incrementally: false,
            semantic: Default::default(),
            moved: Vec::new(),
            seed: None,
            analysis_took: None,
        }
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text, shared (for work done after the state lock is let go).
    pub(crate) fn shared_text(&self) -> Arc<str> {
        self.text.clone()
    }

    pub(crate) fn line_index(&self) -> &LineIndex {
        &self.line_index
    }

    /// Applies the changes of one `didChange` in order and reparses
    /// incrementally; the analysis runs separately (`analysis_job`, then
    /// `install`). Returns warnings about ranges it had to clamp.
    pub(crate) fn apply_changes(
        &mut self,
        version: i32,
        changes: &[TextDocumentContentChangeEvent],
        encoding: Encoding,
    ) -> Vec<String> {
        let mut warnings = Vec::new();
        let mut full_reparse = false;
        let before = self.moved.len();
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
                    self.moved.push(Moved {
                        start: 0,
                        old_end: text.len(),
                        new_end: change.text.len(),
                        in_line: false,
                    });
                    text = change.text.clone();
                    *index = LineIndex::new(&text);
                    full_reparse = true;
                }
                None => {
                    let (start, old_end, new_end) = changed_span(&text, &change.text);
                    let moved =
                        apply_bytes(&mut text, index, self.tree.as_mut(), start, old_end, &change.text[start..new_end]);
                    self.moved.push(moved);
                }
                Some(range) => {
                    let (moved, warning) =
                        apply_ranged(&mut text, index, self.tree.as_mut(), range, &change.text, encoding);
                    self.moved.push(moved);
                    warnings.extend(warning);
                }
            }
        }
        self.version = version;
        self.text = Arc::from(text);
        let edits: Vec<(usize, usize, usize)> =
            self.moved[before..].iter().map(|m| (m.start, m.old_end, m.new_end)).collect();
        let old = self.tree.take().filter(|_| !full_reparse);
        self.reparsed_incrementally = old.is_some();
        let (tree, scanned, masking_changed) = match old {
            Some(mut tree) => {
                let (scanned, masking_changed) = tree.reparse(&self.text, &self.scanned, &edits, &self.line_index);
                (tree, scanned, masking_changed)
            }
            None => {
                let scanned = model::recovery::scanned(&self.text);
                (Forest::parse_indexed(&self.text, &scanned, &self.line_index), scanned, true)
            }
        };
        self.tree = Some(tree);
        self.scanned = scanned;
        if masking_changed {
            // A bracket left open moved where a statement is cut: other lines changed shape.
            for m in &mut self.moved[before..] {
                m.in_line = false;
            }
        }
        // The outline a reader built for the version before seeds the next one's.
        if let Some(outline) = self.semantic.get().and_then(|s| s.built()) {
            self.seed = Some(super::semantic::Seed { outline, moved: Vec::new() });
        }
        let these = &self.moved[before..];
        if let Some(seed) = &mut self.seed {
            seed.moved.extend_from_slice(these);
        }
        if self.seed.as_ref().is_some_and(|s| s.moved.len() > super::semantic::SEED_EDITS) {
            self.seed = None;
        }
        self.semantic = Default::default();
        warnings
    }

    /// Whether the last `apply_changes` reparsed from the edited old tree
    /// (tree-sitter reusing what the edit did not touch) rather than afresh.
    pub(crate) fn reparsed_incrementally(&self) -> bool {
        self.reparsed_incrementally
    }

    /// The analysis of the current version, to run off the state lock.
    pub(crate) fn analysis_job(&self) -> AnalysisJob {
        AnalysisJob {
            version: self.version,
            text: self.text.clone(),
            line_index: self.line_index.clone(),
            tree: self.tree.clone().unwrap_or_else(|| model::parse_forest(&self.text)),
            settings: self.settings.clone(),
            previous: self.snapshot.clone(),
        }
    }

    /// [`Self::install_replacing`], dropping what it replaced.
    #[cfg(test)]
    pub fn install(&mut self, version: i32, analysis: Analysis) -> bool {
        self.install_replacing(version, analysis).is_some()
    }

    /// Installs the result of a job if the document is still at its version
    /// and its settings (a settings change re-analyses the document at once:
    /// a job started before it must not put the old settings' result back).
    /// Hands back what it replaced (`None` if it was not installed), for the
    /// caller to free after it has published: a large file's old result is
    /// hundreds of diagnostics.
    pub(crate) fn install_replacing(&mut self, version: i32, analysis: Analysis) -> Option<Replaced> {
        // The same `Arc` unless the settings changed since the job started: no deep comparison per edit.
        let same_settings = Arc::ptr_eq(&analysis.settings, &self.settings) || *analysis.settings == *self.settings;
        if version != self.version || !same_settings {
            return None;
        }
        let result = std::mem::replace(&mut self.result, analysis.result);
        self.set_analyzed(version);
        let snapshot =
            std::mem::replace(&mut self.snapshot, analysis.snapshot.filter(|_| self.tree.is_some()).map(Arc::new));
        Some(Replaced { _result: result, _snapshot: snapshot })
    }

    fn set_analyzed(&mut self, version: i32) {
        self.analyzed = version;
        self.moved.clear();
        self.analyzed_tx.send_replace(version);
    }

    /// The versions whose analysis is installed, from now on: a reader awaits
    /// the one it needs instead of polling (closed when the document is).
    pub(crate) fn analyzed_changes(&self) -> tokio::sync::watch::Receiver<i32> {
        self.analyzed_tx.subscribe()
    }

    /// Whether `result` describes the current text.
    pub(crate) fn is_analyzed(&self) -> bool {
        self.analyzed == self.version
    }

    /// Re-runs the analysis on the current text from scratch (after a settings change).
    pub(crate) fn reanalyze(&mut self) {
        let tree = match self.tree.take() {
            Some(tree) => tree,
            None => {
                self.scanned = model::recovery::scanned(&self.text);
                Forest::parse_indexed(&self.text, &self.scanned, &self.line_index)
            }
        };
        let (result, snapshot) = checker::analyze(&self.text, &tree, &self.settings, &self.line_index, None);
        self.result = result;
        self.set_analyzed(self.version);
        self.snapshot = Some(Arc::new(snapshot));
        self.tree = Some(tree);
    }

    /// Takes away the tree (and the analysis snapshot) of a document nobody
    /// is typing in; the caller frees them, outside the state lock (freeing
    /// the tree of a 5,000-line file takes ~15 ms).
    pub(crate) fn take_tree(&mut self) -> Evicted {
        let semantic = std::mem::take(&mut self.semantic).into_inner();
        Evicted { _tree: self.tree.take(), _snapshot: self.snapshot.take(), _semantic: semantic }
    }

    /// The semantic snapshot of the current version (text, tree, facts), for
    /// readers to use after they let go of the state lock.
    pub(crate) fn semantic(&self) -> Arc<Semantic> {
        self.semantic
            .get_or_init(|| {
                Arc::new(Semantic::seeded(self.version, self.text.clone(), self.tree.clone(), self.seed.clone()))
            })
            .clone()
    }

    /// What the last analysis says at `offset` of the current text, read
    /// through the edits made since it: `None` when `offset`'s line was
    /// edited since, or a finding on it covers text edited since (only the
    /// next analysis can tell), else its diagnostics on that line, moved to
    /// the current text. A diagnostic the next
    /// analysis adds on an unedited line is not there yet: it is published
    /// when that analysis lands.
    pub(crate) fn analysis_at(&self, offset: usize) -> Option<AnalysisAt> {
        let offset = offset.min(self.text.len());
        let line_start = self.text[..offset].rfind('\n').map_or(0, |i| i + 1);
        let line_end = self.text[offset..].find('\n').map_or(self.text.len(), |i| offset + i);
        // Where the edits since the analysis are in the current text (each moved by the later ones).
        let mut edited: Vec<(usize, usize)> = Vec::new();
        for m in &self.moved {
            for span in &mut edited {
                *span = (m.forward(span.0), m.forward(span.1));
                if span.0 <= m.new_end && m.start <= span.1 {
                    *span = (span.0.min(m.start), span.1.max(m.new_end));
                }
            }
            edited.push((m.start, m.new_end));
        }
        if edited.iter().any(|&(a, b)| a <= line_end && line_start <= b) {
            return None;
        }
        let moved = |r: TextRange| {
            let (a, b) = self.moved.iter().fold((r.start, r.end), |(a, b), m| (m.forward(a), m.forward(b)));
            TextRange::new(a, b.max(a))
        };
        let mut diagnostics = Vec::new();
        for d in &self.result.diagnostics {
            let range = moved(d.range);
            if range.start <= line_end && line_start <= range.end {
                // A finding over text edited since (a loop whose body changed): the next analysis decides.
                if edited.iter().any(|&(a, b)| a <= range.end && range.start <= b) {
                    return None;
                }
                let mut d = d.clone();
                d.range = range;
                diagnostics.push(d);
            }
        }
        let in_model_new = self.result.classes.iter().any(|c| c.name == "ModelNew" && moved(c.range).contains(offset));
        Some(AnalysisAt { diagnostics, in_model_new })
    }

    /// Byte offset of an LSP position in the current text (clamped).
    pub fn offset(&self, position: Position, encoding: Encoding) -> usize {
        self.line_index.offset(&self.text, position.line as usize, position.character as usize, encoding.unit())
    }

    pub fn range(&self, range: TextRange, encoding: Encoding) -> Range {
        super::convert::range(&self.text, &self.line_index, range, encoding)
    }

    /// What navigation reads, taken under the state lock and read outside
    /// it: the text, its line index and the tree kept for it (none for a
    /// document not edited lately: the reader parses the text).
    pub fn syntax(&self) -> super::navigation::Source {
        super::navigation::Source {
            text: self.text.clone(),
            line_index: self.line_index.clone(),
            tree: self.tree.clone(),
        }
    }

    /// The text of the 0-based line `line`, without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let start = self.line_index.line_start(line);
        let rest = &self.text[start.min(self.text.len())..];
        rest.split('\n').next().unwrap_or("")
    }
}

/// The trees kept for a document.
type Trees<'d> = Option<&'d mut Forest>;

/// Applies one ranged change to `text`, its line index and (when kept) the trees.
fn apply_ranged(
    text: &mut String,
    index: &mut LineIndex,
    tree: Trees,
    range: Range,
    new_text: &str,
    encoding: Encoding,
) -> (Moved, Option<String>) {
    let (mut start, clamped_start) = byte_of(text, index, range.start, encoding);
    let (mut end, clamped_end) = byte_of(text, index, range.end, encoding);
    let mut warning = (clamped_start || clamped_end).then(|| format!("clamped change range {range:?} to the document"));
    if start > end {
        std::mem::swap(&mut start, &mut end);
        warning = Some(format!("change range {range:?} ends before it starts; applied it reversed"));
    }
    (apply_bytes(text, index, tree, start, end, new_text), warning)
}

/// Replaces the bytes `start..end` of `text` with `new_text`, keeping the line
/// index and (when kept) the trees in step.
fn apply_bytes(
    text: &mut String,
    index: &mut LineIndex,
    trees: Trees,
    start: usize,
    end: usize,
    new_text: &str,
) -> Moved {
    let moved = Moved::of(text, start, end, new_text);
    let start_position = model::recovery::point(index, start);
    let old_end_position = model::recovery::point(index, end);
    text.replace_range(start..end, new_text);
    index.edit(start, end, new_text);
    let new_end = start + new_text.len();
    let new_end_position = model::recovery::point(index, new_end);
    if let Some(tree) = trees {
        let edit = InputEdit {
            start_byte: start,
            old_end_byte: end,
            new_end_byte: new_end,
            start_position,
            old_end_position,
            new_end_position,
        };
        tree.edit(&edit);
    }
    moved
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker;
    use crate::checker::tests::{FIXTURE, LINKED};
    use crate::xorshift::Rng;

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
        let fresh = checker::check(doc.text(), &model::parse_forest(doc.text()), &Settings::default());
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
        let fresh = checker::check(doc.text(), &model::parse_forest(doc.text()), &Settings::default());
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

    /// A hover reads the last analysis through the edits made since it: a
    /// finding on a line nobody edited moves with the text; on an edited line
    /// nothing is answered until the next analysis lands.
    #[test]
    fn the_last_analysis_is_read_through_the_edits_since() {
        let mut doc = Document::new(FIXTURE, 1, Arc::new(Settings::default()));
        let old = doc.result.diagnostics.iter().find(|d| d.code == "KL005").expect("a KL005 in the fixture").clone();
        let old_text = FIXTURE[old.range.start..old.range.end].to_string();
        let added = "# one\n# two\n";
        for (k, piece) in ["# one\n", "# two\n"].into_iter().enumerate() {
            let at = Position::new(k as u32, 0);
            let change = TextDocumentContentChangeEvent {
                range: Some(Range::new(at, at)),
                range_length: None,
                text: piece.into(),
            };
            doc.apply_changes(2 + k as i32, &[change], Encoding::Utf16);
        }
        assert!(!doc.is_analyzed());
        let offset = old.range.start + added.len();
        let at = doc.analysis_at(offset).expect("the finding's line was not edited");
        let moved = at.diagnostics.iter().find(|d| d.code == "KL005").expect("the finding, moved");
        assert_eq!(moved.range, TextRange::new(old.range.start + added.len(), old.range.end + added.len()));
        assert_eq!(&doc.text()[moved.range.start..moved.range.end], old_text);
        assert!(doc.analysis_at(1).is_none(), "the first line was edited since the analysis");
        assert!(doc.analysis_at(added.len() - 1).is_none(), "the second too");
        let job = doc.analysis_job();
        assert!(doc.install(3, job.run()));
        assert!(doc.analysis_at(1).is_some());
        assert_eq!(
            doc.analysis_at(offset).expect("analysed").diagnostics.iter().filter(|d| d.code == "KL005").count(),
            1
        );
    }

    /// Under random edits, every finding `analysis_at` answers with covers
    /// the same text it covered in the analysed version.
    #[test]
    fn findings_read_through_random_edits_cover_the_text_they_covered() {
        const SNIPPETS: &[&str] = &["x", " ", "\n", "tl.tanh(", ")", "é", "    ", ""];
        for seed in 1..=8u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut doc = Document::new(FIXTURE, 1, Arc::new(Settings::default()));
            let analysed = doc.text().to_string();
            let findings: Vec<(String, String)> = doc
                .result
                .diagnostics
                .iter()
                .map(|d| (d.code.to_string(), analysed[d.range.start..d.range.end].to_string()))
                .collect();
            for version in 2..6 {
                let len = doc.text().len();
                let start = char_boundary(doc.text(), rng.below(len + 1));
                let end = char_boundary(doc.text(), (start + rng.below(8)).min(len)).max(start);
                replace_bytes(&mut doc, version, start, end, SNIPPETS[rng.below(SNIPPETS.len())]);
            }
            let text = doc.text().to_string();
            for offset in (0..text.len()).step_by(97).filter(|&o| text.is_char_boundary(o)) {
                let Some(at) = doc.analysis_at(offset) else { continue };
                for d in &at.diagnostics {
                    let now = &text[d.range.start..d.range.end];
                    assert!(
                        findings.iter().any(|(code, was)| *code == d.code && was == now),
                        "seed {seed}: {} now covers {now:?}",
                        d.code
                    );
                }
            }
        }
    }

    /// Replaces the bytes `start..end` of the document's text with `text`, as a ranged change.
    fn replace_bytes(doc: &mut Document, version: i32, start: usize, end: usize, text: &str) {
        let index = LineIndex::new(doc.text());
        let range = Range::new(
            position_of(doc.text(), &index, start, Encoding::Utf8),
            position_of(doc.text(), &index, end, Encoding::Utf8),
        );
        let change = TextDocumentContentChangeEvent { range: Some(range), range_length: None, text: text.to_string() };
        doc.apply_changes(version, &[change], Encoding::Utf8);
    }

    /// What a reader sees of an outline, for comparing a moved one with one built afresh.
    fn outline_view(f: &super::super::semantic::Facts) -> String {
        let jit: Vec<String> = f
            .jit
            .iter()
            .map(|j| {
                let ps: Vec<_> = j.params.iter().map(|p| (p.name.clone(), p.constexpr, p.default.clone())).collect();
                format!("{} {:?} {:?} {} {ps:?}", j.name, j.name_range, j.range, j.body_start)
            })
            .collect();
        format!("{jit:?} {:?} {:?} {:?} {}", f.tl_aliases, f.triton_aliases, f.constexpr_globals, f.top_level)
    }

    /// A character typed inside a kernel's body moves the last outline
    /// instead of building it again, and the moved outline is the one a
    /// fresh build gives; under random edits, whenever the outline is moved
    /// it equals a fresh build.
    #[test]
    fn the_outline_moves_through_edits_inside_a_kernel_body() {
        let settings = Arc::new(Settings::default());
        let mut doc = Document::new(LINKED, 1, settings.clone());
        let _ = doc.semantic().outline();
        let line = LINKED.lines().position(|l| l.contains("tl.load")).expect("a tl.load line");
        let col = LINKED.lines().nth(line).map(str::len).expect("line") as u32;
        let change = TextDocumentContentChangeEvent {
            range: Some(Range::new(Position::new(line as u32, col), Position::new(line as u32, col))),
            range_length: None,
            text: " + 1".into(),
        };
        doc.apply_changes(2, &[change], Encoding::Utf8);
        let semantic = doc.semantic();
        let moved = semantic.moved_seed().expect("moved, not built");
        let fresh = super::super::outline::build(doc.text(), &model::parse_forest(doc.text()));
        assert_eq!(outline_view(&moved), outline_view(&fresh));

        const SNIPPETS: &[&str] = &["x", " ", "\n", "(", ")", "    ", "", "\"", "def k(", "@triton.jit\n", "import tl"];
        let mut moved_seen = 0;
        for seed in 1..=16u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut doc = Document::new(LINKED, 1, settings.clone());
            for version in 2..40 {
                if rng.below(3) > 0 {
                    let _ = doc.semantic().outline();
                }
                let len = doc.text().len();
                // Half the edits in the middle of a kernel's line (what typing in a kernel does).
                let kernel_lines: Vec<(usize, usize)> = doc
                    .text()
                    .split_inclusive('\n')
                    .scan(0, |at, l| {
                        let start = *at;
                        *at += l.len();
                        Some((start, l))
                    })
                    .filter(|(_, l)| l.starts_with("    ") && l.contains("tl."))
                    .map(|(start, l)| (start + l.len() - l.trim_start().len() + 1, start + l.trim_end().len()))
                    .collect();
                let start = match kernel_lines.len() {
                    n if n > 0 && rng.below(2) == 0 => {
                        let (a, b) = kernel_lines[rng.below(n)];
                        a + rng.below(b.saturating_sub(a) + 1)
                    }
                    _ => rng.below(len + 1),
                };
                let start = char_boundary(doc.text(), start.min(len));
                let end = char_boundary(doc.text(), (start + rng.below(4)).min(len)).max(start);
                replace_bytes(&mut doc, version, start, end, SNIPPETS[rng.below(SNIPPETS.len())]);
                let semantic = doc.semantic();
                if let Some(moved) = semantic.moved_seed() {
                    moved_seen += 1;
                    let fresh = super::super::outline::build(doc.text(), &model::parse_forest(doc.text()));
                    assert_eq!(outline_view(&moved), outline_view(&fresh), "seed {seed}, version {version}");
                }
            }
        }
        assert!(moved_seen > 20, "the property was checked on only {moved_seen} moved outlines");
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

    /// Random LSP changes (ranged, in UTF-8 or UTF-16 columns, or the whole
    /// text) through the path the server takes (`apply_changes`, then an
    /// analysis job from the previous snapshot) keep the text and the line
    /// index those of the edited text, and the installed result what a full
    /// analysis of the document's tree gives. (The checker's own random-edit
    /// properties, on every path, are `checker::tests`'.)
    #[test]
    fn random_changes_keep_the_text_line_index_and_analysis() {
        const SNIPPETS: &[&str] =
            &["x", " ", "\n", "tl.tanh(", ")", "é", "𝄞", "    ", "def ", "\"", "", "[", "x * 2\n", "@triton.jit\n"];
        let settings = Arc::new(Settings::default());
        for seed in 1..=24u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let encoding = if seed % 2 == 0 { Encoding::Utf8 } else { Encoding::Utf16 };
            let mut doc = Document::new(FIXTURE, 0, settings.clone());
            let mut expected = FIXTURE.to_string();
            for version in 1..=20 {
                let mut changes = Vec::new();
                for _ in 0..1 + rng.below(3) {
                    let index = LineIndex::new(&expected);
                    let a = char_boundary(&expected, rng.below(expected.len() + 1));
                    let b = char_boundary(&expected, (a + rng.below(12)).min(expected.len()));
                    let insert = SNIPPETS[rng.below(SNIPPETS.len())];
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
                assert!(doc.install(version, doc.analysis_job().run()));
                let tree = doc.tree.as_ref().expect("tree kept");
                // The reparse read again every line whose masking changed (a bracket left open, `model::recovery`).
                let fresh = model::parse_forest(&expected);
                assert_eq!(nodes(tree), nodes(&fresh), "seed {seed} version {version}: {expected:?}");
                assert_eq!(doc.result, checker::check(&expected, tree, &settings), "seed {seed} version {version}");
            }
        }
    }

    /// Every node of `tree`: its kind and byte range, in document order.
    fn nodes(tree: &Forest) -> Vec<(u16, usize, usize)> {
        let mut out = Vec::new();
        for root in tree.roots() {
            let mut cursor = root.walk();
            'walk: loop {
                let n = cursor.node();
                out.push((n.kind_id(), n.start_byte(), n.end_byte()));
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
        out
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
            let fresh = checker::check(doc.text(), &model::parse_forest(doc.text()), &Settings::default());
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
