//! KL004 arange-non-constexpr.

use crate::model::field;
use tree_sitter::Node;

use std::collections::HashMap;

use crate::diagnostic::{Applicability, Diagnostic, Edit, Fix, Severity};
use crate::model::{collect_identifiers, parse_int, range_of, FileModel, KCall, Kernel};
use crate::text::TextRange;

use super::{Reach, Rule, Scope};
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL004",
    name: "arange-non-constexpr",
    severity: Severity::Error,
    summary: "`tl.arange` bounds that are not constexpr, or not a power of two",
    doc: DOC,
    reach: Reach::Kernel,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL004 arange-non-constexpr

## What it does
Checks the bounds of every `tl.arange(start, end)`: each must be a literal
or a `tl.constexpr` parameter (directly or through an alias such as
`H = HIDDEN`), and `end - start` must be a power of two, also for the values
passed at launch sites and as defaults.

In a `@triton.jit` helper, a parameter that bounds an arange is what the
callers pass: it is constexpr when every call site in the file passes one (a
caller's `tl.constexpr` parameter, a literal, a module constant). When a
caller passes a runtime value, the rule fires on the helper's bound, naming
the caller and pointing at the call site.

## Why is this bad?
Triton needs the shape of every block at compile time. A runtime bound fails
to compile with `arange's arguments must be of type tl.constexpr`, reported
as `CompilationError: at 37:13:` relative to the kernel's `def`. A length that
is not a power of two fails with `arange's range must be a power of 2`.

## Example
```python
@triton.jit
def rnn_kernel(h_ptr, HIDDEN_SIZE):
    H = HIDDEN_SIZE
    offs = tl.arange(0, H)
```

## Use instead
```python
@triton.jit
def rnn_kernel(h_ptr, HIDDEN_SIZE, BLOCK_H: tl.constexpr):
    offs = tl.arange(0, BLOCK_H)          # BLOCK_H = triton.next_power_of_2(HIDDEN_SIZE)
    mask = offs < HIDDEN_SIZE
```
For a runtime bound the quick fix (needs review) adds a constexpr block
parameter, as above: every arange bounded by the parameter uses it, every
load and store addressed through those offsets gets the mask, each masked
load an `other=` that keeps the padded lanes out of the reductions they reach
(`-inf` for `max`, `+inf` for `min`, `0.0` for `sum`, followed through the
kernel's arithmetic: `x - max` stays `-inf`, `exp` makes it 0), and every
launch passes `BLOCK_H=triton.next_power_of_2(HIDDEN_SIZE)`. It is offered
only when the kernel can be followed that far (no padded value reassigned in
a loop, read for its shape, or passed to an unknown call) and every launch is
in the file; otherwise the fix annotates the parameter `tl.constexpr` (each
distinct value then compiles its own kernel). A constexpr block that is not a
power of two is padded to the next one where every access is already masked.
"#;

/// What a bound expression is, as far as the kernel's text tells.
enum Bound {
    Const(i64),
    /// A constexpr parameter (value known only at the launch site).
    ConstexprParam(String),
    /// Built from constexprs and literals.
    ConstexprExpr,
    /// Comes from a runtime (non-constexpr) parameter.
    Runtime(String),
    Unknown,
}

fn classify(k: &Kernel, model: &FileModel, node: Node, depth: usize) -> Bound {
    if depth > 8 {
        return Bound::Unknown;
    }
    let text = model.text(node).trim();
    match node.kind_name() {
        "integer" => parse_int(text).map(Bound::Const).unwrap_or(Bound::Unknown),
        "parenthesized_expression" => {
            node.named_child(0).map(|n| classify(k, model, n, depth + 1)).unwrap_or(Bound::Unknown)
        }
        "identifier" => {
            if let Some(p) = k.param(text) {
                return if p.constexpr {
                    Bound::ConstexprParam(p.name.to_string())
                } else {
                    Bound::Runtime(p.name.to_string())
                };
            }
            let assigns: Vec<_> = k.assigns.iter().filter(|a| a.target == text).collect();
            match assigns.as_slice() {
                [one] if !one.augmented => classify(k, model, one.value, depth + 1),
                _ => Bound::Unknown,
            }
        }
        "binary_operator" => {
            let parts: Vec<Bound> = [field!(node, "left"), field!(node, "right")]
                .into_iter()
                .flatten()
                .map(|n| classify(k, model, n, depth + 1))
                .collect();
            if let Some(Bound::Runtime(p)) = parts.iter().find(|b| matches!(b, Bound::Runtime(_))) {
                return Bound::Runtime(p.clone());
            }
            if parts.iter().all(|b| matches!(b, Bound::Const(_))) {
                // Only the operators Triton folds for us.
                let vals: Vec<i64> =
                    parts.iter().filter_map(|b| if let Bound::Const(v) = b { Some(*v) } else { None }).collect();
                let op = field!(node, "operator").map(|o| model.text(o)).unwrap_or("");
                let v = match vals.as_slice() {
                    [a, b] => fold(op, *a, *b),
                    _ => None,
                };
                return v.map(Bound::Const).unwrap_or(Bound::ConstexprExpr);
            }
            if parts.iter().all(|b| matches!(b, Bound::Const(_) | Bound::ConstexprParam(_) | Bound::ConstexprExpr)) {
                return Bound::ConstexprExpr;
            }
            Bound::Unknown
        }
        // `x.shape[0]`: a block's shape is known when the kernel compiles.
        "subscript" if field!(node, "value").is_some_and(|v| model.text(v).trim().ends_with(".shape")) => {
            Bound::ConstexprExpr
        }
        // `cfg.BLOCK`: a field of an aggregate argument, constexpr or not as its class says;
        // the compiler checks it, and nothing here shows it is a runtime value.
        "attribute" => Bound::Unknown,
        // The result of a `@triton.constexpr_function` is a compile-time value.
        "call" if field!(node, "function").is_some_and(|f| constexpr_function(model, model.text(f).trim())) => {
            Bound::ConstexprExpr
        }
        _ => {
            let mut ids = Vec::new();
            collect_identifiers(node, model.src, &mut ids);
            match ids.iter().find(|i| k.param(i).is_some_and(|p| !p.constexpr)) {
                Some(p) => Bound::Runtime(p.clone()),
                None => Bound::Unknown,
            }
        }
    }
}

/// Whether `name` is a function of this file decorated `@constexpr_function`
/// (`@triton.constexpr_function`, `@tl.constexpr_function`).
fn constexpr_function(model: &FileModel, name: &str) -> bool {
    let found = model.tree.named_top_level().into_iter().any(|n| {
        n.kind_name() == "decorated_definition"
            && field!(n, "definition").and_then(|d| field!(d, "name")).is_some_and(|d| model.text(d) == name)
            && model.text(n).split("def ").next().is_some_and(|head| head.contains("constexpr_function"))
    });
    found
}

/// `a op b` for the operators Triton folds in a constexpr bound.
fn fold(op: &str, a: i64, b: i64) -> Option<i64> {
    match op {
        "+" => a.checked_add(b),
        "-" => a.checked_sub(b),
        "*" => a.checked_mul(b),
        "//" if b != 0 => Some(a / b),
        _ => None,
    }
}

/// The integer a constexpr bound expression comes to, with `param` giving
/// the value of each constexpr parameter (a launch's); the operators Triton folds.
fn evaluate(
    k: &Kernel,
    model: &FileModel,
    node: Node,
    param: &dyn Fn(&str) -> Option<i64>,
    depth: usize,
) -> Option<i64> {
    if depth > 8 {
        return None;
    }
    let text = model.text(node).trim();
    match node.kind_name() {
        "integer" => parse_int(text),
        "parenthesized_expression" => evaluate(k, model, node.named_child(0)?, param, depth + 1),
        "identifier" => {
            if k.param(text).is_some_and(|p| p.constexpr) {
                return param(text);
            }
            let assigns: Vec<_> = k.assigns.iter().filter(|a| a.target == text).collect();
            match assigns.as_slice() {
                [one] if !one.augmented => evaluate(k, model, one.value, param, depth + 1),
                _ => None,
            }
        }
        "binary_operator" => {
            let a = evaluate(k, model, field!(node, "left")?, param, depth + 1)?;
            let b = evaluate(k, model, field!(node, "right")?, param, depth + 1)?;
            fold(field!(node, "operator").map(|o| model.text(o)).unwrap_or(""), a, b)
        }
        _ => None,
    }
}

/// What the call sites of a `@triton.jit` helper give for one of its parameters.
enum Callers<'a> {
    /// Launched from host code: the parameter is what a launch passes, a
    /// runtime value unless annotated.
    Launched,
    /// Neither launched nor called in the file.
    NotCalled,
    /// Every call site passes a constexpr: a caller's `tl.constexpr`
    /// parameter, a literal, a module constant, or arithmetic of those.
    Constexpr,
    /// A call site passes a runtime value: the calling kernel and the argument.
    Runtime(String, Node<'a>),
    /// Some call site passes something that cannot be followed.
    Unknown,
}

/// What the kernels of this file that call helper `k` pass for `param`,
/// followed through callers that are helpers themselves.
fn callers<'a>(model: &FileModel<'a>, k: &Kernel<'a>, param: &str, depth: usize) -> Callers<'a> {
    let Some(index) = k.params.iter().position(|p| p.name == param) else { return Callers::Unknown };
    if model.launches_of_kernel(k).next().is_some() {
        return Callers::Launched;
    }
    let mut verdict = Callers::NotCalled;
    for &(ci, c) in model.kernel_calls_to(k) {
        let caller = &model.kernels[ci];
        if caller.name == k.name {
            continue;
        }
        let call = &caller.calls[c];
        let here = match call.arg(index, param) {
            None => Callers::Unknown,
            Some(arg) => match classify(caller, model, arg, 0) {
                Bound::Const(_) | Bound::ConstexprParam(_) | Bound::ConstexprExpr => Callers::Constexpr,
                Bound::Runtime(q) if depth < 4 => match callers(model, caller, &q, depth + 1) {
                    Callers::Constexpr => Callers::Constexpr,
                    Callers::Unknown => Callers::Unknown,
                    Callers::Launched | Callers::Runtime(..) => Callers::Runtime(caller.name.clone(), arg),
                    // A kernel that picks its work from the grid is launched
                    // from host code, here or elsewhere: a runtime value. A device
                    // helper nothing here calls: its callers elsewhere decide,
                    // and a jit caller's constexpr stays one through it.
                    Callers::NotCalled if picks_work(caller) => Callers::Runtime(caller.name.clone(), arg),
                    Callers::NotCalled => Callers::Unknown,
                },
                Bound::Runtime(_) => Callers::Unknown,
                Bound::Unknown if module_constant(model, arg) => Callers::Constexpr,
                Bound::Unknown => Callers::Unknown,
            },
        };
        verdict = match (verdict, here) {
            (Callers::Runtime(c, a), _) | (_, Callers::Runtime(c, a)) => Callers::Runtime(c, a),
            (Callers::Unknown, _) | (_, Callers::Unknown) => Callers::Unknown,
            _ => Callers::Constexpr,
        };
    }
    verdict
}

/// Whether `k` reads its place in the grid (`tl.program_id`, `tl.num_programs`): an entry point.
fn picks_work(k: &Kernel) -> bool {
    k.tl_calls("program_id").next().is_some() || k.tl_calls("num_programs").next().is_some()
}

/// A module-level name bound once to an integer constant or `tl.constexpr(...)`.
fn module_constant(model: &FileModel, node: Node) -> bool {
    if node.kind_name() != "identifier" {
        return false;
    }
    if model.eval_int(0, node, 0).is_some() {
        return true;
    }
    let name = model.text(node);
    let assigns: Vec<_> = model.host_fns[0].assigns.iter().filter(|a| a.target == name).collect();
    matches!(assigns.as_slice(), [one] if !one.augmented
        && one.value.kind_name() == "call"
        && field!(one.value, "function").is_some_and(|f| model.text(f).ends_with("constexpr")))
}

fn is_pow2(v: i64) -> bool {
    v > 0 && (v & (v - 1)) == 0
}

/// Annotate parameter `name` of kernel `k` as `tl.constexpr`.
fn constexpr_fix(model: &FileModel, k: &Kernel, name: &str) -> Option<Fix> {
    let p = k.param(name)?;
    let tl = model.tl_aliases.first().map(String::as_str).unwrap_or("tl");
    let edit = match p.node.kind_name() {
        "identifier" => Edit { range: TextRange::new(p.range.end, p.range.end), new_text: format!(": {tl}.constexpr") },
        // `n=4` becomes `n: tl.constexpr = 4` (PEP 8 spacing once annotated).
        "default_parameter" => {
            let value = field!(p.node, "value")?;
            Edit { range: TextRange::new(p.range.end, value.start_byte()), new_text: format!(": {tl}.constexpr = ") }
        }
        "typed_parameter" | "typed_default_parameter" => {
            let ty = field!(p.node, "type")?;
            Edit { range: range_of(ty), new_text: format!("{tl}.constexpr") }
        }
        _ => return None,
    };
    let edits = vec![edit];
    Some(Fix {
        title: format!("Make `{name}` a `{tl}.constexpr` parameter").into(),
        applicability: Applicability::NeedsReview,
        edits,
    })
}

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    for k in scope.kernels {
        let mut constexpr_bounds: Vec<(String, Node)> = Vec::new();
        // (bound node, runtime parameter, the arange call)
        let mut runtime_bounds: Vec<(Node, String, &KCall)> = Vec::new();
        for call in k.tl_calls("arange") {
            let start = call.arg(0, "start");
            let end = call.arg(1, "end");
            let (Some(start), Some(end)) = (start, end) else { continue };
            let sb = classify(k, model, start, 0);
            let eb = classify(k, model, end, 0);
            let mut runtime = None;
            for (node, b) in [(start, &sb), (end, &eb)] {
                if let Bound::Runtime(p) = b {
                    runtime = Some((node, p.clone()));
                    break;
                }
            }
            if let Some((node, param)) = runtime {
                match callers(model, k, &param, 0) {
                    Callers::Launched | Callers::NotCalled => runtime_bounds.push((node, param, call)),
                    // Every caller gives a constexpr, or one cannot be followed: not this rule's to say.
                    Callers::Constexpr | Callers::Unknown => {}
                    Callers::Runtime(caller, arg) => {
                        let text = model.text(node).trim();
                        let message = format!(
                            "`tl.arange` bound `{text}` is not a `tl.constexpr` here: the caller `{caller}` passes `{}`, a runtime value, for `{param}` of this `@triton.jit` helper: compilation fails with \"arange's arguments must be of type tl.constexpr\". Pass a constexpr from `{caller}` (a `tl.constexpr` parameter or a literal power of two)",
                            model.text(arg).trim()
                        );
                        out.push(
                            RULE.diagnostic(range_of(node), message)
                                .with_related(range_of(arg), format!("`{caller}` passes a runtime `{param}` here")),
                        );
                    }
                }
                continue;
            }
            match (&sb, &eb) {
                (Bound::Const(s), Bound::Const(e)) if !is_pow2(e - s) => {
                    let message = format!(
                        "`tl.arange({s}, {e})` has length {}, not a power of two: compilation fails with \"arange's range must be a power of 2\". Use {} and a mask",
                        e - s,
                        ((e - s).max(1) as u64).next_power_of_two()
                    );
                    let fix = crate::fix::pad_mask::fix_literal(model, k, call);
                    out.push(RULE.diagnostic(range_of(call.node), message).with_fix(fix));
                }
                (Bound::Const(0), Bound::ConstexprParam(p)) => constexpr_bounds.push((p.clone(), call.node)),
                // `tl.arange(0, 3 * H)`: a power of two for no power-of-two `H`; worked out per launch.
                (Bound::Const(_) | Bound::ConstexprParam(_) | Bound::ConstexprExpr, Bound::ConstexprExpr)
                | (Bound::ConstexprExpr, Bound::Const(_) | Bound::ConstexprParam(_)) => {
                    for launch in model.launches_of_kernel(k) {
                        let env = |name: &str| -> Option<i64> {
                            let (i, p) = k.params.iter().enumerate().find(|(_, p)| p.name == name)?;
                            match launch.value_for(name, i) {
                                Some(v) => model.eval_int(launch.host_fn, v, 0),
                                None => p.default.and_then(|d| parse_int(model.text(d).trim())),
                            }
                        };
                        let (Some(s), Some(e)) = (evaluate(k, model, start, &env, 0), evaluate(k, model, end, &env, 0))
                        else {
                            continue;
                        };
                        if !is_pow2(e - s) {
                            let message = format!(
                                "`{}` has length {} at this launch, not a power of two: compilation fails with \"arange's range must be a power of 2\". Use an arange of {} and a mask",
                                model.text(call.node).trim(),
                                e - s,
                                ((e - s).max(1) as u64).next_power_of_two()
                            );
                            out.push(
                                RULE.diagnostic(range_of(call.node), message).with_related(
                                    launch.name_range,
                                    format!("the launch of `{}` that gives it", k.name),
                                ),
                            );
                            break;
                        }
                    }
                }
                _ => {}
            }
        }
        // Runtime bounds: pad to a constexpr block and mask where that is provably safe, else annotate.
        let mut fixes: HashMap<String, Option<Fix>> = HashMap::new();
        for (node, param, _) in &runtime_bounds {
            let fix = fixes
                .entry(param.clone())
                .or_insert_with(|| {
                    let aranges: Vec<&KCall> =
                        runtime_bounds.iter().filter(|(_, p, _)| p == param).map(|(_, _, c)| *c).collect();
                    crate::fix::pad_mask::fix(model, k, param, &aranges).or_else(|| constexpr_fix(model, k, param))
                })
                .clone();
            let text = model.text(*node).trim();
            let via =
                if text == param { String::new() } else { format!(" (it comes from the runtime parameter `{param}`)") };
            let message = format!(
                "`tl.arange` bound `{text}` is not a `tl.constexpr`{via}: compilation fails with \"arange's arguments must be of type tl.constexpr\". Annotate `{param}: tl.constexpr`, or use a constexpr block size with a mask"
            );
            out.push(RULE.diagnostic(range_of(*node), message).with_fix(fix));
        }
        // Constexpr bounds: the values given at launch sites and as defaults.
        for (param, arange) in constexpr_bounds {
            // Only worked out when a value is not a power of two: it follows data flow.
            let padding_safe = || masked_everywhere(k, model, &param);
            if let Some(default) = k.param(&param).and_then(|p| p.default) {
                if let Some(v) = parse_int(model.text(default).trim()).filter(|v| !is_pow2(*v)) {
                    let fix = padding_safe().then(|| pad_fix(&param, v, default));
                    out.push(
                        RULE.diagnostic(range_of(default), not_pow2_message(&param, v))
                            .with_related(range_of(arange), "used as an arange bound here")
                            .with_fix(fix),
                    );
                }
            }
            let index = k.params.iter().position(|p| p.name == param).unwrap_or(usize::MAX);
            for launch in model.launches_of_kernel(k) {
                let Some(value) = launch.value_for(&param, index) else { continue };
                if let Some(v) = model.eval_int(launch.host_fn, value, 0).filter(|v| !is_pow2(*v)) {
                    let literal = model.int_literal_node(launch.host_fn, value);
                    let fix = literal.filter(|_| padding_safe()).map(|lit| pad_fix(&param, v, lit));
                    out.push(
                        RULE.diagnostic(range_of(value), not_pow2_message(&param, v))
                            .with_related(range_of(arange), "used as an arange bound here")
                            .with_fix(fix),
                    );
                }
            }
        }
    }
}

/// Padding the block to a power of two is safe when every load and store
/// addressed through it is masked by a runtime bound, and, if the kernel takes
/// a max or min, every masked load says what the padded lanes hold (`other=`).
fn masked_everywhere(k: &Kernel, model: &FileModel, param: &str) -> bool {
    let src = model.src;
    let extremum = k.calls.iter().any(|c| matches!(c.tl_name.as_deref(), Some("max" | "min" | "argmax" | "argmin")));
    let mut touched = 0;
    for c in k.calls.iter().filter(|c| c.is_tl("load") || c.is_tl("store")) {
        let Some(ptr) = c.arg(0, "pointer") else { continue };
        if !k.deps(ptr, src).contains(param) {
            continue;
        }
        touched += 1;
        let mask_index = if c.is_tl("load") { 1 } else { 2 };
        let Some(mask) = c.arg(mask_index, "mask") else { return false };
        let runtime_bound = k.deps(mask, src).iter().any(|d| k.param(d).is_some_and(|p| !p.constexpr));
        if !runtime_bound {
            return false;
        }
        if extremum && c.is_tl("load") && c.arg(2, "other").is_none() {
            return false;
        }
    }
    touched > 0
}

fn pad_fix(param: &str, v: i64, literal: Node) -> Fix {
    let padded = (v.max(1) as u64).next_power_of_two();
    Fix {
        title: format!("Pad `{param}` to {padded} (the loads and stores are masked)").into(),
        applicability: Applicability::NeedsReview,
        edits: vec![Edit { range: range_of(literal), new_text: padded.to_string() }],
    }
}

fn not_pow2_message(param: &str, v: i64) -> String {
    format!(
        "`{param}={v}` is used as a `tl.arange` bound but is not a power of two: compilation fails with \"arange's range must be a power of 2\". Use `triton.next_power_of_2(...)` ({}) and mask the extra lanes",
        (v.max(1) as u64).next_power_of_two()
    )
}
