//! The semantic snapshot of one document version: its text, its tree and the
//! facts of its model that request handlers read (hover, signature help,
//! completion, navigation), without the state lock and without the checker.
//!
//! A `Document` makes one the first time a reader asks for its current
//! version (`Document::semantic`) and drops it on the next edit: an edit
//! pays nothing for it (the text is an `Arc`, the tree a reference-counted
//! clone). The facts are built once per version, by whichever reader comes
//! first, from `FileModel::build`, and kept as owned data (the model borrows
//! the tree; these outlive the lock).
//!
//! After an edit inside a jit function's body that changes no line's
//! structure (a character typed mid-line), the outline is the previous
//! version's moved through the edit (`Seed`), checked against the new tree,
//! rather than built again: the first hover after a keystroke in a kernel
//! reads it at once. A kernel's locals are read only for the completion that
//! asks for them (`Semantic::locals_of`).

use std::sync::{Arc, OnceLock};

use tree_sitter::Node;

use crate::model::{self, FileModel};
use crate::text::TextRange;

use super::document::Moved;
use crate::model::Forest;
use crate::model::NodeKind;

pub(crate) struct Semantic {
    pub(crate) version: i32,
    pub(crate) text: Arc<str>,
    tree: Option<Forest>,
    facts: OnceLock<Arc<Facts>>,
    outline: OnceLock<Arc<Facts>>,
    seed: Option<Seed>,
}

/// An earlier version's outline and the edits made since, in order.
#[derive(Debug, Clone)]
pub(crate) struct Seed {
    pub(crate) outline: Arc<Facts>,
    pub(crate) moved: Vec<Moved>,
}

/// The most edits a seed carries; past it the outline is built again.
pub(crate) const SEED_EDITS: usize = 64;

/// What the readers ask of a version: its jit functions and its launches.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    pub(crate) jit: Vec<JitFn>,
    pub(crate) launches: Vec<LaunchSite>,
    /// Names `triton.language` is imported as (`tl`).
    pub(crate) tl_aliases: Vec<String>,
    /// Names `triton` is imported as.
    pub(crate) triton_aliases: Vec<String>,
    /// Module-level names assigned a `tl.constexpr` (what a kernel may read of the module).
    pub(crate) constexpr_globals: Vec<String>,
    /// How many statements the module has at top level (a seed's check).
    pub(crate) top_level: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct FnParam {
    pub(crate) name: String,
    pub(crate) constexpr: bool,
    pub(crate) default: Option<String>,
}

/// A `@triton.jit` function: a kernel when something launches it, else a helper.
#[derive(Debug, Clone)]
pub(crate) struct JitFn {
    pub(crate) name: String,
    pub(crate) name_range: TextRange,
    pub(crate) params: Vec<FnParam>,
    /// The whole `def` (its body included).
    pub(crate) range: TextRange,
    /// Where its body starts (past the parameters and the colon).
    pub(crate) body_start: usize,
    /// Byte offsets of the launches that reach it.
    pub(crate) launch_sites: Vec<usize>,
    /// Byte offsets of the calls in other jit functions that reach it.
    pub(crate) call_sites: Vec<usize>,
}

/// A launch `k[grid](...)`.
#[derive(Debug)]
pub(crate) struct LaunchSite {
    pub(crate) kernel: String,
    /// `k[grid]`: the kernel's name through the grid's `]`.
    pub(crate) header: TextRange,
    pub(crate) grid: String,
    /// How many programs the grid makes, where every dimension is known.
    pub(crate) programs: Option<i64>,
}

impl Semantic {
    #[cfg(test)]
    pub(crate) fn new(version: i32, text: Arc<str>, tree: Option<Forest>) -> Semantic {
        Semantic::seeded(version, text, tree, None)
    }

    /// A snapshot whose outline may be `seed`'s moved through its edits.
    pub(crate) fn seeded(version: i32, text: Arc<str>, tree: Option<Forest>, seed: Option<Seed>) -> Semantic {
        Semantic { version, text, tree, facts: OnceLock::new(), outline: OnceLock::new(), seed }
    }

    /// The outline or facts a reader already had built for this version.
    pub(crate) fn built(&self) -> Option<Arc<Facts>> {
        self.outline.get().or_else(|| self.facts.get()).cloned()
    }

    /// The names assigned in a jit function's body (assignments and `for` targets), sorted.
    pub(crate) fn locals_of(&self, f: &JitFn) -> Vec<String> {
        let parsed;
        let tree = match &self.tree {
            Some(t) => t,
            None => {
                parsed = model::parse_forest(&self.text);
                &parsed
            }
        };
        let def = tree
            .descendant_for_byte_range(f.name_range.start, f.name_range.end)
            .and_then(|n| n.parent())
            .filter(|d| d.kind_name() == "function_definition");
        def.map(|d| super::outline::locals(&self.text, d)).unwrap_or_default()
    }

    /// The facts of this version, built by the first reader (a parse too when the document kept no tree).
    pub(crate) fn facts(&self) -> Arc<Facts> {
        self.facts.get_or_init(|| self.read("facts", Facts::build)).clone()
    }

    /// The outline of this version (`lsp::outline`): jit functions' headers
    /// and locals, the imports, no launches; much cheaper than [`Self::facts`].
    pub(crate) fn outline(&self) -> Arc<Facts> {
        if let Some(f) = self.facts.get() {
            return f.clone();
        }
        self.outline
            .get_or_init(|| self.moved_seed().unwrap_or_else(|| self.read("outline", super::outline::build)))
            .clone()
    }

    /// The seed's outline moved through its edits, when each was typed
    /// inside one jit function's body without changing a line's structure,
    /// and the new tree still has each such function where the moved
    /// outline says (each such function's own entry read again from the new
    /// tree); else `None` (the outline is built).
    pub(super) fn moved_seed(&self) -> Option<Arc<Facts>> {
        let (seed, tree) = (self.seed.as_ref()?, self.tree.as_ref()?);
        if tree.named_top_count() != seed.outline.top_level || seed.moved.is_empty() {
            return None;
        }
        let mut jit: Vec<JitFn> = seed.outline.jit.clone();
        let mut touched = Vec::new();
        for m in &seed.moved {
            if !m.in_line {
                return None;
            }
            let at = jit.iter().position(|f| f.body_start <= m.start && m.old_end <= f.range.end)?;
            let shift = |p: usize| if p >= m.old_end { p - m.old_end + m.new_end } else { p };
            for f in &mut jit {
                f.range = TextRange::new(shift(f.range.start), shift(f.range.end));
                f.name_range = TextRange::new(shift(f.name_range.start), shift(f.name_range.end));
                f.body_start = shift(f.body_start);
            }
            touched.push(at);
        }
        for &i in &touched {
            let f = &jit[i];
            let def = tree
                .descendant_for_byte_range(f.name_range.start, f.name_range.end)
                .filter(|n| n.kind_name() == "identifier" && self.text.get(n.byte_range()) == Some(f.name.as_str()))
                .and_then(|n| n.parent())
                .filter(|d| d.kind_name() == "function_definition")?;
            let body = def.child_by_field_name("body")?;
            // The definition's parent is a root (of its chunk's tree): it has none.
            let at_top = def.parent().and_then(|p| p.parent()).is_some_and(|r| r.parent().is_none());
            if !at_top
                || def.start_byte() != f.range.start
                || def.end_byte() != f.range.end
                || body.start_byte() != f.body_start
            {
                return None;
            }
            // Its header read again: with a syntax error in the function,
            // error recovery may have read it differently after an edit in the body.
            jit[i] = super::outline::jit_fn(&self.text, def)?;
        }
        for f in &mut jit {
            f.launch_sites.clear();
            f.call_sites.clear();
        }
        let o = &seed.outline;
        Some(Arc::new(Facts {
            jit,
            launches: Vec::new(),
            tl_aliases: o.tl_aliases.clone(),
            triton_aliases: o.triton_aliases.clone(),
            constexpr_globals: o.constexpr_globals.clone(),
            top_level: o.top_level,
        }))
    }

    fn read(&self, what: &str, build: fn(&str, &Forest) -> Facts) -> Arc<Facts> {
        let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &self.tree {
            Some(tree) => build(&self.text, tree),
            None => build(&self.text, &model::parse_forest(&self.text)),
        }));
        Arc::new(built.unwrap_or_else(|_| {
            tracing::error!("reading the {what} of version {} panicked", self.version);
            Facts::default()
        }))
    }
}

impl Facts {
    fn build(text: &str, tree: &Forest) -> Facts {
        let m = FileModel::build(text, tree);
        let jit = m
            .kernels
            .iter()
            .map(|k| JitFn {
                name: k.name.clone(),
                name_range: k.name_range,
                range: model::range_of(k.node),
                body_start: k.node.child_by_field_name("body").map_or(k.node.end_byte(), |b| b.start_byte()),
                params: k
                    .params
                    .iter()
                    .map(|p| FnParam {
                        name: p.name.to_string(),
                        constexpr: p.constexpr,
                        default: p.default.map(|d| m.text(d).to_string()),
                    })
                    .collect(),
                launch_sites: m.launches_of_kernel(k).map(|l| l.node.start_byte()).collect(),
                call_sites: m
                    .kernel_calls_to(k)
                    .iter()
                    .map(|&(ki, c)| m.kernels[ki].calls[c].node.start_byte())
                    .collect(),
            })
            .collect();
        let launches = m
            .launches
            .iter()
            .map(|l| LaunchSite {
                kernel: l.kernel.clone(),
                header: TextRange::new(l.name_range.start, (l.grid.end_byte() + 1).min(l.node.end_byte())),
                grid: m.text(l.grid).to_string(),
                programs: programs(&m, l.host_fn, l.grid),
            })
            .collect();
        Facts {
            jit,
            launches,
            tl_aliases: m.tl_aliases.clone(),
            triton_aliases: m.triton_aliases.clone(),
            constexpr_globals: constexpr_globals(text, tree),
            top_level: tree.named_top_count(),
        }
    }

    pub(crate) fn jit_named(&self, name: &str) -> Option<&JitFn> {
        self.jit.iter().find(|f| f.name == name)
    }
}

/// `X = tl.constexpr(8)` and `X: tl.constexpr = 8` at module level.
pub(crate) fn constexpr_globals(text: &str, tree: &Forest) -> Vec<String> {
    let mut out = Vec::new();
    for stmt in tree.named_top_level().into_iter().filter(|s| s.kind_name() == "expression_statement") {
        let Some(a) = stmt.named_child(0).filter(|a| a.kind_name() == "assignment") else { continue };
        let Some(left) = a.child_by_field_name("left").filter(|l| l.kind_name() == "identifier") else { continue };
        let rest = text.get(left.end_byte()..a.end_byte()).unwrap_or("");
        if rest.contains("constexpr") {
            out.push(text[left.byte_range()].to_string());
        }
    }
    out
}

/// The number of programs a grid makes: the product of its dimensions, each
/// an integer the model can evaluate or `cdiv` of two (`triton.cdiv(N, BLOCK)`).
fn programs<'a>(m: &FileModel<'a>, f: usize, grid: Node<'a>) -> Option<i64> {
    let grid = grid_value(m, f, grid)?;
    let dims: Vec<Node> = match grid.kind_name() {
        "tuple" | "list" => {
            let mut c = grid.walk();
            grid.named_children(&mut c).collect()
        }
        _ => vec![grid],
    };
    if dims.is_empty() {
        return None;
    }
    dims.iter().try_fold(1i64, |acc, d| acc.checked_mul(dim(m, f, *d, 0)?))
}

/// The tuple a grid name was assigned once (`grid = (triton.cdiv(N, B),)`), else the grid.
fn grid_value<'a>(m: &FileModel<'a>, f: usize, grid: Node<'a>) -> Option<Node<'a>> {
    if grid.kind_name() != "identifier" {
        return Some(grid);
    }
    let name = m.text(grid);
    for scope in [f, 0] {
        let assigns: Vec<_> = m.host_fns.get(scope)?.assigns.iter().filter(|a| a.target == name).collect();
        match assigns.as_slice() {
            [one] if !one.augmented => return Some(one.value),
            [] => continue,
            _ => return None,
        }
    }
    None
}

fn dim(m: &FileModel, f: usize, node: Node, depth: usize) -> Option<i64> {
    if depth > 8 {
        return None;
    }
    if node.kind_name() == "call" {
        let func = m.text(node.child_by_field_name("function")?);
        if func == "cdiv" || func.ends_with(".cdiv") {
            let args = node.child_by_field_name("arguments")?;
            let mut c = args.walk();
            let a: Vec<Node> = args.named_children(&mut c).collect();
            let (x, y) = (dim(m, f, *a.first()?, depth + 1)?, dim(m, f, *a.get(1)?, depth + 1)?);
            return (y > 0).then(|| (x + y - 1).div_euclid(y));
        }
    }
    m.eval_int(f, node, depth)
}

/// Where the cursor is inside a call: the callee as written and the argument
/// it is in (by comma count, or by its `name=`).
#[derive(Debug, PartialEq)]
pub(crate) struct CallContext {
    /// `tl.load`, `helper`, or `kernel` for a launch `kernel[grid](...)`.
    pub(crate) callee: String,
    pub(crate) launch: bool,
    /// Commas before the cursor at the call's own depth.
    pub(crate) index: usize,
    /// The keyword of the argument the cursor is in, if it is written `name=`.
    pub(crate) keyword: Option<String>,
    /// Keywords already written in the call before the cursor.
    pub(crate) keywords: Vec<String>,
}

/// How far back the call context is looked for: calls are short.
const CALL_LOOKBACK: usize = 4096;

/// The innermost call whose parentheses hold `offset`, read from the text
/// (so an unclosed call being typed counts), skipping strings and comments
/// on the way back only as far as brackets go.
pub(crate) fn call_context(text: &str, offset: usize) -> Option<CallContext> {
    let offset = offset.min(text.len());
    let floor = offset.saturating_sub(CALL_LOOKBACK);
    let bytes = text.as_bytes();
    let (mut depth, mut index, mut i) = (0i32, 0usize, offset);
    let mut arg_starts = Vec::new();
    let mut open = None;
    while i > floor {
        i -= 1;
        match bytes[i] {
            b')' | b']' | b'}' => depth += 1,
            b'(' | b'[' | b'{' if depth > 0 => depth -= 1,
            b'(' => {
                open = Some(i);
                break;
            }
            b'[' | b'{' => return None,
            b',' if depth == 0 => {
                index += 1;
                arg_starts.push(i + 1);
            }
            _ => {}
        }
    }
    let open = open?;
    let (callee, launch) = callee_before(text, open)?;
    let args = |s: usize, e: usize| text.get(s..e).unwrap_or("");
    let keyword_of = |a: &str| {
        let a = a.trim_start();
        let (name, _) = a.split_once('=')?;
        let name = name.trim();
        (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && !a.starts_with("=="))
            .then(|| name.to_string())
    };
    let starts: Vec<usize> = std::iter::once(open + 1).chain(arg_starts.into_iter().rev()).collect();
    let mut bounds: Vec<(usize, usize)> = Vec::new();
    for (n, s) in starts.iter().enumerate() {
        let e = starts.get(n + 1).map_or(offset, |next| next - 1);
        bounds.push((*s, e));
    }
    let keyword = bounds.last().and_then(|&(s, e)| keyword_of(args(s, e)));
    let keywords = bounds[..bounds.len() - 1].iter().filter_map(|&(s, e)| keyword_of(args(s, e))).collect();
    Some(CallContext { callee, launch, index, keyword, keywords })
}

/// The callee written before the `(` at `open`: a dotted name, or `name[...]` (a launch).
fn callee_before(text: &str, open: usize) -> Option<(String, bool)> {
    let before = text[..open].trim_end();
    if let Some(inner) = before.strip_suffix(']') {
        // `kernel[grid]`: find the matching `[`.
        let bytes = inner.as_bytes();
        let mut depth = 0i32;
        let mut j = inner.len();
        while j > 0 {
            j -= 1;
            match bytes[j] {
                b']' | b')' => depth += 1,
                b'[' | b'(' if depth > 0 => depth -= 1,
                b'[' => return dotted_tail(&inner[..j]).map(|n| (n, true)),
                _ => {}
            }
        }
        return None;
    }
    dotted_tail(before).map(|n| (n, false))
}

fn dotted_tail(s: &str) -> Option<String> {
    let start = s.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.').len();
    let name = &s[start..];
    (!name.is_empty() && !name.starts_with('.') && !name.as_bytes()[0].is_ascii_digit()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(src: &str) -> Option<CallContext> {
        let at = src.find('|').expect("a cursor");
        let text = src.replacen('|', "", 1);
        call_context(&text, at)
    }

    #[test]
    fn the_call_around_the_cursor_and_its_argument() {
        let c = ctx("x = tl.load(p + offs, mask=m, |").expect("inside tl.load");
        assert_eq!((c.callee.as_str(), c.launch, c.index), ("tl.load", false, 2));
        assert_eq!(c.keywords, ["mask"]);
        let c = ctx("x = tl.load(p, other=|0.0)").expect("inside");
        assert_eq!(c.keyword.as_deref(), Some("other"));
        let c = ctx("add_kernel[(triton.cdiv(n, 1024),)](x, y, |").expect("a launch");
        assert_eq!((c.callee.as_str(), c.launch, c.index), ("add_kernel", true, 2));
        let c = ctx("y = helper(tl.sum(a, axis=0), f(1, 2), |)").expect("a helper call");
        assert_eq!((c.callee.as_str(), c.index), ("helper", 2));
        assert_eq!(ctx("x = [1, |"), None);
        assert_eq!(ctx("x = 1 + |"), None);
    }

    fn facts(src: &str) -> Arc<Facts> {
        let text: Arc<str> = Arc::from(src);
        Semantic::new(1, text.clone(), Some(model::parse_forest(src))).facts()
    }

    #[test]
    fn kernels_their_launches_and_how_many_programs() {
        let src = r#"import triton
import triton.language as tl

N = 4096
BLOCK = 256

@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr = 128):
    pid = tl.program_id(0)

def run(x):
    k[(triton.cdiv(N, BLOCK),)](x, N, BLOCK=BLOCK)
    grid = (N // BLOCK, 2)
    k[grid](x, N)
    k[lambda meta: (meta["B"],)](x, N)
"#;
        let f = facts(src);
        let k = f.jit_named("k").expect("the kernel");
        assert_eq!(k.params.iter().map(|p| p.constexpr).collect::<Vec<_>>(), [false, false, true]);
        assert_eq!(k.params[2].default.as_deref(), Some("128"));
        assert_eq!(k.launch_sites.len(), 3);
        let programs: Vec<Option<i64>> = f.launches.iter().map(|l| l.programs).collect();
        assert_eq!(programs, [Some(16), Some(32), None]);
    }
}
