//! KL010 host-sync-in-loop.

use tree_sitter::Node;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{field, gpu_tensor_names, range_of, FileModel, HCall, HostFn, LoopKind, StubReads};

use super::{Reach, Rule, Scope};
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL010",
    name: "host-sync-in-loop",
    severity: Severity::Warning,
    summary: "`.item()`, `.cpu()`, `torch.cuda.synchronize()` inside a forward loop",
    doc: DOC,
    reach: Reach::Host,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL010 host-sync-in-loop

## What it does
Finds what waits for the GPU inside a loop of `forward` or of a function
that launches kernels: calls (`.item()`, `.cpu()`, `.to("cpu")`,
`.tolist()`, `.numpy()`, `torch.cuda.synchronize()`), a helper of the file
that makes one of those calls (`check_finite(x)`), and waits no call names,
on a tensor a launch passes for memory or what tensor methods make of it:
its truth value (`if err < tol:`, `while not done:`, `assert`), `float(t)`,
`int(t)`, `bool(t)`, `print(t)`, and `{t.mean()}` in an f-string.

Not reported: test and benchmark code, where waiting is the point (a
function named `test*` or `bench*`, a method of a `Test*` class, anything
under `if __name__ == "__main__":`, loops at module level, which are a
script's), a loop that queues no GPU work per iteration (no launch, no
`torch.*` call, no in-place write: printing results, where the first wait
drains the queue), and a call on a value that is on the CPU already
(`torch.tensor(lengths).cumsum(0).tolist()`: a tensor built without
`device=`, what `.cpu()` or `.to("cpu")` returned, a NumPy array, or an
element or slice of one of those, `lens[i].item()`): the device follows the
data, whatever the name. A `.cpu()` in a loop that streams its items through
the GPU (each item uploaded with `.cuda()` or `.to(device)` in the loop) is a
hint: each result comes back in turn, and the wait is the stream's unless the
results fit in GPU memory.

## Why is this bad?
Each one stops the CPU until every queued kernel has finished, so the GPU
idles while Python prepares the next launch; inside a loop that cost is paid
every iteration, and launch latency is no longer hidden. It also makes
CUDA-graph capture impossible.

## Example
```python
for it in range(self.iters):
    step_kernel[grid](x, res, n, BLOCK=1024)
    if res.item() < tol:
        break
```

## Use instead
Keep the decision on the GPU (a fixed iteration count, or a flag the kernel
reads), or check once after the loop.
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    // Index 0 is the module scope: a loop there is a script's (a demo, a timing loop), not a forward pass.
    for (f, func) in model.host_fns.iter().enumerate().skip(1) {
        if func.loops.is_empty() {
            continue;
        }
        let launches = func.name == "forward" || model.reaches_launch(f);
        if !launches || is_test_or_benchmark(func) {
            continue;
        }
        // (where, what waits, the loop it waits in)
        let mut found: Vec<(Node, String, usize)> = Vec::new();
        // `.cpu()` results of a loop that streams its items through the GPU: a hint.
        let mut streamed: Vec<(usize, String)> = Vec::new();
        for sync in func.syncs.iter() {
            if let Some(&l) = sync.loops.last().filter(|_| !on_cpu_already(model, func, sync.node)) {
                if sync.what == ".cpu()" {
                    if let Some(upload) = streams_items(model, func, l) {
                        streamed.push((sync.node.start_byte(), upload));
                    }
                }
                found.push((sync.node, format!("`{}`", sync.what), l));
            }
        }
        // A helper called in the loop that waits itself (`check_finite(x)` reading `.item()`).
        for call in func.calls.iter() {
            let Some(&l) = call.loops.last() else { continue };
            if let Some((helper, what)) = helper_sync(model, f, call, 0, scope.stubs) {
                found.push((call.node, format!("`{helper}` (it calls `{what}`)"), l));
            }
        }
        // Waits no call names: a tensor's truth value, `float(t)`, a tensor in an f-string.
        // Which names are GPU tensors is asked only where a loop has one of those forms.
        let tensors =
            if may_wait_implicitly(model, func) { gpu_tensor_names(model, f, scope.stubs) } else { Default::default() };
        if !tensors.is_empty() {
            let mut implicit = Vec::new();
            for (l, lp) in func.loops.iter().enumerate() {
                if lp.parent.is_none() {
                    implicit_syncs(model, &tensors, lp.body, &mut implicit);
                }
                // A `while` condition runs every iteration.
                if let Some(cond) =
                    lp.head.filter(|h| lp.kind == LoopKind::While && tensor_valued(model, &tensors, *h, 0))
                {
                    found.push((cond, truth_value(model, cond), l));
                }
            }
            for (n, what) in implicit {
                if let Some(l) = innermost_loop(func, n) {
                    found.push((n, what, l));
                }
            }
        }
        // A wait costs a step only where the loop queues GPU work every
        // iteration; in a loop that queues none (printing results) the first
        // wait drains the queue and the rest find the GPU idle anyway.
        found.retain(|(_, _, l)| queues_work(model, f, *l, scope.stubs));
        found.sort_by_key(|(n, _, _)| n.start_byte());
        // One diagnostic a line: `int(a[i].item() - a[j].item())` is one wait to fix, not two.
        let mut lines_seen: Vec<usize> = Vec::new();
        for (node, what, l) in found {
            if under_main_guard(model, node) {
                continue;
            }
            let line_start = model.src[..node.start_byte()].rfind('\n').map_or(0, |i| i + 1);
            if lines_seen.contains(&line_start) {
                continue;
            }
            lines_seen.push(line_start);
            if let Some((_, upload)) = streamed.iter().find(|(at, _)| *at == node.start_byte()) {
                // Evidence of a stream, not of a check: each item goes up (`upload`) and
                // its result comes back; the wait is the stream's, unless the results fit.
                let message = format!(
                    "{what} inside a loop in `{}` waits for the GPU on every iteration; the loop streams its items through the GPU (`{upload}` uploads each) and brings each result back. If the results fit in GPU memory, copy them back once after the loop",
                    func.name
                );
                let mut d =
                    RULE.diagnostic(range_of(node), message).with_related(func.loops[l].header_range, "the loop");
                d.severity = crate::diagnostic::Severity::Hint;
                out.push(d);
                continue;
            }
            let message = format!(
                "{what} inside a loop in `{}` waits for the GPU on every iteration: the GPU idles while Python prepares the next launch. Keep the check on the GPU or move it after the loop",
                func.name
            );
            out.push(RULE.diagnostic(range_of(node), message).with_related(func.loops[l].header_range, "the loop"));
        }
    }
}

/// The upload, when loop `l` of `func` moves each of its items from the host
/// to the GPU: a value made from the loop variable (`chunk`, `xs[i:i + n]`,
/// through names the loop binds) goes up with `.cuda()` or `.to(device)`
/// every iteration, a stream through the GPU.
fn streams_items(model: &FileModel, func: &HostFn, l: usize) -> Option<String> {
    let var = func.loops[l].var.as_deref()?;
    let in_loop: Vec<&crate::model::Assign> = func.assigns.iter().filter(|a| a.loops.contains(&l)).collect();
    let words = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric() && c != '_').filter(|w| !w.is_empty()).map(str::to_string).collect()
    };
    // Names the loop binds from its variable, followed a few steps.
    let mut from_item = vec![var.to_string()];
    for _ in 0..3 {
        for a in &in_loop {
            if !from_item.contains(&a.target) && words(model.text(a.value)).iter().any(|w| from_item.contains(w)) {
                from_item.push(a.target.clone());
            }
        }
    }
    in_loop.iter().filter(|a| !a.augmented).find_map(|a| {
        let value = model.text(a.value).trim();
        let up = crate::model::moves_to_gpu(value);
        let of_item = words(value).iter().any(|w| from_item.contains(w));
        (up && of_item).then(|| short(value))
    })
}

/// The innermost loop of `func` whose body holds `node`.
/// Whether loop `l` of host function `f` queues GPU work on every iteration:
/// it launches (directly or through a helper), calls `torch.*` or `F.*`, a
/// helper of this file or an in-place tensor method (`x.fill_(...)`), or
/// writes into a subscript (`logits[i, n:] = ...`).
fn queues_work(model: &FileModel, f: usize, l: usize, stubs: &StubReads) -> bool {
    let func = &model.host_fns[f];
    let helper_call = func.calls.iter().any(|c| c.loops.contains(&l) && !model.callees(f, c).is_empty());
    if !model.launches_in_loop(f, l, stubs).is_empty() || helper_call {
        return true;
    }
    crate::model::any_node(func.loops[l].body, |n| match n.kind_name() {
        "call" => field!(n, "function").is_some_and(|fun| {
            let t = model.text(fun);
            t.starts_with("torch.") || t.starts_with("F.") || (t.ends_with('_') && fun.kind_name() == "attribute")
        }),
        "assignment" | "augmented_assignment" => field!(n, "left").is_some_and(|l| l.kind_name() == "subscript"),
        _ => false,
    })
}

fn innermost_loop(func: &HostFn, node: Node) -> Option<usize> {
    (0..func.loops.len()).filter(|&l| func.loops[l].contains(node)).max_by_key(|&l| func.loops[l].body.start_byte())
}

/// A host function of this file that `call` (in function `f`) reaches and
/// that waits for the GPU outside its own loops (those KL010 reports where
/// they are): its name and the wait. Two helpers deep at most.
fn helper_sync(model: &FileModel, f: usize, call: &HCall, depth: usize, stubs: &StubReads) -> Option<(String, String)> {
    for g in model.callees(f, call) {
        let helper = &model.host_fns[g];
        if helper.stub.is_some() {
            // A stub's syncs are not in the model.
            stubs.record(g);
        }
        if g == f || is_test_or_benchmark(helper) {
            continue;
        }
        let waits = helper
            .syncs
            .iter()
            .find(|s| s.loops.is_empty() && !on_cpu_already(model, helper, s.node) && !under_main_guard(model, s.node));
        if let Some(s) = waits {
            return Some((helper.name.clone(), s.what.clone()));
        }
        if depth < 1 {
            for c in helper.calls.iter().filter(|c| c.loops.is_empty()) {
                if let Some((_, what)) = helper_sync(model, g, c, depth + 1, stubs) {
                    return Some((helper.name.clone(), what));
                }
            }
        }
    }
    None
}

/// Methods, and `torch.*` functions, whose result is a tensor where the
/// receiver (an argument) is one; for `allclose` and `equal`, a Python bool
/// read from the GPU.
const TENSOR_METHODS: &[&str] = &[
    "any",
    "all",
    "sum",
    "max",
    "min",
    "amax",
    "amin",
    "mean",
    "norm",
    "abs",
    "sqrt",
    "isnan",
    "isinf",
    "isfinite",
    "eq",
    "ne",
    "gt",
    "lt",
    "ge",
    "le",
    "logical_not",
    "logical_and",
    "logical_or",
    "square",
    "float",
    "double",
    "half",
    "clone",
    "contiguous",
    "view",
    "reshape",
    "flatten",
    "squeeze",
    "count_nonzero",
    "prod",
    "std",
    "var",
    "allclose",
    "equal",
];

/// Whether `e` evaluates to a GPU tensor: a name a launch passes for memory,
/// an element or slice of one, what a tensor method or `torch.*` function
/// makes of one, or arithmetic and comparisons with one.
fn tensor_valued(model: &FileModel, tensors: &std::collections::HashSet<String>, e: Node, depth: usize) -> bool {
    if depth > 12 {
        return false;
    }
    let rec = |n: Node| tensor_valued(model, tensors, n, depth + 1);
    match e.kind_name() {
        "identifier" => tensors.contains(model.text(e)),
        "subscript" => field!(e, "value").is_some_and(rec),
        "parenthesized_expression" => e.named_child(0).is_some_and(rec),
        "call" => {
            let Some(function) = field!(e, "function").filter(|f| f.kind_name() == "attribute") else { return false };
            let (Some(object), Some(attr)) = (field!(function, "object"), field!(function, "attribute")) else {
                return false;
            };
            let attr = model.text(attr);
            if model.text(object) == "torch" {
                let Some(args) = field!(e, "arguments") else { return false };
                let mut c = args.walk();
                let any = TENSOR_METHODS.contains(&attr) && args.named_children(&mut c).any(rec);
                any
            } else {
                TENSOR_METHODS.contains(&attr) && rec(object)
            }
        }
        "comparison_operator" => {
            // `x is None`, `k in cache` compare identities and keys, not values.
            let mut c = e.walk();
            let identity = e
                .children(&mut c)
                .any(|op| !op.is_named() && matches!(op.kind_name(), "is" | "in" | "not" | "is not" | "not in"));
            let mut c = e.walk();
            let any = !identity && e.named_children(&mut c).any(rec);
            any
        }
        "boolean_operator" | "binary_operator" => {
            field!(e, "left").is_some_and(rec) || field!(e, "right").is_some_and(rec)
        }
        "not_operator" | "unary_operator" => field!(e, "argument").is_some_and(rec),
        _ => false,
    }
}

/// Whether a loop of `func` holds a form that [`implicit_syncs`] or a
/// `while` condition could find waiting (a test, `float(...)` and the like,
/// an f-string), nested definitions included: a look at node kinds before
/// asking which names are GPU tensors, which follows every launch's data flow.
fn may_wait_implicitly(model: &FileModel, func: &HostFn) -> bool {
    func.loops.iter().any(|lp| {
        (lp.kind == LoopKind::While && lp.head.is_some())
            || (lp.parent.is_none()
                && crate::model::any_node(lp.body, |n| match n.kind_name() {
                    "if_statement" | "elif_clause" | "while_statement" | "assert_statement" | "interpolation" => true,
                    "call" => field!(n, "function")
                        .is_some_and(|f| matches!(model.text(f), "float" | "int" | "bool" | "print" | "str")),
                    _ => false,
                }))
    })
}

/// Waits in `body` that no call names: the truth value of a tensor (`if err
/// < tol:`, `while not done:`, `assert`), `float(t)`, `int(t)`, `bool(t)`,
/// `print(t)`, `str(t)`, and a tensor formatted in an f-string. Nested
/// definitions are not entered (they run when called).
fn implicit_syncs<'a>(
    model: &FileModel<'a>,
    tensors: &std::collections::HashSet<String>,
    body: Node<'a>,
    found: &mut Vec<(Node<'a>, String)>,
) {
    let mut cursor = body.walk();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        match n.kind_name() {
            "function_definition" | "class_definition" | "lambda" => continue,
            "if_statement" | "elif_clause" | "while_statement" => {
                if let Some(cond) = field!(n, "condition").filter(|c| tensor_valued(model, tensors, *c, 0)) {
                    found.push((cond, truth_value(model, cond)));
                }
            }
            "assert_statement" => {
                if let Some(cond) = n.named_child(0).filter(|c| tensor_valued(model, tensors, *c, 0)) {
                    found.push((cond, truth_value(model, cond)));
                }
            }
            "call" => {
                let conversion = field!(n, "function")
                    .filter(|f| f.kind_name() == "identifier")
                    .map(|f| model.text(f))
                    .filter(|f| matches!(*f, "float" | "int" | "bool" | "print" | "str"));
                if let Some(conv) = conversion {
                    let args = field!(n, "arguments");
                    let arg = args.and_then(|a| {
                        let mut c = a.walk();
                        let first = a.named_children(&mut c).find(|x| tensor_valued(model, tensors, *x, 0));
                        first
                    });
                    if arg.is_some() {
                        found.push((n, format!("`{conv}(...)` of a tensor")));
                    }
                }
            }
            "interpolation" => {
                if let Some(expr) = n.named_child(0).filter(|x| tensor_valued(model, tensors, *x, 0)) {
                    found.push((n, format!("formatting a tensor in an f-string (`{{{}}}`)", short(model.text(expr)))));
                }
            }
            _ => {}
        }
        crate::model::for_each_child(&mut cursor, n, false, |child| stack.push(child));
    }
}

fn truth_value(model: &FileModel, cond: Node) -> String {
    format!("the truth value of a tensor (`{}`)", short(model.text(cond)))
}

fn short(text: &str) -> String {
    let t: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.chars().count() > 40 {
        format!("{}...", t.chars().take(40).collect::<String>())
    } else {
        t
    }
}

/// Tests and benchmarks wait for the GPU on purpose: to time a call, or to
/// read back an error to assert on.
fn is_test_or_benchmark(func: &HostFn) -> bool {
    let name = func.name.to_ascii_lowercase();
    name.starts_with("test")
        || name.starts_with("bench")
        || name.ends_with("_benchmark")
        || func.class.as_deref().is_some_and(|c| c.starts_with("Test"))
}

/// Inside `if __name__ == "__main__":`, the code a file runs as a script (a demo, a timing loop).
fn under_main_guard(model: &FileModel, node: Node) -> bool {
    let mut at = node.parent();
    while let Some(n) = at {
        if n.kind_name() == "if_statement" {
            let cond: String = field!(n, "condition")
                .map(|c| model.text(c).chars().filter(|ch| !ch.is_whitespace()).collect())
                .unwrap_or_default();
            let main = ["\"__main__\"", "'__main__'"];
            if main.iter().any(|m| cond == format!("__name__=={m}") || cond == format!("{m}==__name__")) {
                return true;
            }
        }
        at = n.parent();
    }
    false
}

/// Tensor factories that build on the CPU unless given `device=`.
const FACTORIES: &[&str] = &[
    "tensor",
    "as_tensor",
    "from_numpy",
    "arange",
    "zeros",
    "ones",
    "empty",
    "full",
    "linspace",
    "randn",
    "rand",
    "randint",
    "randperm",
];
/// Methods and `torch.*` functions whose result lives where their input does.
const SAME_DEVICE: &[&str] = &[
    "cumsum",
    "cumprod",
    "sum",
    "prod",
    "max",
    "min",
    "amax",
    "amin",
    "mean",
    "flatten",
    "view",
    "reshape",
    "int",
    "long",
    "float",
    "double",
    "clone",
    "contiguous",
    "diff",
    "sort",
    "argsort",
    "flip",
    "abs",
    "tolist",
    "numpy",
    "detach",
    "squeeze",
    "unsqueeze",
    "t",
];

/// `sync` (a `.item()`, `.tolist()`, `.numpy()` or `.cpu()` call) reads a value
/// that is on the CPU already, so it waits for nothing.
fn on_cpu_already(model: &FileModel, func: &HostFn, sync: Node) -> bool {
    let Some(receiver) =
        field!(sync, "function").filter(|f| f.kind_name() == "attribute").and_then(|f| field!(f, "object"))
    else {
        return false;
    };
    on_cpu(model, func, receiver, 0)
}

fn on_cpu(model: &FileModel, func: &HostFn, value: Node, depth: usize) -> bool {
    if depth > 8 {
        return false;
    }
    match value.kind_name() {
        "parenthesized_expression" => value.named_child(0).is_some_and(|v| on_cpu(model, func, v, depth + 1)),
        // An element or slice of host data is host data.
        "subscript" => field!(value, "value").is_some_and(|v| on_cpu(model, func, v, depth + 1)),
        "identifier" => {
            // Every binding of the name in this function is a CPU value (and there is one).
            let name = model.text(value);
            let mut values = func.assigns.iter().filter(|a| a.target == name).peekable();
            values.peek().is_some() && values.all(|a| !a.augmented && on_cpu(model, func, a.value, depth + 1))
        }
        "call" => {
            let Some(function) = field!(value, "function") else { return false };
            let args = field!(value, "arguments");
            let has_device = args.is_some_and(|a| {
                let mut c = a.walk();
                let found = a.named_children(&mut c).any(|k| {
                    k.kind_name() == "keyword_argument" && field!(k, "name").is_some_and(|n| model.text(n) == "device")
                });
                found
            });
            let first_arg = args.and_then(|a| a.named_child(0)).filter(|a| a.kind_name() != "keyword_argument");
            match function.kind_name() {
                "attribute" => {
                    let (Some(object), Some(attr)) = (field!(function, "object"), field!(function, "attribute")) else {
                        return false;
                    };
                    let (object_text, attr) = (model.text(object), model.text(attr));
                    // NumPy computes on the host: its arrays never wait for the GPU.
                    if matches!(object_text, "np" | "numpy") || object_text.starts_with("np.") {
                        return true;
                    }
                    // `.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`.
                    if attr == "to"
                        && args.is_some_and(|a| model.text(a).contains("\"cpu\"") || model.text(a).contains("'cpu'"))
                    {
                        return true;
                    }
                    if object_text == "torch" {
                        if FACTORIES.contains(&attr) {
                            return !has_device;
                        }
                        return SAME_DEVICE.contains(&attr)
                            && first_arg.is_some_and(|a| on_cpu(model, func, a, depth + 1));
                    }
                    match attr {
                        "cpu" | "numpy" => true,
                        a if SAME_DEVICE.contains(&a) => on_cpu(model, func, object, depth + 1),
                        _ => false,
                    }
                }
                _ => false,
            }
        }
        _ => false,
    }
}
