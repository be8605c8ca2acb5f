//! Error recovery bounded to the statement: where a bracket left open stops.
//!
//! Inside brackets Python ignores line breaks, so a bracket left open (the
//! user is typing `x = f(` or `@triton.autotune(configs=[`) makes the rest of
//! the file part of its expression. tree-sitter-python then recovers over
//! everything after it: at module level the rest of the file becomes one
//! `ERROR` (its kernels vanish from the analysis until the bracket is
//! closed), and every keystroke pays that recovery again (2,500 lines after
//! it: 45-66 ms per keystroke, against 0.2 ms in a closed expression).
//!
//! [`gaps`] finds, on tokens alone, the line where such a statement cannot
//! go on: a line break inside brackets followed by a token that no
//! bracketed expression takes there in valid Python (a statement keyword
//! such as `def` or `return`; a name or number right after a complete
//! operand, as `f(a * 0.2` then `y = 1` on the next line, on a line indented
//! no deeper than the statement; a decorator `@` where an operand must
//! start). A compound statement's header cut off takes its decorators and
//! its block with it. The statement's lines up to that line are a
//! gap, and the parser reads them masked ([`masked`]): the first character
//! becomes `$`, which no Python token starts with, so the statement is one
//! small `ERROR`, and its other lines become comments. The rest of the file
//! parses as if the statement were closed. This is the recovery ruff's
//! parser makes (it re-lexes such a line break as the statement's end);
//! decided on the text alone, so a full parse and an incremental one agree.
//!
//! Valid Python has no gap: each line break it cuts at is a syntax error.
//! KL900 reports a gap at its unclosed bracket ([`gap_at`], read by
//! [`crate::model::syntax`]).

use std::borrow::Cow;

use tree_sitter::{InputEdit, Point};

use crate::text::LineIndex;

/// Whole lines, `start..end` (bytes, both at line starts), that hold a
/// statement cut off as `why` says, at `opener`: where Python reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Gap {
    pub start: usize,
    pub end: usize,
    pub opener: usize,
    pub why: Cut,
}

/// Why a statement is a gap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// A bracket left open (`opener`: the innermost, which Python names).
    Bracket,
    /// A one-line string left open at the end of its line, outside brackets
    /// (`opener`: its opening quote). tree-sitter-python reads on to a later
    /// quote, and every keystroke in the string paid that (24 ms at the top
    /// of the 5,000-line benchmark file).
    String,
    /// A compound statement's header without its `:` (`for i in rang`,
    /// `with tor`; `opener`: the end of the header), with its block: the
    /// parser's recovery over what follows cost 25-40 ms a keystroke there.
    Colon,
    /// A compound statement's header whose `:` ends its line, with no block
    /// indented deeper after it (`while n > 0:` typed above a line;
    /// `opener`: the `:`): the parser read the lines after it as its block.
    Block,
}

/// Keywords that start a statement and never continue an expression.
const STATEMENT_KEYWORDS: &str =
    "assert break class continue def del elif except finally global import nonlocal pass raise return try while with";

/// Keywords that may follow a complete operand inside brackets (`a and b`,
/// `a if c else d`, `x for x in y`, `a not in b`, `a is b`, `async for`).
const OPERATOR_KEYWORDS: &str = "and or not in is if else for async";

/// Python's keywords that are not operands.
const KEYWORDS: &str = "and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield";

/// What the last token of a line was, as far as the next line's first token cares.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    /// A complete operand: a name, number, string, `...` or closing bracket.
    Operand,
    /// `yield` (`(yield` then `from x` on the next line is valid).
    Yield,
    /// Anything else: an operator, a comma, an opening bracket, a keyword.
    Other,
}

/// Bytes the scan stops at; every other byte is skipped in one step.
const fn stops() -> [bool; 256] {
    let mut t = [false; 256];
    let s = b"#'\"([{)]}\n\\";
    let mut k = 0;
    while k < s.len() {
        t[s[k] as usize] = true;
        k += 1;
    }
    t
}
const STOP: [bool; 256] = stops();

/// Whether `word` is one of the space-separated words of `list`.
fn listed(list: &str, word: &[u8]) -> bool {
    list.split(' ').any(|w| w.as_bytes() == word)
}

fn is_word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\x0c' | b'\r')
}

/// The end of the string whose opening quote is at `i` (after its closing
/// quote), or the line break that ends an unterminated one-line string (or
/// the end of the text); and whether it was closed.
fn string_end(b: &[u8], mut i: usize) -> (usize, bool) {
    let q = b[i];
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    i += if triple { 3 } else { 1 };
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\n' if !triple => return (i, false),
            c if c == q => {
                if !triple {
                    return (i + 1, true);
                }
                if b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q) {
                    return (i + 3, true);
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    (b.len(), false)
}

/// The keywords that open a compound statement's header (`async` aside,
/// which opens `async def`, `async for` and `async with`; `match` and `case`,
/// which are also names, are left to the parser), each with whether its
/// header may hold brackets (`if f(`) or is the keyword and `:` alone (`else:`).
const HEADERS: [(&str, bool); 11] = [
    ("if", true),
    ("elif", true),
    ("while", true),
    ("for", true),
    ("with", true),
    ("def", true),
    ("class", true),
    ("except", true),
    ("else", false),
    ("try", false),
    ("finally", false),
];

/// Whether `word` opens a compound statement's header: any such keyword,
/// or (`brackets`) only one whose header may hold brackets.
fn opens_header(word: &[u8], brackets: bool) -> bool {
    HEADERS.iter().any(|&(w, may_hold)| w.as_bytes() == word && (may_hold || !brackets))
}

/// Whether the line at `from` starts with a compound statement's keyword
/// ([`HEADERS`]); returns where the keyword ends.
fn header_keyword(b: &[u8], from: usize) -> Option<usize> {
    let start = from + indent_of(b, from);
    let word_end = |at: usize| b[at..].iter().position(|&c| !is_word_byte(c)).map_or(b.len(), |k| at + k);
    let end = word_end(start);
    if opens_header(&b[start..end], false) {
        return Some(end);
    }
    let next = end + b[end..].iter().take_while(|&&c| is_space(c)).count();
    (&b[start..end] == b"async" && listed("def for with", &b[next..word_end(next)])).then(|| word_end(next))
}

/// How a compound statement's header ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum HeaderEnd {
    /// No `:` outside brackets and strings, which Python cannot end there;
    /// where its code ends (where Python reports the `:` missing).
    NoColon(usize),
    /// The `:` (at this byte) ends it: its block must follow, indented deeper.
    Colon(usize),
    /// Code follows the `:` on its line (`if a: b = 1`).
    Body,
}

/// How the logical line `b[from..to]` (outside brackets at `from`) ends, if
/// it is a compound statement's header.
fn header_end(b: &[u8], from: usize, to: usize) -> Option<HeaderEnd> {
    let keyword_end = header_keyword(b, from)?;
    let (mut i, mut depth, mut code_end) = (keyword_end, 0usize, keyword_end);
    let mut colon = None;
    while i < to {
        let c = b[i];
        if colon.is_some() && !matches!(c, b'#' | b'\n' | b'\\') && !is_space(c) {
            return Some(HeaderEnd::Body);
        }
        match c {
            b'#' => i = b[i..to].iter().position(|&c| c == b'\n').map_or(to, |k| i + k),
            b'\'' | b'"' => {
                i = string_end(b, i).0;
                code_end = i;
            }
            b':' if depth == 0 => {
                colon = Some(i);
                i += 1;
            }
            c => {
                match c {
                    b'(' | b'[' | b'{' => depth += 1,
                    b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                    _ => {}
                }
                i += 1;
                if !is_space(c) && c != b'\n' && c != b'\\' {
                    code_end = i;
                }
            }
        }
    }
    Some(colon.map_or(HeaderEnd::NoColon(code_end.min(to)), HeaderEnd::Colon))
}

/// Whether the first line from `from` that holds a token is indented no
/// deeper than `indent` (false at the end of the text).
fn no_block(b: &[u8], from: usize, indent: usize) -> bool {
    token_line(b, from).is_some_and(|(_, at)| at <= indent)
}

/// The first line from `from` (a line start) that holds a token (not blank,
/// not only a comment): where it starts and how deep it is indented.
fn token_line(b: &[u8], mut from: usize) -> Option<(usize, usize)> {
    while from < b.len() {
        let at = indent_of(b, from);
        if !matches!(b.get(from + at), None | Some(b'\n' | b'\r' | b'#')) {
            return Some((from, at));
        }
        from = next_line(b, from);
    }
    None
}

/// The start of the line after the one `at` is in (the end of the text after the last).
fn next_line(b: &[u8], at: usize) -> usize {
    b[at..].iter().position(|&c| c == b'\n').map_or(b.len(), |k| at + k + 1)
}

/// The last token of `b[line_start..end]` (code only: `end` is the line
/// break or the line's comment), read backwards.
fn last_token(b: &[u8], line_start: usize, end: usize) -> Last {
    let mut j = end;
    while j > line_start && is_space(b[j - 1]) {
        j -= 1;
    }
    if j == line_start {
        return Last::Other;
    }
    let c = b[j - 1];
    if matches!(c, b')' | b']' | b'}' | b'\'' | b'"') {
        return Last::Operand;
    }
    if c == b'.' {
        return if j >= line_start + 3 && &b[j - 3..j] == b"..." { Last::Operand } else { Last::Other };
    }
    if !is_word_byte(c) {
        return Last::Other;
    }
    let mut k = j;
    while k > line_start && is_word_byte(b[k - 1]) {
        k -= 1;
    }
    let word = &b[k..j];
    if word[0].is_ascii_digit()
        || (k > line_start && b[k - 1] == b'.' && k >= line_start + 2 && b[k - 2].is_ascii_digit())
    {
        return Last::Operand; // a number (`2.0` ends in the word `0` after a `.`)
    }
    if k > line_start && b[k - 1] == b'.' {
        return Last::Operand; // an attribute
    }
    match word {
        b"yield" => Last::Yield,
        w if listed(KEYWORDS, w) => Last::Other,
        _ => Last::Operand,
    }
}

/// Whether the line starting at `i` (inside brackets, after a line ending in
/// `last`, in a statement indented `statement_indent`) starts with a token no
/// bracketed expression takes; `None` for a blank or comment-only line.
fn cannot_continue(b: &[u8], i: usize, last: Last, statement_indent: usize) -> Option<bool> {
    let mut j = i;
    while j < b.len() && is_space(b[j]) {
        j += 1;
    }
    // Two operands in a row on a line indented deeper than the statement is a
    // comma forgotten in a continuation line, not a new statement.
    let at_statement_level = indent_of(b, i) <= statement_indent;
    let Some(&c) = b.get(j) else { return Some(false) };
    if c == b'\n' || c == b'#' {
        return None;
    }
    if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
        let mut end = j;
        while end < b.len() && is_word_byte(b[end]) {
            end += 1;
        }
        if matches!(b.get(end), Some(b'\'' | b'"')) && end - j <= 3 {
            return Some(false); // a string prefix: strings concatenate
        }
        let word = &b[j..end];
        if listed(STATEMENT_KEYWORDS, word) || (word == b"async" && is_definition(&b[j..])) {
            return Some(true);
        }
        if word == b"from" {
            return Some(last != Last::Yield);
        }
        return Some(at_statement_level && last == Last::Operand && !listed(OPERATOR_KEYWORDS, word));
    }
    if c.is_ascii_digit() {
        return Some(at_statement_level && last == Last::Operand);
    }
    if c == b'@' {
        return Some(last != Last::Operand);
    }
    Some(false)
}

/// Whether a line (from its first token) starts a compound statement whose
/// header may hold brackets (and ends in `:` and a block).
fn compound(line: &[u8]) -> bool {
    let word = &line[..line.iter().position(|&c| !is_word_byte(c)).unwrap_or(line.len())];
    word == b"async" || opens_header(word, true)
}

/// Where the block of a statement indented `indent` ends, from `from` (a
/// line start inside it): the first line with a token indented no deeper.
fn block_end(b: &[u8], mut from: usize, indent: usize) -> usize {
    while let Some((line, at)) = token_line(b, from) {
        if at <= indent {
            return line;
        }
        from = next_line(b, line);
    }
    b.len()
}

/// Whether a line (from its first token) starts a `def`, `async def` or `class`.
fn is_definition(line: &[u8]) -> bool {
    let word = |l: &[u8], w: &[u8]| l.starts_with(w) && l.get(w.len()).is_some_and(|c| !is_word_byte(*c));
    word(line, b"def") || word(line, b"class") || (word(line, b"async") && word(line[5..].trim_ascii_start(), b"def"))
}

fn indent_of(b: &[u8], i: usize) -> usize {
    b[i..].iter().take_while(|c| matches!(c, b' ' | b'\t')).count()
}

/// The lines a cut statement at `logical` takes, its own ending at `end`:
/// a `header`'s decorators and its block go too (a block after an error
/// at its level would not parse).
fn cut_extent(b: &[u8], logical: usize, end: usize, above: &[usize], header: bool) -> (usize, usize) {
    if !header {
        return (logical, end);
    }
    let at = indent_of(b, logical);
    let start = above
        .iter()
        .rev()
        .take_while(|&&d| indent_of(b, d) == at)
        .last()
        .copied()
        .filter(|_| is_definition(&b[logical + at..]))
        .unwrap_or(logical);
    (start, block_end(b, end, at))
}

/// Where a scan stops before the end of the text.
enum Stop<'o> {
    /// Never.
    End,
    /// After the first logical line (and the decorators before it).
    FirstLine,
    /// At the first checkpoint from `after` on that is a checkpoint of the
    /// text before an edit (`old`, in its bytes: `delta` less).
    Converged { after: usize, old: &'o [usize], delta: isize },
}

/// The gaps of `text[from..]` and its checkpoints (line starts where a scan
/// may start afresh: reached by a line break outside brackets and strings,
/// at column 0, not a decorator and not below one), in order, and where the
/// scan stopped. `from` must be such a place. What the scan found before a
/// checkpoint never depends on the text after it.
fn scan(text: &str, from: usize, stop: Stop) -> (Vec<Gap>, Vec<usize>, usize) {
    let mut scanner = Scanner {
        b: text.as_bytes(),
        stop,
        gaps: Vec::new(),
        checkpoints: Vec::new(),
        i: from,
        stack: Vec::new(),
        logical: from,
        line_start: from,
        comment: None,
        open_string: None,
        decorators: Vec::new(),
        above: Vec::new(),
        looked_at: 0,
    };
    let end = scanner.run();
    (scanner.gaps, scanner.checkpoints, end)
}

/// One [`scan`]: where it is, what it has found, and what it knows of the
/// logical line it is in.
struct Scanner<'t, 'o> {
    b: &'t [u8],
    stop: Stop<'o>,
    gaps: Vec<Gap>,
    checkpoints: Vec<usize>,
    i: usize,
    /// Open brackets (the byte and where), where the logical line and the
    /// physical line started, and where the current line's comment starts.
    stack: Vec<(u8, usize)>,
    logical: usize,
    line_start: usize,
    comment: Option<usize>,
    /// The opening quote of a one-line string this logical line left open.
    open_string: Option<usize>,
    /// The run of decorator lines just read inside brackets (start, indentation):
    /// a gap that ends at a definition ends before its decorators.
    decorators: Vec<(usize, usize)>,
    /// The logical lines just before this one that are decorators (their starts).
    above: Vec<usize>,
    /// No checkpoint up to the line a cut looked at (the `def` its decorators went with).
    looked_at: usize,
}

impl Scanner<'_, '_> {
    /// Scans from where it stands to where the scan stops, which it returns.
    fn run(&mut self) -> usize {
        let from = self.i;
        if self.checkpoint(from) {
            return from;
        }
        let b = self.b;
        while self.i < b.len() {
            let (i, c) = (self.i, b[self.i]);
            if !STOP[c as usize] {
                self.i += 1;
                continue;
            }
            match c {
                b'#' => {
                    self.comment = Some(i);
                    self.i = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |k| i + k);
                }
                b'\'' | b'"' => {
                    let (end, closed) = string_end(b, i);
                    // Left open at the end of its line (not of the text), outside brackets.
                    if !closed && end < b.len() && self.stack.is_empty() && self.open_string.is_none() {
                        self.open_string = Some(i);
                    }
                    self.i = end;
                }
                b'(' | b'[' | b'{' => {
                    self.stack.push((c, i));
                    self.i += 1;
                }
                b')' | b']' | b'}' => {
                    let open = match c {
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    if self.stack.last().is_some_and(|s| s.0 == open) {
                        self.stack.pop();
                    }
                    self.i += 1;
                }
                b'\\' => {
                    // A line continuation joins the next line to this one.
                    self.i += if b.get(i + 1) == Some(&b'\n') {
                        2
                    } else if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') {
                        3
                    } else {
                        1
                    };
                }
                _ => {
                    if let Some(end) = self.line_break() {
                        return end;
                    }
                }
            }
        }
        b.len()
    }

    /// Whether the scan stops after the first logical line ([`Stop::FirstLine`]).
    fn first_only(&self) -> bool {
        matches!(self.stop, Stop::FirstLine)
    }

    /// A logical line starts at `at` (outside brackets, `above` up to date): a
    /// checkpoint? Returns whether the scan has met the text before the edit again.
    fn checkpoint(&mut self, at: usize) -> bool {
        let token = self.b.get(at).is_some_and(|&c| !matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'#' | b'@' | b'\x0c'));
        if !token || !self.above.is_empty() {
            return false;
        }
        if let Stop::Converged { after, old, delta } = self.stop {
            if at >= after && old.binary_search(&((at as isize - delta) as usize)).is_ok() {
                return true;
            }
        }
        self.checkpoints.push(at);
        false
    }

    /// At a line break (`self.i`): the logical line ends here, or goes on
    /// inside brackets. Returns where the scan stops, if it stops here.
    fn line_break(&mut self) -> Option<usize> {
        let last = last_token(self.b, self.line_start, self.comment.unwrap_or(self.i));
        self.comment = None;
        let line_break = self.i;
        self.i += 1;
        self.line_start = self.i;
        if self.stack.is_empty() {
            return self.statement_end(line_break);
        }
        let end = self.in_brackets(last);
        self.line_start = self.i;
        end
    }

    /// The logical line ended (outside brackets) at `line_break`. A string
    /// left open, or a header without its `:` (or its block): the logical
    /// line is cut (with a header's block and decorators).
    fn statement_end(&mut self, line_break: usize) -> Option<usize> {
        let (b, i, logical) = (self.b, self.i, self.logical);
        let cut = match self.open_string.take() {
            Some(quote) => Some((quote, Cut::String)),
            None => match header_end(b, logical, line_break) {
                Some(HeaderEnd::NoColon(at)) => Some((at, Cut::Colon)),
                Some(HeaderEnd::Colon(at)) if no_block(b, i, indent_of(b, logical)) => Some((at, Cut::Block)),
                _ => None,
            },
        };
        if let Some((opener, why)) = cut {
            let (start, end) = cut_extent(b, logical, i, &self.above, header_keyword(b, logical).is_some());
            self.gaps.push(Gap { start, end, opener, why });
            if self.first_only() {
                return Some(end);
            }
            // As after a bracket's cut: no checkpoint at its end
            // (where it ends depended on the lines after it).
            self.i = end;
            self.line_start = end;
            self.looked_at = self.looked_at.max(end);
            self.decorators.clear();
            self.above.clear();
            self.logical = end;
            return None;
        }
        // Decorators directly above the next statement go with it if it is cut.
        let decorator = b.get(logical + indent_of(b, logical)) == Some(&b'@');
        if decorator {
            self.above.push(logical);
        } else {
            self.above.clear();
        }
        if self.first_only() && !decorator {
            return Some(b.len());
        }
        self.logical = i;
        self.decorators.clear();
        if i > self.looked_at && self.checkpoint(i) {
            return Some(i);
        }
        None
    }

    /// Inside brackets after a line break whose line ended with `last`: the
    /// next line that holds a token decides whether the statement goes on.
    fn in_brackets(&mut self, last: Last) -> Option<usize> {
        let b = self.b;
        loop {
            let i = self.i;
            match cannot_continue(b, i, last, indent_of(b, self.logical)) {
                None => self.i = next_line(b, i),
                Some(false) => {
                    let indent = indent_of(b, i);
                    if b.get(i + indent) == Some(&b'@') {
                        self.decorators.push((i, indent));
                    } else {
                        self.decorators.clear();
                    }
                    return None;
                }
                Some(true) => return self.bracket_cut(),
            }
            if self.i >= b.len() {
                return None;
            }
        }
    }

    /// The line at `self.i` cannot go on the bracket left open: the logical
    /// line is cut before it (before the decorators of a definition there).
    fn bracket_cut(&mut self) -> Option<usize> {
        let (b, i) = (self.b, self.i);
        self.looked_at = i;
        let indent = indent_of(b, i);
        let line = &b[i + indent..];
        let run = self.decorators.iter().rev().take_while(|d| d.1 == indent).count();
        let end = match line.first() == Some(&b'@') || is_definition(line) {
            true if run > 0 => self.decorators[self.decorators.len() - run].0,
            _ => i,
        };
        let opener = self.stack[self.stack.len() - 1].1;
        let at = indent_of(b, self.logical);
        let (start, end) = cut_extent(b, self.logical, end, &self.above, compound(&b[self.logical + at..]));
        self.gaps.push(Gap { start, end, opener, why: Cut::Bracket });
        if self.first_only() {
            return Some(end);
        }
        // The statement at the cut starts afresh.
        self.i = end;
        self.stack.clear();
        self.decorators.clear();
        self.above.clear();
        // Not a checkpoint: where the cut falls depended on the
        // lines from here on (the decorators before a `def`, a
        // header's block).
        self.logical = end;
        None
    }
}

/// The gaps of a text, and where a scan of it may start again after an edit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scanned {
    pub gaps: Vec<Gap>,
    checkpoints: Vec<usize>,
}

impl Scanned {
    /// Line starts where a logical line starts at column 0, outside brackets
    /// and strings, with no decorator above it (in order).
    pub(crate) fn checkpoints(&self) -> &[usize] {
        &self.checkpoints
    }
}

/// The gaps of `text`, in order (none for valid Python).
pub(crate) fn gaps(text: &str) -> Vec<Gap> {
    scanned(text).gaps
}

/// [`gaps`], with the checkpoints that let [`rescan`] read only what an edit changed.
pub fn scanned(text: &str) -> Scanned {
    let (gaps, checkpoints, _) = scan(text, 0, Stop::End);
    Scanned { gaps, checkpoints }
}

/// The [`scanned`] of `text`, made from `old` (that of the text before
/// `edits`, `(start, old_end, new_end)` in order): read from the last
/// checkpoint before the edit until the scan meets a checkpoint of the old
/// text again; the rest moves with the edit. More than one edit: read whole.
pub(crate) fn rescan(text: &str, old: &Scanned, edits: &[(usize, usize, usize)]) -> Scanned {
    let &[(start, old_end, new_end)] = edits else { return scanned(text) };
    let delta = new_end as isize - old_end as isize;
    let shift = |p: usize| (p as isize + delta) as usize;
    let k = old.checkpoints.partition_point(|&c| c <= start);
    let from = if k == 0 { 0 } else { old.checkpoints[k - 1] };
    let (fresh, checkpoints, stop) = scan(text, from, Stop::Converged { after: new_end, old: &old.checkpoints, delta });
    let old_stop = (stop as isize - delta) as usize;
    let mut out = Scanned { gaps: Vec::new(), checkpoints: Vec::new() };
    out.gaps.extend(old.gaps.iter().filter(|g| g.start < from));
    out.gaps.extend(fresh);
    if stop < text.len() {
        let after = old.gaps.iter().filter(|g| g.start >= old_stop);
        out.gaps.extend(after.map(|g| Gap {
            start: shift(g.start),
            end: shift(g.end),
            opener: shift(g.opener),
            why: g.why,
        }));
    }
    out.checkpoints.extend(old.checkpoints.iter().filter(|&&c| c < from));
    out.checkpoints.extend(checkpoints);
    if stop < text.len() {
        out.checkpoints.extend(old.checkpoints.iter().filter(|&&c| c >= old_stop).map(|&c| shift(c)));
    }
    out
}

/// The gap that starts at `line_start` (a line where a logical line starts), if any.
pub(crate) fn gap_at(text: &str, line_start: usize) -> Option<Gap> {
    scan(text, line_start, Stop::FirstLine).0.into_iter().next().filter(|g| g.start == line_start)
}

/// `text` as the parser reads it: in each gap the first line's first
/// character is `$` and the rest of its lines are blank, and each further
/// line is a comment (`#`, then blanks). Indentation and line breaks stay,
/// and so does every byte offset.
pub fn masked<'t>(text: &'t str, gaps: &[Gap]) -> Cow<'t, str> {
    if gaps.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut b = text.as_bytes().to_vec();
    for g in gaps {
        let mut first = true;
        let mut i = g.start;
        while i < g.end {
            let start = i + indent_of(&b, i);
            let end = b[start..g.end].iter().position(|&c| c == b'\n').map_or(g.end, |k| start + k);
            let content = b[start..end].iter().rposition(|c| *c != b'\r').map_or(start, |k| start + k + 1);
            if content > start {
                // `$` over the whole first character, so that the error token
                // ends on a character boundary of the real text.
                let head = match first {
                    true => text[start..].chars().next().map_or(1, char::len_utf8),
                    false => 1,
                };
                b[start..start + head].fill(if first { b'$' } else { b'#' });
                b[start + head..content].fill(b' ');
                first = false;
            }
            i = end + 1;
        }
    }
    // ASCII bytes replaced whole characters only.
    Cow::Owned(String::from_utf8(b).expect("masking writes ASCII over whole characters"))
}

/// The bytes `lo..hi` of the new text (after `edits`: `(start, old_end,
/// new_end)` in order) whose masking changed between `old` (the gaps the
/// text was parsed with) and `new`, if any changed beyond moving with the
/// edits: marked in the trees as a same-length edit ([`same_length_edit`]),
/// an incremental parse reads them again.
pub(crate) fn masking_changed(old: &[Gap], new: &[Gap], edits: &[(usize, usize, usize)]) -> Option<(usize, usize)> {
    if old.is_empty() && new.is_empty() {
        return None;
    }
    // The old gaps in the new text's bytes; one an edit touched covers the edit too.
    let mapped: Vec<(usize, usize, bool)> = old
        .iter()
        .map(|g| {
            let (mut s, mut e, mut touched) = (g.start, g.end, false);
            for &(start, old_end, new_end) in edits {
                let shift = |p: usize| if p >= old_end { p + new_end - old_end } else { p };
                if start <= e && s <= old_end {
                    touched = true;
                    (s, e) = (s.min(start), shift(e.max(old_end)).max(new_end));
                } else {
                    (s, e) = (shift(s), shift(e));
                }
            }
            (s, e, touched)
        })
        .collect();
    let (mut lo, mut hi) = (usize::MAX, 0);
    for &(s, e, touched) in &mapped {
        if touched || !new.iter().any(|g| (g.start, g.end) == (s, e)) {
            (lo, hi) = (lo.min(s), hi.max(e));
        }
    }
    for g in new {
        if !mapped.iter().any(|&(s, e, touched)| !touched && (s, e) == (g.start, g.end)) {
            (lo, hi) = (lo.min(g.start), hi.max(g.end));
        }
    }
    (lo < hi).then_some((lo, hi))
}

/// Byte `b`'s row and byte column in a text whose line index is `index`.
pub(crate) fn point(index: &LineIndex, b: usize) -> Point {
    let row = index.line_of(b);
    Point::new(row, b - index.line_start(row))
}

/// An edit that replaces `lo..hi` with as many bytes: what an incremental
/// parse then reads again.
pub(crate) fn same_length_edit(lo: usize, hi: usize, index: &LineIndex) -> InputEdit {
    let (start, end) = (point(index, lo), point(index, hi));
    InputEdit {
        start_byte: lo,
        old_end_byte: hi,
        new_end_byte: hi,
        start_position: start,
        old_end_position: end,
        new_end_position: end,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeKind;

    fn gap_lines(text: &str) -> Vec<(usize, usize)> {
        let row = |b: usize| text[..b].matches('\n').count();
        gaps(text).iter().map(|g| (row(g.start), row(g.end))).collect()
    }

    #[test]
    fn valid_python_has_no_gap() {
        let valid = [
            "x = f(a,\n      b)\n",
            "x = f(\n    a\n)\n",
            "x = (a\n     if c\n     else d)\n",
            "y = [v\n     for v in w\n     if v]\n",
            "z = (a\n     and b\n     or not c\n     in d)\n",
            "s = ('a'\n     'b'\n     f'{c}')\n",
            "t = (yield\n     from g)\n",
            "u = (m\n     @ n)\n",
            "v = f(a)(\n    b)\n",
            "w = d[\n    k\n]\n",
            "q = \"\"\"(\ndef\n\"\"\"\nr = 1\n",
            "k = f(  # (\n    a)\n",
            "x = 1 + \\\n    2\n",
            "x = (\n    # def\n    a)\n",
            "x = (\n    ...\n)\n",
            "x = (lambda\n     a: a)\n",
            "if a: b = 1\nelse: b = 2\n",
            "for k in {1: 2}:\n    pass\n",
            "def f(a,\n      b) -> int:\n    return a\n",
            "if x == ':':\n    pass\n",
            "while (lambda: 1)():\n    break\n",
            "try:\n    pass\nexcept (A, B) as e:  # no :\n    pass\nfinally:\n    pass\n",
            "async def f():\n    async with a as b, c:\n        pass\n",
            "class A(B, metaclass=M): pass\n",
            "with a, \\\n     b:\n    pass\n",
            "s = 'it\\'s' + r'\\d' + f'{d[\"k\"]}' + \"'\" + '\"'\n",
            "s = 'a\\\nb'\n",
            "iffy = 1\nelse_ = 2\nmatch = 3\n",
        ];
        for text in valid {
            assert_eq!(gaps(text), Vec::new(), "{text:?}");
            assert!(!crate::model::parse(text, None).root_node().has_error(), "{text:?}");
        }
    }

    #[test]
    fn a_bracket_left_open_ends_where_its_statement_cannot_go_on() {
        // A name after a complete operand.
        let text = "def f(x, h):\n    z = g(h * 0.2\n    h = k(x)\n    return h\n";
        assert_eq!(gap_lines(text), [(1, 2)]);
        // A statement keyword, after an opening bracket.
        assert_eq!(gap_lines("x = f(\ndef g():\n    pass\n"), [(0, 1)]);
        // A decorator where an operand must start; the cut is before the run of decorators.
        let text = "import triton\n@triton.autotune(configs=[\n    c,\n@triton.jit\ndef k(x):\n    pass\n";
        assert_eq!(gap_lines(text), [(1, 3)]);
        let text = "y = [a\n@triton.jit\n@other\ndef k(x):\n    pass\n";
        assert_eq!(gap_lines(text), [(0, 1)], "after an operand `@` could multiply, but not before a `def`");
        // Two statements left open, each bounded.
        assert_eq!(gap_lines("a = f(1\nb = 2\nc = g(2\nd = 3\n"), [(0, 1), (2, 3)]);
        // Nothing after it to stop at: no gap (the parser's recovery stops at the end).
        assert_eq!(gap_lines("a = 1\nb = f(\n"), Vec::<(usize, usize)>::new());
    }

    #[test]
    fn a_string_or_a_header_left_open_is_cut_at_its_line() {
        let cut = |text: &str| -> Vec<(usize, usize, Cut, String)> {
            let row = |b: usize| text[..b].matches('\n').count();
            gaps(text).iter().map(|g| (row(g.start), row(g.end), g.why, text[g.opener..].to_string())).collect()
        };
        // A string left open at the end of its line: Python reports its opening quote.
        let text = "def f(x):\n    y = 'abc\n    return y\n";
        assert_eq!(cut(text), [(1, 2, Cut::String, "'abc\n    return y\n".to_string())]);
        // A header without its `:`, reported at the end of its code; no block yet.
        let text = "def f(x):\n    with tor  # a comment\n    x = 1\n";
        assert_eq!(cut(text), [(1, 2, Cut::Colon, "  # a comment\n    x = 1\n".to_string())]);
        // A header whose `:` ends its line, with no block after it: the
        // parser would read the lines after it as its block.
        let text = "def f(x):\n    while n > 0:  # typing\n    x = 1\n    return x\n";
        assert_eq!(cut(text), [(1, 2, Cut::Block, ":  # typing\n    x = 1\n    return x\n".to_string())]);
        assert_eq!(gaps("class A:\n\nclass B:\n    pass\n").iter().map(|g| g.why).collect::<Vec<_>>(), [Cut::Block]);
        assert_eq!(gaps("if a:\n    pass\nelse:\n"), Vec::new(), "nothing after it");
        // With a block, the block goes too; with decorators, they go too.
        let text = "def f(x):\n    for t in range(3)\n        x = x + 1\n\n    return x\n";
        assert_eq!((cut(text)[0].0, cut(text)[0].1), (1, 4));
        let text = "import triton\n@triton.jit\ndef k(x,\n      y)\n    pass\nz = 1\n";
        assert_eq!((cut(text)[0].0, cut(text)[0].1), (1, 5));
        let text = "async def f()\nelse\nx = 'a\ny = 1\n";
        let whys: Vec<(usize, Cut)> = cut(text).iter().map(|c| (c.0, c.2)).collect();
        assert_eq!(whys, [(0, Cut::Colon), (1, Cut::Colon), (2, Cut::String)]);
        // Nothing after it: no gap (the parser's recovery stops at the end).
        assert_eq!(gaps("x = 1\ny = 'abc"), Vec::new());
        // A string left open inside brackets is the bracket's business.
        assert!(gaps("x = f('a\ny = 1\n").iter().all(|g| g.why == Cut::Bracket));
        // The rest of the file parses; each error is reported where Python reports it.
        let text = "def f(x):\n    if x > 0 and y\n        x = 4\n    z = 1\n    y = \"abc\n    return x\n\n\nclass A:\n    pass\n";
        let tree = crate::model::parse(text, None);
        let forest = crate::model::Forest::from(tree.clone());
        let messages: Vec<(usize, String)> = crate::model::syntax::errors(text, &forest)
            .iter()
            .map(|d| (d.range.start, d.message.to_string()))
            .collect();
        let expected = [
            (text.find(" y\n").unwrap() + 2, "syntax error: expected `:`".to_string()),
            (text.find('"').unwrap(), "syntax error: the string is never closed".to_string()),
        ];
        assert_eq!(messages, expected, "{}", tree.root_node().to_sexp());
        let root = tree.root_node();
        let class = root.child(root.child_count() - 1).expect("the class");
        assert!(class.kind_name() == "class_definition" && !class.has_error(), "{}", root.to_sexp());
    }

    #[test]
    fn the_rest_of_the_file_parses_as_if_the_statement_were_closed() {
        let text = "import triton\n\nx = f(a * 2\n\n@triton.jit\ndef k(p):\n    q = p + 1\n";
        let tree = crate::model::parse(text, None);
        let root = tree.root_node();
        let kinds: Vec<&str> = root.children(&mut root.walk()).map(|n| n.kind_name()).collect();
        assert_eq!(kinds, ["import_statement", "ERROR", "decorated_definition"], "{}", root.to_sexp());
        let error = root.child(1).expect("the gap's error");
        assert_eq!(error.start_byte(), text.find("x = f").unwrap());
        assert_eq!(gap_at(text, error.start_byte()).map(|g| g.opener), text.find('('));
    }

    /// Under random edits (brackets, decorators, strings, line breaks), the
    /// scan read from the last checkpoint before each edit equals a scan of
    /// the whole text, and it reads less than the whole text.
    #[test]
    fn a_rescan_after_an_edit_equals_a_whole_scan() {
        const SNIPPETS: &[&str] = &[
            "(",
            ")",
            "[",
            "]",
            "x",
            " * 2",
            "\n",
            "\ndef ",
            "@triton.jit\n",
            "\"",
            "'",
            "#",
            "\\\n",
            "    ",
            "",
            "é",
            "return ",
            "\n    y = 1\n",
            ":",
            "if a",
            "\nwith b",
            "else",
        ];
        let base = "import triton\n\nBLOCK = 4\n\n@triton.autotune(configs=[c], key=[\"n\"])\n@triton.jit\ndef k(x_ptr, n):\n    x = tl.load(x_ptr)\n    y = f(x,\n          n)\n\n\ndef run(x):\n    k[(1,)](x, 4)\n    s = \"\"\"a ( b\n\"\"\"\n    return x\n\nclass M:\n    def forward(self, x):\n        return run(x)\n";
        let mut partial = 0;
        for seed in 1..=200u64 {
            let mut rng = crate::xorshift::Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let mut text = base.repeat(1 + rng.below(3));
            let mut now = scanned(&text);
            for step in 0..30 {
                let a = rng.below(text.len() + 1);
                let a = (0..=a).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                let b = (a + rng.below(6)).min(text.len());
                let b = (b..=text.len()).find(|&i| text.is_char_boundary(i)).unwrap_or(text.len());
                let insert = SNIPPETS[rng.below(SNIPPETS.len())];
                text.replace_range(a..b, insert);
                let again = rescan(&text, &now, &[(a, b, a + insert.len())]);
                now = scanned(&text);
                assert_eq!(again, now, "seed {seed}, step {step}: {text:?}");
                partial += usize::from(now.checkpoints.len() > 2);
            }
        }
        assert!(partial > 1000, "checkpoints to start from in only {partial} texts");
    }

    #[test]
    fn masking_keeps_every_offset_and_line() {
        let text = "a = 1\n  b = f(x,\n      é\n  c = 2\n";
        let g = gaps(text);
        assert_eq!(g.len(), 1);
        let m = masked(text, &g);
        assert_eq!(m.len(), text.len());
        assert_eq!(m.lines().count(), text.lines().count());
        assert_eq!(m.lines().nth(1), Some(format!("  ${}", " ".repeat(7)).as_str()));
        assert!(m.lines().nth(2).is_some_and(|l| l.trim() == "#"));
        assert_eq!(m.lines().nth(3), Some("  c = 2"));
        // A statement that starts with a character outside ASCII: its error
        // token covers the whole character (no node ends inside one).
        let text = "é = f(x *\ndef g():\n    pass\n";
        let tree = crate::model::parse(text, None);
        let error = tree.root_node().child(0).expect("the gap's error");
        assert!(error.is_error() && text.is_char_boundary(error.end_byte()), "{}", tree.root_node().to_sexp());
        assert_eq!(error.end_byte(), "é".len());
    }
}
