//! Which statements an edit left as they were, and moving what was cached
//! about them: the statements before and after the edited span that read as
//! they did (same kind and text; for one with a syntax error, the same syntax
//! tree) keep their facts, moved by the bytes they moved; a cached position
//! that falls in a changed statement cannot be moved, and the edit is
//! analysed another way.

use tree_sitter::Node;

use super::snapshot::*;
use crate::diagnostic::Diagnostic;
use crate::model::Forest;
use crate::model::{imports_of, range_of, triton_imported};
use crate::text::TextRange;

pub(super) fn top_level(tree: &Forest) -> Vec<Node<'_>> {
    tree.top_level()
}

/// Index of the statement containing byte `pos` (its end included).
pub(super) fn unit_of(ranges: &[TextRange], pos: usize) -> Option<usize> {
    let i = ranges.partition_point(|r| r.start <= pos).checked_sub(1)?;
    (pos <= ranges[i].end).then_some(i)
}

/// Every position a diagnostic refers to.
pub(super) fn positions(d: &Diagnostic) -> impl Iterator<Item = TextRange> + '_ {
    std::iter::once(d.range)
        .chain(d.related.iter().map(|r| r.range))
        .chain(d.fix.iter().flat_map(|f| f.edits.iter().map(|e| e.range)))
}

/// The statement that holds every position of `d`, if one does.
pub(super) fn home(ranges: &[TextRange], d: &Diagnostic) -> Option<usize> {
    let u = unit_of(ranges, d.range.start)?;
    positions(d).all(|r| ranges[u].start <= r.start && r.end <= ranges[u].end).then_some(u)
}

/// What both incremental paths start from: the statements now, the imports
/// (which must be as they were), and which statements the edit left as they were.
pub(super) struct Matching<'t> {
    pub(super) nodes: Vec<Node<'t>>,
    /// Each statement's byte range, read once: a node's end is read from
    /// its subtree, a cache miss per statement of a large file.
    pub(super) ranges: Vec<TextRange>,
    pub(super) aliases: (Vec<String>, Vec<String>),
    /// Whether the file imports Triton (`model::triton_imported`).
    pub(super) triton_imported: bool,
    /// For each statement now, the old one it matches.
    pub(super) matched: Vec<Option<usize>>,
    /// For each old statement, the new one.
    pub(super) old_to_new: Vec<Option<usize>>,
    /// The old statements the edit changed.
    pub(super) changed_old: Vec<usize>,
}

impl Matching<'_> {
    /// Cached diagnostics of `prev`, moved with their statements to where
    /// those are now; an error if a position lies in a changed statement.
    pub(super) fn moved(&self, prev: &Snapshot, list: &[Diagnostic]) -> Result<Vec<Diagnostic>, &'static str> {
        let map = |pos: usize| -> Option<usize> {
            let o = prev.units.partition_point(|u| u.range.start <= pos).checked_sub(1)?;
            let old = prev.units[o].range;
            let n = self.old_to_new[o].filter(|_| pos <= old.end)?;
            Some(pos - old.start + self.ranges[n].start)
        };
        list.iter()
            .map(|d| remap(d, &map))
            .collect::<Option<Vec<_>>>()
            .ok_or("a cached position lies in a changed statement")
    }
}

pub(super) fn matching<'t>(text: &str, prev: &Snapshot, nodes: Vec<Node<'t>>) -> Result<Matching<'t>, &'static str> {
    let ranges: Vec<TextRange> = nodes.iter().map(|n| range_of(*n)).collect();
    let (matched, old_to_new) = match_units(prev, &nodes, &ranges, text);
    let changed_old: Vec<usize> = (0..prev.units.len()).filter(|&o| old_to_new[o].is_none()).collect();
    // The imports are read from the whole file only when an edited statement,
    // before or after the edit, could bear on them: an `import`, or a
    // `@triton.` decorator where the file imports no Triton (the decorator then
    // stands for the missing import). A statement that reads as it did binds
    // what it bound.
    let unit_text = |o: usize| prev.text.get(prev.units[o].range.start..prev.units[o].range.end).unwrap_or("");
    let node_text = |r: &TextRange| text.get(r.start..r.end).unwrap_or("");
    let edited = |bears: &dyn Fn(&str) -> bool| {
        changed_old.iter().any(|&o| bears(unit_text(o)))
            || ranges.iter().zip(&matched).any(|(r, m)| m.is_none() && bears(node_text(r)))
    };
    let (aliases, imported) = if edited(&has_import_keyword) {
        (imports_of(&nodes, text), triton_imported(&nodes, text))
    } else if !prev.triton_imported && edited(&|t: &str| t.contains("triton")) {
        (imports_of(&nodes, text), false)
    } else {
        ((prev.tl_aliases.clone(), prev.triton_aliases.clone()), prev.triton_imported)
    };
    if aliases.0 != prev.tl_aliases || aliases.1 != prev.triton_aliases {
        return Err("the imports changed");
    }
    Ok(Matching { nodes, ranges, aliases, triton_imported: imported, matched, old_to_new, changed_old })
}

/// Which statements an edit left as they were: those before and after the
/// edited span that read as they did (same kind and text: a top-level
/// statement without syntax errors then parses the same; for one with
/// errors, the same syntax tree). Returns, for each new statement, the old
/// one it matches, and for each old statement the new one.
pub(super) fn match_units(
    prev: &Snapshot,
    nodes: &[Node],
    ranges: &[TextRange],
    text: &str,
) -> (Vec<Option<usize>>, Vec<Option<usize>>) {
    let same = |o: usize, i: usize| {
        let (u, n, r) = (&prev.units[o], nodes[i], ranges[i]);
        u.facts.kind == n.kind_id()
            && u.facts.has_error == n.has_error()
            && prev.text.get(u.range.start..u.range.end) == text.get(r.start..r.end)
            && (!u.facts.has_error || old_node(prev, u.range).is_some_and(|o| shape(o) == shape(n)))
    };
    let (old_len, new_len) = (prev.units.len(), nodes.len());
    let mut prefix = 0;
    while prefix < old_len && prefix < new_len && same(prefix, prefix) {
        prefix += 1;
    }
    let mut suffix = 0;
    while suffix < old_len - prefix && suffix < new_len - prefix && same(old_len - 1 - suffix, new_len - 1 - suffix) {
        suffix += 1;
    }
    let mut matched: Vec<Option<usize>> = vec![None; new_len];
    let mut old_to_new: Vec<Option<usize>> = vec![None; old_len];
    for i in (0..prefix).chain(new_len - suffix..new_len) {
        let o = if i < prefix { i } else { i + old_len - new_len };
        matched[i] = Some(o);
        old_to_new[o] = Some(i);
    }
    (matched, old_to_new)
}

/// Whether `text` holds the word `import` as the keyword is written (not
/// part of a longer name: `important`, `reimport`), comments and strings
/// included: a cheap test that errs towards treating a statement as host code.
/// A character outside ASCII beside it does not make it a longer name: the
/// parser may read `import𝄞` as the keyword and an error (seed 91065 of the
/// random-edit tests, four times the seeds), and `importé` costs only a
/// reading of the imports.
pub(super) fn has_import_keyword(text: &str) -> bool {
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    text.match_indices("import").any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + "import".len()).copied();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

/// The version flags (`model::version_flags`, which KL005 reads from the
/// whole text) set by a line of the statements an edit changed, before or
/// after: an edit that sets or unsets one changes KL005's findings wherever
/// the flag guards a `tl` name.
pub(super) fn changed_version_flags(prev: &Snapshot, m: &Matching, text: &str) -> Vec<String> {
    let old = m.changed_old.iter().map(|&o| prev.text.get(prev.units[o].range.start..prev.units[o].range.end));
    let new =
        (0..m.nodes.len()).filter(|&i| m.matched[i].is_none()).map(|i| text.get(m.ranges[i].start..m.ranges[i].end));
    let mut out: Vec<String> =
        old.chain(new).flatten().flat_map(|t| crate::model::version_flags(t).into_iter().map(str::to_string)).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The top-level statement of `prev`'s tree at `range`.
fn old_node(prev: &Snapshot, range: TextRange) -> Option<Node<'_>> {
    let node = prev.tree.first_top_for_byte(range.start)?;
    (node.byte_range() == (range.start..range.end)).then_some(node)
}

/// Every node of a statement: kind, start and end relative to the statement.
pub(super) fn shape(unit: Node) -> Vec<(u16, u32, u32)> {
    let base = unit.start_byte();
    let mut out = Vec::new();
    let mut cursor = unit.walk();
    let mut depth = 0usize;
    loop {
        let n = cursor.node();
        out.push((n.kind_id(), (n.start_byte() - base) as u32, (n.end_byte() - base) as u32));
        if cursor.goto_first_child() {
            depth += 1;
            continue;
        }
        loop {
            if depth == 0 {
                return out;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            cursor.goto_parent();
            depth -= 1;
        }
    }
}

pub(super) fn shift_range(r: TextRange, delta: isize) -> TextRange {
    TextRange::new((r.start as isize + delta) as usize, (r.end as isize + delta) as usize)
}

/// A diagnostic with every position moved by `delta`.
pub(super) fn shifted(d: &Diagnostic, delta: isize) -> Diagnostic {
    let mut d = d.clone();
    if delta != 0 {
        d.range = shift_range(d.range, delta);
        for r in &mut d.related {
            r.range = shift_range(r.range, delta);
        }
        if let Some(fix) = &mut d.fix {
            for e in &mut fix.edits {
                e.range = shift_range(e.range, delta);
            }
        }
    }
    d
}

/// A cached diagnostic with every position moved to the new text; `None` if one cannot be.
pub(super) fn remap(d: &Diagnostic, map: &impl Fn(usize) -> Option<usize>) -> Option<Diagnostic> {
    let range = |r: TextRange| -> Option<TextRange> { Some(TextRange::new(map(r.start)?, map(r.end)?)) };
    let mut d = d.clone();
    d.range = range(d.range)?;
    for r in &mut d.related {
        r.range = range(r.range)?;
    }
    if let Some(fix) = &mut d.fix {
        for e in &mut fix.edits {
            e.range = range(e.range)?;
        }
    }
    Some(d)
}
