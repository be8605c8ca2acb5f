//! Byte ranges and the line index that turns them into line/column pairs.
//!
//! Everything inside the analysis works on byte offsets into the UTF-8 text;
//! only the edges (CLI output, the LSP) convert, with the column unit they need.

use serde::{Deserialize, Serialize};

/// A half-open byte range `[start, end)` into a document's UTF-8 text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
pub struct TextRange {
    pub start: usize,
    pub end: usize,
}

impl TextRange {
    pub fn new(start: usize, end: usize) -> Self {
        TextRange { start, end: end.max(start) }
    }
    pub fn contains(&self, offset: usize) -> bool {
        self.start <= offset && offset < self.end
    }
    pub(crate) fn contains_range(&self, other: TextRange) -> bool {
        self.start <= other.start && other.end <= self.end
    }
    pub fn len(&self) -> usize {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

impl From<std::ops::Range<usize>> for TextRange {
    fn from(r: std::ops::Range<usize>) -> Self {
        TextRange::new(r.start, r.end)
    }
}

/// Which unit a column counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnUnit {
    Utf8,
    Utf16,
    /// Unicode scalar values, as ruff and most CLIs print.
    Char,
}

/// Line starts of a text, for offset <-> (line, column) conversion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIndex {
    line_starts: Vec<usize>,
}

impl LineIndex {
    pub fn new(text: &str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1));
        LineIndex { line_starts }
    }

    /// Follows the replacement of `start..old_end` by `new_text`, without rescanning the text.
    pub fn edit(&mut self, start: usize, old_end: usize, new_text: &str) {
        // Line starts in (start, old_end] came from line breaks that were removed.
        let lo = self.line_starts.partition_point(|&s| s <= start);
        let hi = self.line_starts.partition_point(|&s| s <= old_end);
        let new_end = start + new_text.len();
        for s in &mut self.line_starts[hi..] {
            *s = *s - old_end + new_end;
        }
        let inserted = new_text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| start + i + 1);
        self.line_starts.splice(lo..hi, inserted);
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// 0-based line of a byte offset (clamped to the text).
    pub fn line_of(&self, offset: usize) -> usize {
        match self.line_starts.binary_search(&offset) {
            Ok(l) => l,
            Err(l) => l - 1,
        }
    }

    pub fn line_start(&self, line: usize) -> usize {
        self.line_starts.get(line).copied().unwrap_or_else(|| *self.line_starts.last().unwrap_or(&0))
    }

    /// 0-based (line, column) of a byte offset, the column in `unit`.
    pub fn position(&self, text: &str, offset: usize, unit: ColumnUnit) -> (usize, usize) {
        let offset = clamp_to_char_boundary(text, offset.min(text.len()));
        let line = self.line_of(offset);
        let start = self.line_start(line).min(offset);
        let segment = &text[start..offset];
        let col = match unit {
            ColumnUnit::Utf8 => segment.len(),
            ColumnUnit::Utf16 => segment.encode_utf16().count(),
            ColumnUnit::Char => segment.chars().count(),
        };
        (line, col)
    }

    /// Byte offset of a 0-based (line, column); columns past the line end clamp to it.
    pub fn offset(&self, text: &str, line: usize, col: usize, unit: ColumnUnit) -> usize {
        if line >= self.line_starts.len() {
            return text.len();
        }
        let start = self.line_starts[line];
        let end = self.line_starts.get(line + 1).map(|e| e - 1).unwrap_or(text.len());
        let line_text = &text[start..end.max(start)];
        let mut seen = 0usize;
        for (i, ch) in line_text.char_indices() {
            if seen >= col {
                return start + i;
            }
            seen += match unit {
                ColumnUnit::Utf8 => ch.len_utf8(),
                ColumnUnit::Utf16 => ch.len_utf16(),
                ColumnUnit::Char => 1,
            };
        }
        start + line_text.len()
    }
}

fn clamp_to_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// 232448 -> "232,448": byte counts in messages.
pub fn group(v: i64) -> String {
    let s = v.abs().to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    if v < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// The bytes `old[start..old_end]` that became `new[start..new_end]`: what is
/// left between the longest common prefix and the longest common suffix that
/// does not overlap it, on character boundaries of both texts.
pub(crate) fn changed_span(old: &str, new: &str) -> (usize, usize, usize) {
    let (a, b) = (old.as_bytes(), new.as_bytes());
    let mut start = common_prefix(a, b);
    while !(old.is_char_boundary(start) && new.is_char_boundary(start)) {
        start -= 1;
    }
    let max_suffix = (a.len() - start).min(b.len() - start);
    let mut suffix = common_suffix(&a[a.len() - max_suffix..], &b[b.len() - max_suffix..]);
    while !(old.is_char_boundary(a.len() - suffix) && new.is_char_boundary(b.len() - suffix)) {
        suffix -= 1;
    }
    (start, a.len() - suffix, b.len() - suffix)
}

/// Bytes compared a block at a time (a `memcmp`) before the last block's byte
/// by byte: a whole-text change of a 200 KB file is diffed in microseconds.
const BLOCK: usize = 256;

/// The length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + BLOCK <= n && a[i..i + BLOCK] == b[i..i + BLOCK] {
        i += BLOCK;
    }
    i + a[i..n].iter().zip(&b[i..n]).take_while(|(x, y)| x == y).count()
}

/// The length of the longest common suffix of `a` and `b`.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (&a[a.len() - n..], &b[b.len() - n..]);
    let mut i = 0;
    while i + BLOCK <= n && a[n - i - BLOCK..n - i] == b[n - i - BLOCK..n - i] {
        i += BLOCK;
    }
    i + a[..n - i].iter().rev().zip(b[..n - i].iter().rev()).take_while(|(x, y)| x == y).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`changed_span`] byte by byte, as it was first written.
    fn changed_span_bytewise(old: &str, new: &str) -> (usize, usize, usize) {
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

    #[test]
    fn changed_spans_in_blocks_are_those_byte_by_byte() {
        let mut rng = crate::xorshift::Rng(0x5eed);
        let pieces = ["a", "é", "𝄞", "\n", "x = 1\n", "  ", "ab"];
        for round in 0..400 {
            let len = [0, 3, 255, 256, 257, 700, 2000][round % 7];
            let old: String = (0..len).map(|_| pieces[rng.below(pieces.len())]).collect();
            let mut new = old.clone();
            for _ in 0..1 + rng.below(3) {
                let at = (0..=new.len()).filter(|&i| new.is_char_boundary(i)).nth(rng.below(new.chars().count() + 1));
                let at = at.unwrap_or(new.len());
                match rng.below(3) {
                    0 => new.insert_str(at, pieces[rng.below(pieces.len())]),
                    1 => {
                        if let Some(c) = new[at..].chars().next() {
                            new.replace_range(at..at + c.len_utf8(), "");
                        }
                    }
                    _ => {
                        if let Some(c) = new[at..].chars().next() {
                            new.replace_range(at..at + c.len_utf8(), pieces[rng.below(pieces.len())]);
                        }
                    }
                }
            }
            assert_eq!(changed_span(&old, &new), changed_span_bytewise(&old, &new), "round {round}");
            assert_eq!(changed_span(&new, &old), changed_span_bytewise(&new, &old), "round {round}, reversed");
        }
    }

    #[test]
    fn positions_in_each_unit() {
        let text = "a = 1\nb = 'é𝄞' + c\n";
        let idx = LineIndex::new(text);
        let c = text.find("c\n").unwrap();
        assert_eq!(idx.position(text, c, ColumnUnit::Utf8), (1, 15));
        assert_eq!(idx.position(text, c, ColumnUnit::Utf16), (1, 12));
        assert_eq!(idx.position(text, c, ColumnUnit::Char), (1, 11));
        assert_eq!(idx.offset(text, 1, 12, ColumnUnit::Utf16), c);
        assert_eq!(idx.offset(text, 1, 11, ColumnUnit::Char), c);
        assert_eq!(idx.offset(text, 9, 0, ColumnUnit::Char), text.len());
    }
}
