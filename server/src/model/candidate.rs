//! Facts of a KernelBench candidate (a file defining `ModelNew`), which the
//! hygiene rules (KL101-KL109), the checker and the rewrite gate all read:
//! which file is a candidate, which host code `ModelNew.forward` reaches, how
//! a dotted name resolves through the file's imports, where a returned value
//! comes from, whether the task is half precision (`task_is_half`) and what
//! `ModelNew` stores on `self` during a call (`self_stores`).
//!
//! Everything here reads the syntax tree of one file; nothing does I/O, and
//! nothing here decides that a fact is a mistake (that is a rule's business).

use std::collections::HashSet;

use tree_sitter::Node;

use crate::model::NodeKind;
use crate::model::{inside, range_of, visit_nodes, FileModel};
use crate::text::TextRange;

/// Deeper data flow than this is not followed.
const MAX_TRACE: usize = 12;

/// A candidate file defines `class ModelNew`; a reference file gets none of the hygiene rules.
pub(crate) fn is_candidate(model: &FileModel) -> bool {
    model.classes.iter().any(|c| c.name == "ModelNew")
}

/// Index in `host_fns` of `class.name`.
pub fn method(model: &FileModel, class: &str, name: &str) -> Option<usize> {
    (1..model.host_fns.len())
        .find(|&i| model.host_fns[i].class.as_deref() == Some(class) && model.host_fns[i].name == name)
}

/// The class node named `name`.
pub(crate) fn class_node<'a>(model: &FileModel<'a>, name: &str) -> Option<Node<'a>> {
    model.classes.iter().find(|c| c.name == name).map(|c| c.node)
}

/// Host functions `from` reaches through calls (itself included): helpers of
/// this file, methods, and the `forward` of an autograd `Function` called as
/// `F.apply(...)`. In the order they are found.
pub(crate) fn reachable(model: &FileModel, from: usize) -> Vec<usize> {
    let mut found = Vec::new();
    reaches(model, from, |f| {
        found.push(f);
        false
    });
    found
}

/// Whether a host function `from` reaches (as [`reachable`], in that order)
/// is one for which `visit` holds: the search stops at the first, so a
/// `forward` whose first helper launches a kernel does not walk every helper
/// after it.
pub fn reaches(model: &FileModel, from: usize, mut visit: impl FnMut(usize) -> bool) -> bool {
    let mut seen = vec![false; model.host_fns.len()];
    seen[from] = true;
    if visit(from) {
        return true;
    }
    let mut stack = vec![from];
    // Each callee is visited as it is resolved, before the next call is:
    // the order is that of the calls, and a search that stops early does
    // not resolve the rest.
    let mut consider = |n: usize, stack: &mut Vec<usize>| {
        if seen[n] {
            return false;
        }
        seen[n] = true;
        stack.push(n);
        visit(n)
    };
    while let Some(f) = stack.pop() {
        for call in &model.host_fns[f].calls {
            for n in model.callees(f, call) {
                if consider(n, &mut stack) {
                    return true;
                }
            }
        }
        // `GruFunction.apply(x, ...)` runs the class's static `forward`.
        if let Some(stub) = &model.host_fns[f].stub {
            // A stub's calls are not in the node index: it kept the classes.
            for n in stub.apply_classes.iter().filter_map(|class| method(model, class, "forward")) {
                if consider(n, &mut stack) {
                    return true;
                }
            }
        }
        for n in inside(&model.nodes().calls, model.host_fns[f].node) {
            let Some(func) = field!(n, "function") else { continue };
            let text = model.text(func);
            if let Some(m) = text.strip_suffix(".apply").and_then(|class| method(model, class, "forward")) {
                if consider(m, &mut stack) {
                    return true;
                }
            }
        }
    }
    false
}

/// Host code of a candidate that the hygiene rules look at: every function
/// and method except the reference `Model`'s, `get_inputs`, `get_init_inputs`
/// and the `@triton.jit` kernels.
pub(crate) fn candidate_host_nodes<'m, 'a>(model: &'m FileModel<'a>) -> &'m [Node<'a>] {
    model.candidate_host.get_or_init(|| {
        let kernels: HashSet<usize> = model.kernels.iter().map(|k| k.node.start_byte()).collect();
        model.host_fns[1..]
            .iter()
            .filter(|f| f.class.as_deref() != Some("Model"))
            .filter(|f| !matches!(f.name.as_str(), "get_inputs" | "get_init_inputs"))
            .filter(|f| !kernels.contains(&f.node.start_byte()))
            .map(|f| f.node)
            .collect()
    })
}

/// Local names bound by imports, to the dotted module or object they name
/// (`F` -> `torch.nn.functional`, `nn` -> `torch.nn`, `perf_counter` -> `time.perf_counter`).
#[derive(Debug, Default, Clone)]
pub struct Imports {
    pub bound: Vec<(String, String)>,
    /// Every imported module or `from` module, with its statement.
    pub modules: Vec<(String, tree_sitter::Range)>,
    /// Local name -> its last entry in `bound` (a later import rebinds it):
    /// one lookup per name asked, however many imports the file has.
    last: std::collections::HashMap<String, usize>,
    /// The local names an import binds to one of [`HALF`] (`mentions_half`
    /// asks of every call's arguments).
    half_locals: Vec<String>,
}

/// The file's imports (read once per model).
pub fn imports<'m>(model: &'m FileModel) -> &'m Imports {
    model.imports.get_or_init(|| read_imports(model))
}

fn read_imports(model: &FileModel) -> Imports {
    let mut out = Imports::default();
    let src = model.src;
    for &n in &model.nodes().imports {
        match n.kind_name() {
            "import_statement" => {
                let mut cursor = n.walk();
                for name in n.children_by_field_name("name", &mut cursor) {
                    let (dotted, alias) = split_alias(name, src);
                    out.modules.push((dotted.clone(), name.range()));
                    match alias {
                        Some(a) => out.bound.push((a, dotted)),
                        None => {
                            let head = dotted.split('.').next().unwrap_or_default().to_string();
                            out.bound.push((head.clone(), head));
                        }
                    }
                }
            }
            "import_from_statement" => {
                let Some(module) = field!(n, "module_name") else { continue };
                let module_text: String = src[module.byte_range()].split_whitespace().collect();
                out.modules.push((module_text.clone(), module.range()));
                let mut cursor = n.walk();
                for name in n.children_by_field_name("name", &mut cursor) {
                    let (dotted, alias) = split_alias(name, src);
                    let local = alias.unwrap_or_else(|| dotted.clone());
                    out.bound.push((local, format!("{module_text}.{dotted}")));
                }
            }
            _ => {}
        }
    }
    for (i, (local, _)) in out.bound.iter().enumerate() {
        out.last.insert(local.clone(), i);
    }
    out.half_locals =
        out.bound.iter().filter(|(_, full)| HALF.contains(&full.as_str())).map(|(local, _)| local.clone()).collect();
    out
}

fn split_alias(name: Node, src: &str) -> (String, Option<String>) {
    if name.kind_name() == "aliased_import" {
        let dotted = field!(name, "name").map(|d| src[d.byte_range()].to_string()).unwrap_or_default();
        let alias = field!(name, "alias").map(|a| src[a.byte_range()].to_string());
        return (dotted, alias);
    }
    (src[name.byte_range()].to_string(), None)
}

impl Imports {
    /// What the last import binding `local` names (`F` -> `torch.nn.functional`).
    pub(crate) fn full_name(&self, local: &str) -> Option<&str> {
        self.last.get(local).map(|&i| self.bound[i].1.as_str())
    }

    /// `F.relu` -> `torch.nn.functional.relu`; a chain whose head is not
    /// imported is returned as written. `None` for anything but a dotted name.
    pub(crate) fn qualify(&self, node: Node, src: &str) -> Option<String> {
        if !matches!(node.kind_name(), "identifier" | "attribute") {
            return None;
        }
        let text: String = src.get(node.byte_range())?.split_whitespace().collect();
        if !text.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.') {
            return None;
        }
        let (head, rest) = match text.split_once('.') {
            Some((h, r)) => (h, Some(r)),
            None => (text.as_str(), None),
        };
        let base = self.full_name(head);
        Some(match (base, rest) {
            (Some(b), Some(r)) => format!("{b}.{r}"),
            (Some(b), None) => b.to_string(),
            (None, _) => text,
        })
    }

    /// Whether [`Self::qualify`] of `node` may be `module` or inside it: a
    /// check of the chain's head, without building the qualified name.
    pub(crate) fn may_name_module(&self, node: Node, src: &str, module: &str) -> bool {
        let text = src.get(node.byte_range()).unwrap_or_default();
        let head: String = text.split('.').next().unwrap_or_default().split_whitespace().collect();
        let base = self.full_name(&head).unwrap_or(head.as_str());
        base.strip_prefix(module).is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    }

    /// The qualified callee of a call node.
    pub(crate) fn callee(&self, call: Node, src: &str) -> Option<String> {
        self.qualify(field!(call, "function")?, src)
    }
}

/// `torch.*` calls that build or move tensors rather than compute the task.
pub(crate) fn is_torch_scaffolding(qualified: &str) -> bool {
    let last = qualified.rsplit('.').next().unwrap_or_default();
    qualified.starts_with("torch.cuda.")
        || qualified.starts_with("torch.backends.")
        || matches!(
            last,
            "empty"
                | "empty_like"
                | "empty_strided"
                | "zeros"
                | "zeros_like"
                | "ones"
                | "ones_like"
                | "full"
                | "full_like"
                | "tensor"
                | "as_tensor"
                | "from_numpy"
                | "arange"
                | "device"
                | "is_tensor"
                | "manual_seed"
                | "no_grad"
                | "inference_mode"
                | "Size"
                | "finfo"
                | "iinfo"
                | "cat"
                | "stack"
                | "split"
                | "chunk"
                | "flatten"
                | "reshape"
                | "transpose"
                | "permute"
                | "squeeze"
                | "unsqueeze"
                | "contiguous"
                | "view"
                | "narrow"
                | "is_grad_enabled"
                | "get_default_dtype"
                | "Parameter"
                | "is_floating_point"
                | "numel"
                | "broadcast_to"
                | "expand"
        )
}

/// Methods that return (a view or copy of) the value they are called on.
pub(crate) fn is_passthrough_method(name: &str) -> bool {
    matches!(
        name,
        "view"
            | "reshape"
            | "contiguous"
            | "transpose"
            | "permute"
            | "squeeze"
            | "unsqueeze"
            | "flatten"
            | "clone"
            | "detach"
            | "float"
            | "to"
            | "expand"
            | "expand_as"
            | "view_as"
            | "reshape_as"
            | "narrow"
            | "t"
            | "copy"
            | "cuda"
            | "type_as"
    )
}

/// Elementwise methods that finish a value where it is (an activation or a
/// clamp after a GEMM): what they return is computed by what they are called on.
fn is_epilogue_method(name: &str) -> bool {
    matches!(
        name,
        "relu"
            | "relu_"
            | "sigmoid"
            | "sigmoid_"
            | "tanh"
            | "tanh_"
            | "clamp"
            | "clamp_"
            | "clip"
            | "clip_"
            | "abs"
            | "neg"
            | "add"
            | "add_"
            | "mul"
            | "mul_"
            | "sub"
            | "sub_"
            | "div"
            | "div_"
    )
}

/// `self.X = nn.T(...)` in a class: X -> T, for the `torch.nn` module types
/// that compute (not containers, parameters or dropout).
pub(crate) fn torch_modules(model: &FileModel, imports: &Imports, class: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(class_node) = class_node(model, class) else { return out };
    let src = model.src;
    // `self.X = ...` starts with `self` (most assignments of a `forward` do not: no fields read).
    let assigns_self = |n: &Node| n.kind_name() == "assignment" && src[n.start_byte()..].starts_with("self");
    for n in inside(&model.nodes().assignments, class_node).filter(assigns_self) {
        let (Some(left), Some(right)) = (field!(n, "left"), field!(n, "right")) else { continue };
        let Some(attr) = self_attr(left, src) else { continue };
        if right.kind_name() != "call" {
            continue;
        }
        let Some(q) = imports.callee(right, src) else { continue };
        let Some(ty) = q.strip_prefix("torch.nn.") else { continue };
        if ty.contains('.') {
            continue;
        }
        let container = matches!(
            ty,
            "Parameter"
                | "ParameterList"
                | "ParameterDict"
                | "ModuleList"
                | "ModuleDict"
                | "Identity"
                | "Flatten"
                | "Unflatten"
        ) || ty.starts_with("Dropout");
        if !container {
            out.push((attr.to_string(), ty.to_string()));
        }
    }
    out
}

/// `X` when `node` is `self.X`.
pub(crate) fn self_attr<'s>(node: Node, src: &'s str) -> Option<&'s str> {
    if node.kind_name() != "attribute" {
        return None;
    }
    let object = field!(node, "object")?;
    if object.kind_name() != "identifier" || &src[object.byte_range()] != "self" {
        return None;
    }
    field!(node, "attribute").map(|a| &src[a.byte_range()])
}

/// The expressions a returned value may come from, followed through local
/// assignments of `func` (any assignment of the name before `before`), tuples,
/// subscripts and pass-through methods (`.view`, `.contiguous`, `.clone`):
/// the calls and `self.X` attributes where it starts.
pub(crate) fn origins<'a>(model: &FileModel<'a>, func: Node<'a>, expr: Node<'a>, before: usize) -> Vec<Node<'a>> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    trace(model, func, expr, before, 0, &mut seen, &mut out);
    out
}

fn trace<'a>(
    model: &FileModel<'a>,
    func: Node<'a>,
    expr: Node<'a>,
    before: usize,
    depth: usize,
    seen: &mut HashSet<(usize, usize)>,
    out: &mut Vec<Node<'a>>,
) {
    if depth > MAX_TRACE || !seen.insert((expr.start_byte(), expr.end_byte())) {
        return;
    }
    let src = model.src;
    match expr.kind_name() {
        "parenthesized_expression" | "tuple" | "expression_list" | "list" => {
            let mut cursor = expr.walk();
            for child in expr.named_children(&mut cursor) {
                trace(model, func, child, before, depth + 1, seen, out);
            }
        }
        "subscript" => {
            if let Some(v) = field!(expr, "value") {
                // `self.cache[key]` is where the value comes from, as a whole.
                if self_attr(v, src).is_some() {
                    out.push(v);
                } else {
                    trace(model, func, v, before, depth + 1, seen, out);
                }
            }
        }
        "attribute" => {
            if self_attr(expr, src).is_some() {
                out.push(expr);
            } else if let Some(o) = field!(expr, "object") {
                trace(model, func, o, before, depth + 1, seen, out);
            }
        }
        "call" => {
            let Some(f) = field!(expr, "function") else { return };
            if f.kind_name() == "attribute" {
                let name = field!(f, "attribute").map(|a| &src[a.byte_range()]).unwrap_or_default();
                let object = field!(f, "object");
                let on_value = object.is_some_and(|o| !matches!(&src[o.byte_range()], "torch" | "F" | "self"));
                // A view, or an elementwise epilogue (`F.linear(...).relu_()`): the value is the receiver's.
                if (is_passthrough_method(name) || is_epilogue_method(name)) && on_value {
                    if let Some(o) = object {
                        trace(model, func, o, before, depth + 1, seen, out);
                    }
                    return;
                }
                // `self._recurrence(x, h0)`: what that method of the class returns.
                if object.is_some_and(|o| &src[o.byte_range()] == "self") {
                    let class = model.host_fns.iter().find(|h| h.node == func).and_then(|h| h.class.clone());
                    if let Some(m) = class.and_then(|c| method(model, &c, name)) {
                        let body = model.host_fns[m].node;
                        if body != func {
                            for (ret, v) in returns(body) {
                                trace(model, body, v, ret.start_byte(), depth + 1, seen, out);
                            }
                            return;
                        }
                    }
                }
            }
            out.push(expr);
        }
        "identifier" => {
            let name = &src[expr.byte_range()];
            let mut values = Vec::new();
            for n in inside(&model.nodes().assignments, func) {
                if n.kind_name() != "assignment" || n.start_byte() >= before {
                    continue;
                }
                let (Some(left), Some(right)) = (field!(n, "left"), field!(n, "right")) else { continue };
                if binds(left, name, src) {
                    values.push(right);
                }
            }
            for v in values {
                trace(model, func, v, before, depth + 1, seen, out);
            }
        }
        _ => {}
    }
}

/// Whether an assignment target binds `name` (`name`, `a, name`, `(name, b)`).
fn binds(target: Node, name: &str, src: &str) -> bool {
    match target.kind_name() {
        "identifier" => &src[target.byte_range()] == name,
        "pattern_list" | "tuple_pattern" | "list_pattern" | "tuple" | "expression_list" => {
            let mut cursor = target.walk();
            let children: Vec<Node> = target.named_children(&mut cursor).collect();
            children.into_iter().any(|c| binds(c, name, src))
        }
        _ => false,
    }
}

/// Every `return` value inside `func` (not inside nested functions).
pub fn returns<'a>(func: Node<'a>) -> Vec<(Node<'a>, Node<'a>)> {
    let mut out = Vec::new();
    let Some(body) = field!(func, "body") else { return out };
    let mut cursor = body.walk();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        if matches!(n.kind_name(), "function_definition" | "class_definition" | "lambda") {
            continue;
        }
        if n.kind_name() == "return_statement" {
            if let Some(v) = n.named_child(0) {
                out.push((n, v));
            }
            continue;
        }
        // A `return` is a statement of its own: none is inside an expression statement.
        if n.kind_name() == "expression_statement" {
            continue;
        }
        crate::model::for_each_child(&mut cursor, n, true, |child| stack.push(child));
    }
    out.sort_by_key(|(n, _)| n.start_byte());
    out
}

/// The last parts of [`HALF`], each once (test `half_last_parts_are_those_of_half`).
const HALF_LAST: &[&str] = &["float16", "half", "bfloat16", "HalfTensor", "BFloat16Tensor"];

pub(crate) const HALF: &[&str] = &[
    "torch.float16",
    "torch.half",
    "torch.bfloat16",
    // The legacy tensor types `.type(...)` takes.
    "torch.HalfTensor",
    "torch.cuda.HalfTensor",
    "torch.BFloat16Tensor",
    "torch.cuda.BFloat16Tensor",
];

pub(crate) fn mentions_half(node: tree_sitter::Node, imports: &Imports, src: &str) -> bool {
    // A name that qualifies to one of `HALF` ends in its last part, or is a
    // local name an import binds to it: text without either mentions none
    // (the walk below is what costs).
    let text = src.get(node.byte_range()).unwrap_or_default();
    if !HALF_LAST.iter().any(|l| text.contains(l)) && !imports.half_locals.iter().any(|local| text.contains(local)) {
        return false;
    }
    let mut found = false;
    visit_nodes(node, &mut |n| {
        if matches!(n.kind_name(), "attribute" | "identifier")
            && imports.qualify(n, src).is_some_and(|q| HALF.contains(&q.as_str()))
        {
            found = true;
        }
        // `.type("torch.cuda.HalfTensor")`
        if n.kind_name() == "string"
            && HALF[3..].iter().any(|h| src[n.byte_range()].trim_matches(|c| c == '"' || c == '\'') == *h)
        {
            found = true;
        }
    });
    found
}

/// An fp16/bf16 task: `get_inputs` or the reference `Model` already use half precision.
pub(crate) fn task_is_half(model: &FileModel, imports: &Imports) -> bool {
    model.host_fns.iter().filter(|f| f.name == "get_inputs" || f.class.as_deref() == Some("Model")).any(|f| {
        let mut half = mentions_half(f.node, imports, model.src);
        for n in inside(&model.nodes().calls, f.node) {
            if let Some(a) =
                field!(n, "function").filter(|f| f.kind_name() == "attribute").and_then(|f| field!(f, "attribute"))
            {
                half |= matches!(&model.src[a.byte_range()], "half" | "bfloat16");
            }
        }
        half
    })
}

/// `self.X = ...` (also `self.X[...] = ...`, each target of a tuple) in the
/// methods of `ModelNew` but `__init__`: attributes stored into during a
/// call, with where.
pub(crate) fn self_stores(model: &FileModel) -> Vec<(String, TextRange)> {
    let src = model.src;
    let mut stored: Vec<(String, TextRange)> = Vec::new();
    for f in (1..model.host_fns.len())
        .filter(|&f| model.host_fns[f].class.as_deref() == Some("ModelNew") && model.host_fns[f].name != "__init__")
    {
        for n in inside(&model.nodes().assignments, model.host_fns[f].node) {
            let Some(left) = field!(n, "left") else { continue };
            // `self.a, self.b = ...` stores into each target of the tuple.
            let targets: Vec<Node> = if matches!(left.kind_name(), "pattern_list" | "tuple_pattern") {
                let mut c = left.walk();
                let all = left.named_children(&mut c).collect();
                all
            } else {
                vec![left]
            };
            for left in targets {
                let target = if left.kind_name() == "subscript" { field!(left, "value") } else { Some(left) };
                if let Some(attr) = target.and_then(|t| self_attr(t, src)) {
                    stored.push((attr.to_string(), range_of(n)));
                }
            }
        }
    }
    stored
}

#[cfg(test)]
mod tests {
    use super::{HALF, HALF_LAST};

    #[test]
    fn half_last_parts_are_those_of_half() {
        let mut parts: Vec<&str> = HALF.iter().filter_map(|h| h.rsplit('.').next()).collect();
        parts.sort_unstable();
        parts.dedup();
        let mut last = HALF_LAST.to_vec();
        last.sort_unstable();
        assert_eq!(parts, last);
    }
}
