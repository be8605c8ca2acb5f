//! Block shapes inside a kernel: an abstract interpretation of its body, in
//! statement order, for one set of known constexpr values (a launch's, an
//! autotune configuration's, the defaults). A value is a known integer, a
//! block of a known shape (a scalar is the block of rank 0), a tuple, or
//! unknown; anything the interpretation does not follow is unknown, and an
//! unknown operand never makes a conflict. A conflict is an operation whose
//! known operand shapes Triton would refuse (`tl.dot`'s inner dimensions,
//! broadcasting, a stored value against its pointer block, a reshape that
//! changes the element count). Whether a conflict is a mistake is KL011's
//! business.

use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::HashMap;

use tree_sitter::Node;

use super::nodes::parse_int;
use super::{range_of, FileModel, Kernel};
use crate::model::NodeKind;
use crate::text::TextRange;

/// What an expression is known to be.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum V {
    Int(i64),
    Block(Vec<i64>),
    Tuple(Vec<V>),
    Unknown,
}

impl V {
    /// The shape of a value used as a tensor operand (an integer is a scalar).
    pub(super) fn shape(&self) -> Option<&[i64]> {
        match self {
            V::Int(_) => Some(&[]),
            V::Block(s) => Some(s),
            _ => None,
        }
    }
}

/// An operation whose operand shapes Triton refuses.
#[derive(Debug, Clone)]
pub struct ShapeConflict {
    pub range: TextRange,
    pub message: String,
}

/// Most work (nodes evaluated) one interpretation may do: generated kernels stay bounded.
const BUDGET: usize = 200_000;

pub(super) fn fmt(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

/// Numpy-style broadcasting as Triton does it (the lower rank padded with
/// leading 1s): the result, or the first dimension that differs.
pub(super) fn broadcast(a: &[i64], b: &[i64]) -> Result<Vec<i64>, usize> {
    let rank = a.len().max(b.len());
    let pad = |s: &[i64]| -> Vec<i64> { std::iter::repeat_n(1, rank - s.len()).chain(s.iter().copied()).collect() };
    let (a, b) = (pad(a), pad(b));
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        match (a[i], b[i]) {
            (x, y) if x == y => out.push(x),
            (1, y) => out.push(y),
            (x, 1) => out.push(x),
            _ => return Err(i),
        }
    }
    Ok(out)
}

/// The block shapes the body of `k` builds with constexprs `values`, and the
/// operations among them that Triton refuses. `params_are_scalars`: the
/// kernel's other parameters are scalars (pointers, sizes), true of a kernel
/// launched from host code; a helper's parameters are whatever its callers pass.
pub(crate) fn shape_conflicts<'a>(
    k: &Kernel<'a>,
    model: &FileModel<'a>,
    values: &HashMap<String, i64>,
    params_are_scalars: bool,
) -> Vec<ShapeConflict> {
    let mut env = FxHashMap::default();
    for p in &k.params {
        let v = match values.get(p.name) {
            Some(&v) if p.constexpr => V::Int(v),
            _ if !p.constexpr && params_are_scalars => V::Block(Vec::new()),
            _ => V::Unknown,
        };
        env.insert(p.name.to_string(), v);
    }
    let mut it = Interp { model, env, out: Some(Vec::new()), seen: FxHashSet::default(), budget: BUDGET };
    if let Some(body) = field!(k.node, "body") {
        it.block(body);
    }
    it.out.unwrap_or_default()
}

pub(super) struct Interp<'m, 'a> {
    pub(super) model: &'m FileModel<'a>,
    env: FxHashMap<String, V>,
    /// `None` in a silent pass (a loop body's first pass, which only learns what the loop changes).
    out: Option<Vec<ShapeConflict>>,
    seen: FxHashSet<(usize, usize)>,
    budget: usize,
}

fn merge(envs: Vec<FxHashMap<String, V>>) -> FxHashMap<String, V> {
    let mut it = envs.into_iter();
    let Some(mut first) = it.next() else { return FxHashMap::default() };
    for other in it {
        for (name, v) in first.iter_mut() {
            if other.get(name) != Some(v) {
                *v = V::Unknown;
            }
        }
        for name in other.keys() {
            first.entry(name.clone()).or_insert(V::Unknown);
        }
    }
    first
}

pub(super) const ELEMENTWISE: &[&str] = &[
    "abs",
    "ceil",
    "cos",
    "erf",
    "exp",
    "exp2",
    "floor",
    "log",
    "log2",
    "rsqrt",
    "sigmoid",
    "sin",
    "sqrt",
    "sqrt_rn",
    "cast",
    "softmax",
    "cumsum",
    "cumprod",
    "flip",
    "sort",
    "multiple_of",
    "max_contiguous",
    "max_constancy",
    "associative_scan",
    "randint",
    "rand",
    "randn",
    "fdiv",
    "div_rn",
    "umulhi",
    "maximum",
    "minimum",
    "clamp",
    "fma",
    "where",
];
pub(super) const REDUCTIONS: &[&str] = &["sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce"];

impl<'a> Interp<'_, 'a> {
    pub(super) fn text(&self, n: Node) -> &'a str {
        self.model.text(n)
    }

    pub(super) fn conflict(&mut self, node: Node, message: String) {
        if let Some(out) = &mut self.out {
            if self.seen.insert((node.start_byte(), node.end_byte())) {
                out.push(ShapeConflict { range: range_of(node), message });
            }
        }
    }

    fn block(&mut self, block: Node<'a>) {
        let mut c = block.walk();
        let stmts: Vec<Node> = block.named_children(&mut c).collect();
        for s in stmts {
            if self.budget == 0 {
                return;
            }
            self.statement(s);
        }
    }

    fn statement(&mut self, s: Node<'a>) {
        self.budget = self.budget.saturating_sub(1);
        match s.kind_name() {
            "expression_statement" => {
                let mut c = s.walk();
                let kids: Vec<Node> = s.named_children(&mut c).collect();
                for e in kids {
                    match e.kind_name() {
                        "assignment" => {
                            self.assignment(e);
                        }
                        "augmented_assignment" => self.augmented(e),
                        _ => {
                            self.eval(e);
                        }
                    }
                }
            }
            "if_statement" => self.if_statement(s),
            "for_statement" | "while_statement" => self.looping(s),
            "with_statement" => {
                if let Some(b) = field!(s, "body") {
                    self.block(b);
                }
            }
            "return_statement" | "assert_statement" => {
                let mut c = s.walk();
                let kids: Vec<Node> = s.named_children(&mut c).collect();
                for e in kids {
                    self.eval(e);
                }
            }
            _ => {}
        }
    }

    /// `a = b = value`: binds every target, returns the value.
    fn assignment(&mut self, e: Node<'a>) -> V {
        let Some(right) = field!(e, "right") else { return V::Unknown };
        let v = if right.kind_name() == "assignment" { self.assignment(right) } else { self.eval(right) };
        if let Some(left) = field!(e, "left") {
            self.bind(left, v.clone());
        }
        v
    }

    fn bind(&mut self, target: Node, v: V) {
        match target.kind_name() {
            "identifier" => {
                self.env.insert(self.text(target).to_string(), v);
            }
            "pattern_list" | "tuple_pattern" | "list_pattern" => {
                let mut c = target.walk();
                let kids: Vec<Node> = target.named_children(&mut c).collect();
                let parts = match v {
                    V::Tuple(parts) if parts.len() == kids.len() => parts,
                    _ => vec![V::Unknown; kids.len()],
                };
                for (t, p) in kids.into_iter().zip(parts) {
                    self.bind(t, p);
                }
            }
            _ => {}
        }
    }

    fn augmented(&mut self, e: Node<'a>) {
        let (Some(left), Some(right)) = (field!(e, "left"), field!(e, "right")) else { return };
        let r = self.eval(right);
        if left.kind_name() != "identifier" {
            return;
        }
        let l = self.env.get(self.text(left)).cloned().unwrap_or(V::Unknown);
        let op = field!(e, "operator").map(|o| self.text(o).trim_end_matches('=')).unwrap_or("");
        let v = self.binary(e, op, &l, &r);
        self.bind(left, v);
    }

    /// Truth of a condition where it is a known integer (a constexpr test).
    fn truth(&mut self, cond: Node<'a>) -> Option<bool> {
        match self.eval(cond) {
            V::Int(v) => Some(v != 0),
            _ => None,
        }
    }

    fn if_statement(&mut self, s: Node<'a>) {
        let mut branches: Vec<(Option<Node>, Node)> = Vec::new();
        if let Some(body) = field!(s, "consequence") {
            branches.push((field!(s, "condition"), body));
        }
        let mut c = s.walk();
        for alt in s.children_by_field_name("alternative", &mut c) {
            if let Some(body) = field!(alt, "body").or_else(|| field!(alt, "consequence")) {
                branches.push((field!(alt, "condition"), body));
            }
        }
        let base = self.env.clone();
        let mut outs = Vec::new();
        let mut decided = false;
        for (cond, body) in branches {
            let t = match cond {
                Some(c) => self.truth(c),
                None => Some(true),
            };
            if t == Some(false) {
                continue;
            }
            self.env = base.clone();
            self.block(body);
            outs.push(std::mem::take(&mut self.env));
            if t == Some(true) {
                decided = true;
                break;
            }
        }
        if !decided {
            outs.push(base);
        }
        self.env = merge(outs);
    }

    /// A loop: a silent pass learns what the body changes (those names are
    /// unknown at the top of an iteration unless the body keeps their
    /// value), then a pass that reports.
    fn looping(&mut self, s: Node<'a>) {
        let Some(body) = field!(s, "body") else { return };
        if let Some(cond) = field!(s, "condition") {
            self.eval(cond);
        }
        if let (Some(left), Some(right)) = (field!(s, "left"), field!(s, "right")) {
            self.eval(right);
            let counts = right.kind_name() == "call"
                && field!(right, "function").is_some_and(|f| {
                    let t = self.text(f);
                    t == "range" || t.ends_with(".range") || t.ends_with(".static_range")
                });
            self.bind(left, if counts { V::Block(Vec::new()) } else { V::Unknown });
        }
        let before = self.env.clone();
        let out = self.out.take();
        self.block(body);
        self.out = out;
        let after = std::mem::take(&mut self.env);
        self.env = merge(vec![before, after]);
        let top = self.env.clone();
        self.block(body);
        let after = std::mem::take(&mut self.env);
        self.env = merge(vec![top, after]);
        if let Some(alt) = field!(s, "alternative").and_then(|a| field!(a, "body")) {
            self.block(alt);
        }
    }

    pub(super) fn eval(&mut self, n: Node<'a>) -> V {
        if self.budget == 0 {
            return V::Unknown;
        }
        self.budget -= 1;
        let t = self.text(n);
        match n.kind_name() {
            "integer" => parse_int(t.trim()).map(V::Int).unwrap_or(V::Unknown),
            "float" => V::Block(Vec::new()),
            "true" => V::Int(1),
            "false" => V::Int(0),
            "identifier" => match self.env.get(t) {
                Some(v) => v.clone(),
                None => self.model.eval_int(0, n, 0).map(V::Int).unwrap_or(V::Unknown),
            },
            "parenthesized_expression" => n.named_child(0).map(|c| self.eval(c)).unwrap_or(V::Unknown),
            "tuple" | "list" => {
                let mut c = n.walk();
                let kids: Vec<Node> = n.named_children(&mut c).collect();
                V::Tuple(kids.into_iter().map(|k| self.eval(k)).collect())
            }
            "binary_operator" => {
                let (Some(l), Some(r)) = (field!(n, "left"), field!(n, "right")) else {
                    return V::Unknown;
                };
                let (lv, rv) = (self.eval(l), self.eval(r));
                let op = field!(n, "operator").map(|o| self.text(o)).unwrap_or("");
                self.binary(n, op, &lv, &rv)
            }
            "comparison_operator" => self.comparison(n),
            "unary_operator" => {
                let v = field!(n, "argument").map(|a| self.eval(a)).unwrap_or(V::Unknown);
                let op = field!(n, "operator").map(|o| self.text(o)).unwrap_or("");
                match (v, op) {
                    (V::Int(i), "-") => i.checked_neg().map(V::Int).unwrap_or(V::Unknown),
                    (V::Int(i), "+") => V::Int(i),
                    (V::Int(i), "~") => V::Int(!i),
                    (V::Block(s), _) => V::Block(s),
                    _ => V::Unknown,
                }
            }
            "not_operator" => match field!(n, "argument").map(|a| self.eval(a)) {
                Some(V::Int(i)) => V::Int((i == 0) as i64),
                _ => V::Unknown,
            },
            "boolean_operator" => {
                let (Some(l), Some(r)) = (field!(n, "left"), field!(n, "right")) else {
                    return V::Unknown;
                };
                let (lv, rv) = (self.eval(l), self.eval(r));
                let op = field!(n, "operator").map(|o| self.text(o)).unwrap_or("");
                match (lv, rv, op) {
                    (V::Int(a), V::Int(b), "and") => V::Int(if a == 0 { a } else { b }),
                    (V::Int(a), V::Int(b), "or") => V::Int(if a != 0 { a } else { b }),
                    _ => V::Unknown,
                }
            }
            "conditional_expression" => {
                let mut c = n.walk();
                let kids: Vec<Node> = n.named_children(&mut c).collect();
                let [a, cond, b] = kids.as_slice() else { return V::Unknown };
                match self.truth(*cond) {
                    Some(true) => self.eval(*a),
                    Some(false) => self.eval(*b),
                    None => {
                        let (x, y) = (self.eval(*a), self.eval(*b));
                        if x == y {
                            x
                        } else {
                            V::Unknown
                        }
                    }
                }
            }
            "subscript" => self.subscript(n),
            "attribute" => self.attribute(n),
            "call" => self.call(n),
            _ => V::Unknown,
        }
    }

    pub(super) fn binary(&mut self, n: Node, op: &str, l: &V, r: &V) -> V {
        if let (V::Int(a), V::Int(b)) = (l, r) {
            let (a, b) = (*a, *b);
            let v = match op {
                "+" => a.checked_add(b),
                "-" => a.checked_sub(b),
                "*" => a.checked_mul(b),
                "//" => a.checked_div_euclid(b),
                "%" => a.checked_rem_euclid(b),
                "<<" if (0..63).contains(&b) => a.checked_shl(b as u32),
                ">>" if (0..63).contains(&b) => Some(a >> b),
                "&" => Some(a & b),
                "|" => Some(a | b),
                "^" => Some(a ^ b),
                "**" if (0..63).contains(&b) => a.checked_pow(b as u32),
                "/" => return V::Block(Vec::new()),
                _ => None,
            };
            return v.map(V::Int).unwrap_or(V::Block(Vec::new()));
        }
        if op == "@" {
            return V::Unknown;
        }
        self.broadcast_values(n, &[l, r], &format!("`{op}`"))
    }

    /// The broadcast of `values`, reporting at `n` the first pair of known shapes that does not broadcast.
    pub(super) fn broadcast_values(&mut self, n: Node, values: &[&V], what: &str) -> V {
        let mut acc: Option<Vec<i64>> = Some(Vec::new());
        for v in values {
            let Some(s) = v.shape() else {
                acc = None;
                continue;
            };
            let Some(a) = &acc else { continue };
            match broadcast(a, s) {
                Ok(b) => acc = Some(b),
                Err(_) => {
                    let msg = format!("the operands of {what} do not broadcast: {} and {}", fmt(a), fmt(s));
                    self.conflict(n, msg);
                    return V::Unknown;
                }
            }
        }
        // An unknown operand may carry dimensions of its own.
        if values.iter().any(|v| v.shape().is_none()) {
            return V::Unknown;
        }
        acc.map(V::Block).unwrap_or(V::Unknown)
    }

    fn comparison(&mut self, n: Node<'a>) -> V {
        let mut c = n.walk();
        let operands: Vec<Node> = n.named_children(&mut c).collect();
        let vals: Vec<V> = operands.iter().map(|o| self.eval(*o)).collect();
        if let [V::Int(a), V::Int(b)] = vals.as_slice() {
            let op = n.child(1).map(|o| self.text(o)).unwrap_or("");
            let r = match op {
                "<" => a < b,
                "<=" => a <= b,
                ">" => a > b,
                ">=" => a >= b,
                "==" => a == b,
                "!=" => a != b,
                _ => return V::Unknown,
            };
            return V::Int(r as i64);
        }
        let refs: Vec<&V> = vals.iter().collect();
        self.broadcast_values(n, &refs, "a comparison")
    }

    fn subscript(&mut self, n: Node<'a>) -> V {
        let Some(value) = field!(n, "value") else { return V::Unknown };
        let v = self.eval(value);
        let mut c = n.walk();
        let index: Vec<Node> = n.children_by_field_name("subscript", &mut c).collect();
        match v {
            V::Tuple(parts) => match index.as_slice() {
                [i] => match self.eval(*i) {
                    V::Int(i) => {
                        let i = if i < 0 { i + parts.len() as i64 } else { i };
                        usize::try_from(i).ok().and_then(|i| parts.get(i).cloned()).unwrap_or(V::Unknown)
                    }
                    _ => V::Unknown,
                },
                _ => V::Unknown,
            },
            V::Block(shape) => {
                let mut dims = shape.iter();
                let mut out = Vec::new();
                for i in index {
                    match i.kind_name() {
                        "none" => out.push(1),
                        "slice" if i.named_child_count() == 0 => match dims.next() {
                            Some(&d) => out.push(d),
                            None => return V::Unknown,
                        },
                        _ => return V::Unknown,
                    }
                }
                out.extend(dims);
                V::Block(out)
            }
            _ => V::Unknown,
        }
    }

    fn attribute(&mut self, n: Node<'a>) -> V {
        let (Some(object), Some(attr)) = (field!(n, "object"), field!(n, "attribute")) else {
            return V::Unknown;
        };
        if self.is_tl(object) {
            return V::Unknown;
        }
        match (self.eval(object), self.text(attr)) {
            (V::Block(s), "T") if s.len() == 2 => V::Block(vec![s[1], s[0]]),
            (V::Block(s), "shape") => V::Tuple(s.into_iter().map(V::Int).collect()),
            _ => V::Unknown,
        }
    }

    /// `tl`, `triton.language`, `tl.math`, `libdevice` and the like: a module of Triton's functions.
    pub(super) fn is_tl(&self, object: Node) -> bool {
        let t = self.text(object);
        let head = t.split('.').next().unwrap_or("");
        self.model.is_tl_alias(head) || t == "triton.language" || t.starts_with("triton.language.") || t == "libdevice"
    }

    /// A shape argument: a tuple or list of known integers, or one integer.
    pub(super) fn shape_of(&mut self, n: Node<'a>) -> Option<Vec<i64>> {
        match self.eval(n) {
            V::Int(i) => Some(vec![i]),
            V::Tuple(parts) => parts.iter().map(|p| if let V::Int(i) = p { Some(*i) } else { None }).collect(),
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "shapes_tests.rs"]
mod tests;
