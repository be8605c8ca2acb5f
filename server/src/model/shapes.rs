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

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::nodes::{call_arguments, parse_int};
use super::{range_of, FileModel, Kernel};
use crate::text::TextRange;

/// What an expression is known to be.
#[derive(Debug, Clone, PartialEq)]
enum V {
    Int(i64),
    Block(Vec<i64>),
    Tuple(Vec<V>),
    Unknown,
}

impl V {
    /// The shape of a value used as a tensor operand (an integer is a scalar).
    fn shape(&self) -> Option<&[i64]> {
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

fn fmt(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

/// Numpy-style broadcasting as Triton does it (the lower rank padded with
/// leading 1s): the result, or the first dimension that differs.
fn broadcast(a: &[i64], b: &[i64]) -> Result<Vec<i64>, usize> {
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
pub fn shape_conflicts<'a>(
    k: &Kernel<'a>,
    model: &FileModel<'a>,
    values: &HashMap<String, i64>,
    params_are_scalars: bool,
) -> Vec<ShapeConflict> {
    let mut env = HashMap::new();
    for p in &k.params {
        let v = match values.get(&p.name) {
            Some(&v) if p.constexpr => V::Int(v),
            _ if !p.constexpr && params_are_scalars => V::Block(Vec::new()),
            _ => V::Unknown,
        };
        env.insert(p.name.clone(), v);
    }
    let mut it = Interp { model, env, out: Some(Vec::new()), seen: HashSet::new(), budget: BUDGET };
    if let Some(body) = k.node.child_by_field_name("body") {
        it.block(body);
    }
    it.out.unwrap_or_default()
}

struct Interp<'m, 'a> {
    model: &'m FileModel<'a>,
    env: HashMap<String, V>,
    /// `None` in a silent pass (a loop body's first pass, which only learns what the loop changes).
    out: Option<Vec<ShapeConflict>>,
    seen: HashSet<(usize, usize)>,
    budget: usize,
}

fn merge(envs: Vec<HashMap<String, V>>) -> HashMap<String, V> {
    let mut it = envs.into_iter();
    let Some(mut first) = it.next() else { return HashMap::new() };
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

const ELEMENTWISE: &[&str] = &[
    "abs", "ceil", "cos", "erf", "exp", "exp2", "floor", "log", "log2", "rsqrt", "sigmoid", "sin", "sqrt", "sqrt_rn",
    "cast", "softmax", "cumsum", "cumprod", "flip", "sort", "multiple_of", "max_contiguous", "max_constancy",
    "associative_scan", "randint", "rand", "randn", "fdiv", "div_rn", "umulhi", "maximum", "minimum", "clamp", "fma",
    "where",
];
const REDUCTIONS: &[&str] = &["sum", "max", "min", "argmax", "argmin", "xor_sum", "reduce"];

impl<'a> Interp<'_, 'a> {
    fn text(&self, n: Node) -> &'a str {
        self.model.text(n)
    }

    fn conflict(&mut self, node: Node, message: String) {
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
        match s.kind() {
            "expression_statement" => {
                let mut c = s.walk();
                let kids: Vec<Node> = s.named_children(&mut c).collect();
                for e in kids {
                    match e.kind() {
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
                if let Some(b) = s.child_by_field_name("body") {
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
        let Some(right) = e.child_by_field_name("right") else { return V::Unknown };
        let v = if right.kind() == "assignment" { self.assignment(right) } else { self.eval(right) };
        if let Some(left) = e.child_by_field_name("left") {
            self.bind(left, v.clone());
        }
        v
    }

    fn bind(&mut self, target: Node, v: V) {
        match target.kind() {
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
        let (Some(left), Some(right)) = (e.child_by_field_name("left"), e.child_by_field_name("right")) else { return };
        let r = self.eval(right);
        if left.kind() != "identifier" {
            return;
        }
        let l = self.env.get(self.text(left)).cloned().unwrap_or(V::Unknown);
        let op = e.child_by_field_name("operator").map(|o| self.text(o).trim_end_matches('=')).unwrap_or("");
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
        if let Some(body) = s.child_by_field_name("consequence") {
            branches.push((s.child_by_field_name("condition"), body));
        }
        let mut c = s.walk();
        for alt in s.children_by_field_name("alternative", &mut c) {
            if let Some(body) = alt.child_by_field_name("body").or_else(|| alt.child_by_field_name("consequence")) {
                branches.push((alt.child_by_field_name("condition"), body));
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
        let Some(body) = s.child_by_field_name("body") else { return };
        if let Some(cond) = s.child_by_field_name("condition") {
            self.eval(cond);
        }
        if let (Some(left), Some(right)) = (s.child_by_field_name("left"), s.child_by_field_name("right")) {
            self.eval(right);
            let counts = right.kind() == "call"
                && right.child_by_field_name("function").is_some_and(|f| {
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
        if let Some(alt) = s.child_by_field_name("alternative").and_then(|a| a.child_by_field_name("body")) {
            self.block(alt);
        }
    }

    fn eval(&mut self, n: Node<'a>) -> V {
        if self.budget == 0 {
            return V::Unknown;
        }
        self.budget -= 1;
        let t = self.text(n);
        match n.kind() {
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
                let (Some(l), Some(r)) = (n.child_by_field_name("left"), n.child_by_field_name("right")) else {
                    return V::Unknown;
                };
                let (lv, rv) = (self.eval(l), self.eval(r));
                let op = n.child_by_field_name("operator").map(|o| self.text(o)).unwrap_or("");
                self.binary(n, op, &lv, &rv)
            }
            "comparison_operator" => self.comparison(n),
            "unary_operator" => {
                let v = n.child_by_field_name("argument").map(|a| self.eval(a)).unwrap_or(V::Unknown);
                let op = n.child_by_field_name("operator").map(|o| self.text(o)).unwrap_or("");
                match (v, op) {
                    (V::Int(i), "-") => V::Int(-i),
                    (V::Int(i), "+") => V::Int(i),
                    (V::Int(i), "~") => V::Int(!i),
                    (V::Block(s), _) => V::Block(s),
                    _ => V::Unknown,
                }
            }
            "not_operator" => match n.child_by_field_name("argument").map(|a| self.eval(a)) {
                Some(V::Int(i)) => V::Int((i == 0) as i64),
                _ => V::Unknown,
            },
            "boolean_operator" => {
                let (Some(l), Some(r)) = (n.child_by_field_name("left"), n.child_by_field_name("right")) else {
                    return V::Unknown;
                };
                let (lv, rv) = (self.eval(l), self.eval(r));
                let op = n.child_by_field_name("operator").map(|o| self.text(o)).unwrap_or("");
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

    fn binary(&mut self, n: Node, op: &str, l: &V, r: &V) -> V {
        if let (V::Int(a), V::Int(b)) = (l, r) {
            let (a, b) = (*a, *b);
            let v = match op {
                "+" => a.checked_add(b),
                "-" => a.checked_sub(b),
                "*" => a.checked_mul(b),
                "//" if b != 0 => Some(a.div_euclid(b)),
                "%" if b != 0 => Some(a.rem_euclid(b)),
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
    fn broadcast_values(&mut self, n: Node, values: &[&V], what: &str) -> V {
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
        let Some(value) = n.child_by_field_name("value") else { return V::Unknown };
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
                    match i.kind() {
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
        let (Some(object), Some(attr)) = (n.child_by_field_name("object"), n.child_by_field_name("attribute")) else {
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
    fn is_tl(&self, object: Node) -> bool {
        let t = self.text(object);
        let head = t.split('.').next().unwrap_or("");
        self.model.is_tl_alias(head) || t == "triton.language" || t.starts_with("triton.language.") || t == "libdevice"
    }

    /// A shape argument: a tuple or list of known integers, or one integer.
    fn shape_of(&mut self, n: Node<'a>) -> Option<Vec<i64>> {
        match self.eval(n) {
            V::Int(i) => Some(vec![i]),
            V::Tuple(parts) => parts.iter().map(|p| if let V::Int(i) = p { Some(*i) } else { None }).collect(),
            _ => None,
        }
    }

    fn call(&mut self, n: Node<'a>) -> V {
        let Some(function) = n.child_by_field_name("function") else { return V::Unknown };
        let (args, kwargs) = call_arguments(n, self.model.src);
        if function.kind() == "identifier" {
            let vals: Vec<V> = args.iter().map(|a| self.eval(*a)).collect();
            for (_, v) in &kwargs {
                self.eval(*v);
            }
            let ints: Option<Vec<i64>> = vals.iter().map(|v| if let V::Int(i) = v { Some(*i) } else { None }).collect();
            let scalars = !vals.is_empty() && vals.iter().all(|v| v.shape() == Some(&[]));
            return match (self.text(function), ints.as_deref()) {
                ("min", Some(i)) if !i.is_empty() => i.iter().min().map(|&m| V::Int(m)).unwrap_or(V::Unknown),
                ("max", Some(i)) if !i.is_empty() => i.iter().max().map(|&m| V::Int(m)).unwrap_or(V::Unknown),
                ("min" | "max", None) if scalars => V::Block(Vec::new()),
                _ => V::Unknown,
            };
        }
        if function.kind() != "attribute" {
            return V::Unknown;
        }
        let (Some(object), Some(attr)) = (function.child_by_field_name("object"), function.child_by_field_name("attribute"))
        else {
            return V::Unknown;
        };
        let name = self.text(attr);
        if self.is_tl(object) {
            return self.tl_call(n, name, &args, &kwargs);
        }
        let receiver = self.eval(object);
        match receiver {
            V::Block(_) => self.method_call(n, name, receiver, &args, &kwargs),
            _ => {
                for a in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
                    self.eval(*a);
                }
                V::Unknown
            }
        }
    }

    fn method_call(&mut self, n: Node<'a>, name: &str, recv: V, args: &[Node<'a>], kwargs: &[(String, Node<'a>)]) -> V {
        let vals: Vec<V> = args.iter().map(|a| self.eval(*a)).collect();
        let kw: Vec<(String, V)> = kwargs.iter().map(|(k, v)| (k.clone(), self.eval(*v))).collect();
        let V::Block(shape) = recv else { return V::Unknown };
        match name {
            "to" | "cast" => V::Block(shape),
            "trans" | "permute" => permute(&shape, &vals),
            "reshape" | "view" => self.reshape(n, &shape, &vals),
            "broadcast_to" => self.broadcast_to(n, &shape, &vals),
            _ if REDUCTIONS.contains(&name) => reduce(&shape, vals.first(), &kw),
            _ => V::Unknown,
        }
    }

    fn tl_call(&mut self, n: Node<'a>, name: &str, args: &[Node<'a>], kwargs: &[(String, Node<'a>)]) -> V {
        let vals: Vec<V> = args.iter().map(|a| self.eval(*a)).collect();
        let kw: Vec<(String, V)> = kwargs.iter().map(|(k, v)| (k.clone(), self.eval(*v))).collect();
        let arg = |i: usize, key: &str| -> V {
            vals.get(i).cloned().or_else(|| kw.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())).unwrap_or(V::Unknown)
        };
        let has = |i: usize, key: &str| vals.len() > i || kw.iter().any(|(k, _)| k == key);
        match name {
            "program_id" | "num_programs" | "cdiv" => match (arg(0, "x"), arg(1, "div"), name) {
                (V::Int(a), V::Int(b), "cdiv") if b > 0 => V::Int((a + b - 1).div_euclid(b)),
                _ => V::Block(Vec::new()),
            },
            "arange" => match (arg(0, "start"), arg(1, "end")) {
                (V::Int(a), V::Int(b)) if b > a => V::Block(vec![b - a]),
                _ => V::Unknown,
            },
            "zeros" | "full" | "empty" => {
                let shape = args.first().copied().or_else(|| kwargs.iter().find(|(k, _)| k == "shape").map(|(_, v)| *v));
                shape.and_then(|s| self.shape_of(s)).map(V::Block).unwrap_or(V::Unknown)
            }
            "zeros_like" | "full_like" | "empty_like" => match arg(0, "input") {
                V::Block(s) => V::Block(s),
                _ => V::Unknown,
            },
            "load" => {
                let (ptr, mask, other) = (arg(0, "pointer"), arg(1, "mask"), arg(2, "other"));
                let Some(p) = ptr.shape() else { return V::Unknown };
                if p.is_empty() {
                    for (what, v) in [("mask", &mask), ("other", &other)] {
                        if let Some(s) = v.shape().filter(|s| !s.is_empty()) {
                            let msg = format!("`tl.load` from a scalar pointer with a block {what} of shape {}", fmt(s));
                            self.conflict(n, msg);
                            return V::Unknown;
                        }
                    }
                    return if has(1, "mask") && mask.shape().is_none() { V::Unknown } else { V::Block(Vec::new()) };
                }
                let present: Vec<&V> =
                    [(&ptr, true), (&mask, has(1, "mask")), (&other, has(2, "other"))].into_iter().filter(|(_, h)| *h).map(|(v, _)| v).collect();
                self.broadcast_values(n, &present, "`tl.load` (pointer, mask, other)")
            }
            "store" | "atomic_add" | "atomic_max" | "atomic_min" | "atomic_and" | "atomic_or" | "atomic_xor"
            | "atomic_xchg" => self.store(n, name, &arg(0, "pointer"), &arg(1, if name == "store" { "value" } else { "val" }), has(2, "mask").then(|| arg(2, "mask"))),
            "dot" => self.dot(n, &arg(0, "input"), &arg(1, "other"), has(2, "acc").then(|| arg(2, "acc"))),
            "trans" | "permute" => match arg(0, "input") {
                V::Block(s) => {
                    let dims = if vals.len() > 1 { vals[1..].to_vec() } else { kw.iter().filter(|(k, _)| k == "dims").map(|(_, v)| v.clone()).collect() };
                    permute(&s, &dims)
                }
                _ => V::Unknown,
            },
            "reshape" | "view" => match arg(0, "input") {
                V::Block(s) => {
                    let dims = if vals.len() > 1 { vals[1..].to_vec() } else { kw.iter().filter(|(k, _)| k == "shape").map(|(_, v)| v.clone()).collect() };
                    self.reshape(n, &s, &dims)
                }
                _ => V::Unknown,
            },
            "broadcast_to" => match arg(0, "input") {
                V::Block(s) => {
                    let dims = if vals.len() > 1 { vals[1..].to_vec() } else { kw.iter().filter(|(k, _)| k == "shape").map(|(_, v)| v.clone()).collect() };
                    self.broadcast_to(n, &s, &dims)
                }
                _ => V::Unknown,
            },
            "expand_dims" => match (arg(0, "input"), arg(1, "axis")) {
                (V::Block(mut s), V::Int(a)) => {
                    let rank = s.len() as i64 + 1;
                    let a = if a < 0 { a + rank } else { a };
                    if !(0..rank).contains(&a) {
                        return V::Unknown;
                    }
                    s.insert(a as usize, 1);
                    V::Block(s)
                }
                _ => V::Unknown,
            },
            "where" | "maximum" | "minimum" | "clamp" | "fma" | "fdiv" | "div_rn" | "umulhi" => {
                let refs: Vec<&V> = vals.iter().collect();
                self.broadcast_values(n, &refs, &format!("`tl.{name}`"))
            }
            _ if REDUCTIONS.contains(&name) => match vals.first() {
                Some(V::Block(s)) => reduce(s, vals.get(1), &kw),
                _ => V::Unknown,
            },
            _ if ELEMENTWISE.contains(&name) => match vals.first().or(kw.first().map(|(_, v)| v)) {
                Some(V::Block(s)) => V::Block(s.clone()),
                _ => V::Unknown,
            },
            _ => V::Unknown,
        }
    }

    fn store(&mut self, n: Node, name: &str, ptr: &V, val: &V, mask: Option<V>) -> V {
        let (Some(p), Some(v)) = (ptr.shape(), val.shape()) else { return V::Unknown };
        if p.is_empty() {
            if !v.is_empty() {
                let msg = format!("`tl.{name}` of a block of shape {} through a scalar pointer", fmt(v));
                self.conflict(n, msg);
            }
            return V::Unknown;
        }
        let mut all = vec![ptr, val];
        if let Some(m) = &mask {
            all.push(m);
        }
        let V::Block(b) = self.broadcast_values(n, &all, &format!("`tl.{name}` (pointer, value, mask)")) else {
            return V::Unknown;
        };
        if b != p {
            let msg = format!(
                "`tl.{name}` writes a block of shape {} through a pointer block of shape {}",
                fmt(&b),
                fmt(p)
            );
            self.conflict(n, msg);
        }
        V::Unknown
    }

    fn dot(&mut self, n: Node, a: &V, b: &V, acc: Option<V>) -> V {
        let (Some(x), Some(y)) = (a.shape(), b.shape()) else { return V::Unknown };
        let (x, y) = (x.to_vec(), y.to_vec());
        if x.len() != y.len() || !(2..=3).contains(&x.len()) {
            self.conflict(n, format!("`tl.dot` takes two 2-D or two 3-D blocks, not {} and {}", fmt(&x), fmt(&y)));
            return V::Unknown;
        }
        let r = x.len();
        if x[r - 1] != y[r - 2] {
            let msg = format!(
                "`tl.dot` inner dimensions differ: {} @ {} ({} != {})",
                fmt(&x),
                fmt(&y),
                x[r - 1],
                y[r - 2]
            );
            self.conflict(n, msg);
            return V::Unknown;
        }
        if r == 3 && x[0] != y[0] {
            self.conflict(n, format!("`tl.dot` batch dimensions differ: {} @ {}", fmt(&x), fmt(&y)));
            return V::Unknown;
        }
        if x[r - 1] < MIN_DOT_K {
            let msg = format!(
                "`tl.dot` over K = {} ({} @ {}): Triton needs K >= {MIN_DOT_K} (8 for fp32, 16 for fp16/bf16, 32 for 8-bit types)",
                x[r - 1],
                fmt(&x),
                fmt(&y)
            );
            self.conflict(n, msg);
            return V::Unknown;
        }
        let mut out = x[..r - 1].to_vec();
        out.push(y[r - 1]);
        if let Some(s) = acc.as_ref().and_then(|a| a.shape()) {
            if s != out.as_slice() {
                let msg = format!("`tl.dot` accumulator has shape {}, the product {}", fmt(s), fmt(&out));
                self.conflict(n, msg);
                return V::Unknown;
            }
        }
        V::Block(out)
    }

    fn reshape(&mut self, n: Node, shape: &[i64], dims: &[V]) -> V {
        let Some(target) = dims_of(dims) else { return V::Unknown };
        let (from, to) = (shape.iter().product::<i64>(), target.iter().product::<i64>());
        if from != to {
            let msg = format!("reshape of {} ({from} elements) into {} ({to} elements)", fmt(shape), fmt(&target));
            self.conflict(n, msg);
            return V::Unknown;
        }
        V::Block(target)
    }

    fn broadcast_to(&mut self, n: Node, shape: &[i64], dims: &[V]) -> V {
        let Some(target) = dims_of(dims) else { return V::Unknown };
        match broadcast(shape, &target) {
            Ok(b) if b == target => V::Block(target),
            _ => {
                self.conflict(n, format!("`broadcast_to` of {} into {}", fmt(shape), fmt(&target)));
                V::Unknown
            }
        }
    }
}

/// Triton 3.9's smallest reduction dimension of `tl.dot` for any operand
/// type it takes on NVIDIA GPUs (fp32's 8; 16-bit types need 16, 8-bit 32).
const MIN_DOT_K: i64 = 8;

/// Dimensions given as varargs (`reshape(x, A, B)`) or one tuple (`reshape(x, (A, B))`).
fn dims_of(dims: &[V]) -> Option<Vec<i64>> {
    let flat: Vec<&V> = match dims {
        [V::Tuple(parts)] => parts.iter().collect(),
        _ => dims.iter().collect(),
    };
    if flat.is_empty() {
        return None;
    }
    flat.iter().map(|v| if let V::Int(i) = v { Some(*i) } else { None }).collect()
}

fn permute(shape: &[i64], dims: &[V]) -> V {
    if dims.is_empty() {
        return if shape.len() == 2 { V::Block(vec![shape[1], shape[0]]) } else { V::Unknown };
    }
    let Some(order) = dims_of(dims) else { return V::Unknown };
    if order.len() != shape.len() {
        return V::Unknown;
    }
    let out: Option<Vec<i64>> = order.iter().map(|&i| usize::try_from(i).ok().and_then(|i| shape.get(i).copied())).collect();
    out.map(V::Block).unwrap_or(V::Unknown)
}

fn reduce(shape: &[i64], axis: Option<&V>, kw: &[(String, V)]) -> V {
    let axis = axis.cloned().or_else(|| kw.iter().find(|(k, _)| k == "axis").map(|(_, v)| v.clone()));
    let keep = kw.iter().find(|(k, _)| k == "keep_dims").map(|(_, v)| v.clone());
    let keep = match keep {
        None => false,
        Some(V::Int(i)) => i != 0,
        Some(_) => return V::Unknown,
    };
    if kw.iter().any(|(k, _)| k == "return_indices") {
        return V::Unknown;
    }
    match axis {
        None => V::Block(if keep { vec![1; shape.len()] } else { Vec::new() }),
        Some(V::Int(a)) => {
            let rank = shape.len() as i64;
            let a = if a < 0 { a + rank } else { a };
            if !(0..rank).contains(&a) {
                return V::Unknown;
            }
            let mut out = shape.to_vec();
            if keep {
                out[a as usize] = 1;
            } else {
                out.remove(a as usize);
            }
            V::Block(out)
        }
        _ => V::Unknown,
    }
}

/// One set of constexpr values a kernel is compiled with, and where it is written.
pub struct ConstexprConfig {
    /// "this launch of `k`", "this `triton.Config`", "the parameters' defaults".
    pub label: String,
    pub at: Option<TextRange>,
    pub values: HashMap<String, i64>,
}

/// Most configurations a kernel's shapes are checked under.
const MAX_CONFIGS: usize = 32;

/// The constexpr values `k` is compiled with, as far as this file tells:
/// each autotune configuration (with what each launch passes beside it),
/// else each launch (by keyword or position; a value that is not a known
/// integer is unknown, never the default), else the defaults. Names a
/// `@triton.heuristics` decorator sets are unknown. A helper called from
/// other kernels gets what its callers pass, so nothing is known of it.
pub fn constexpr_configs<'a>(k: &Kernel<'a>, model: &FileModel<'a>) -> Vec<ConstexprConfig> {
    let constexprs: Vec<(usize, &str)> =
        k.params.iter().enumerate().filter(|(_, p)| p.constexpr).map(|(i, p)| (i, p.name.as_str())).collect();
    let heuristic: HashSet<String> = k
        .decorators
        .iter()
        .filter(|d| model.text(**d).contains("heuristics"))
        .flat_map(|d| {
            let mut keys = Vec::new();
            super::visit_nodes(*d, &mut |n| {
                if n.kind() == "pair" {
                    if let Some(key) = n.child_by_field_name("key") {
                        keys.push(model.text(key).trim_matches(|c| c == '"' || c == '\'').to_string());
                    }
                }
            });
            keys
        })
        .collect();
    let defaults: HashMap<String, i64> = k
        .params
        .iter()
        .filter(|p| p.constexpr && !heuristic.contains(&p.name))
        .filter_map(|p| Some((p.name.clone(), parse_int(model.text(p.default?).trim())?)))
        .collect();
    let launched: Vec<ConstexprConfig> = model
        .launches_of_kernel(k)
        .map(|l| {
            let splat = l.args.iter().any(|a| a.kind() == "list_splat")
                || super::nodes::any_node(l.node, |n| n.kind() == "dictionary_splat");
            let mut values = if splat { HashMap::new() } else { defaults.clone() };
            for &(i, name) in &constexprs {
                let given = if splat { l.kwarg(name) } else { l.value_for(name, i) };
                if let Some(node) = given {
                    match model.eval_int(l.host_fn, node, 0) {
                        Some(v) => values.insert(name.to_string(), v),
                        None => values.remove(name),
                    };
                }
            }
            ConstexprConfig { label: format!("this launch of `{}`", k.name), at: Some(l.name_range), values }
        })
        .collect();
    let tuned: Vec<ConstexprConfig> = super::smem::configs(k, model, &[])
        .into_iter()
        .filter(|c| c.from_autotune)
        .map(|c| ConstexprConfig {
            label: c.label,
            at: Some(c.at),
            values: c.values.into_iter().map(|(name, (v, _))| (name, v)).collect(),
        })
        .collect();
    let mut out: Vec<ConstexprConfig> = match (tuned.is_empty(), launched.is_empty()) {
        (true, true) if model.kernel_calls_to(k).is_empty() => {
            vec![ConstexprConfig { label: "the parameters' defaults".into(), at: None, values: defaults }]
        }
        (true, true) => Vec::new(),
        (true, false) => launched,
        (false, true) => tuned,
        (false, false) => tuned
            .iter()
            .flat_map(|t| {
                launched.iter().map(move |l| {
                    let mut values = l.values.clone();
                    values.extend(t.values.iter().map(|(n, v)| (n.clone(), *v)));
                    ConstexprConfig { label: t.label.clone(), at: t.at, values }
                })
            })
            .collect(),
    };
    for c in &mut out {
        c.values.retain(|name, _| !heuristic.contains(name) && k.is_constexpr(name));
    }
    let mut seen = Vec::new();
    out.retain(|c| {
        let mut key: Vec<(&String, &i64)> = c.values.iter().collect();
        key.sort();
        let key: Vec<(String, i64)> = key.into_iter().map(|(n, v)| (n.clone(), *v)).collect();
        if seen.contains(&key) {
            return false;
        }
        seen.push(key);
        true
    });
    out.truncate(MAX_CONFIGS);
    out
}
