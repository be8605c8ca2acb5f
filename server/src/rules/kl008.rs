//! KL008 scalar-loop-no-dot.

use tree_sitter::Node;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{collect_identifiers, range_of, FileModel, Kernel};

use super::{Reach, Rule, Scope};
use crate::model::field;
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL008",
    name: "scalar-loop-no-dot",
    severity: Severity::Warning,
    summary: "Scalar multiply-accumulate loops (direct convolution) and no `tl.dot`",
    doc: DOC,
    reach: Reach::Kernel,
    hygiene: false,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL008 scalar-loop-no-dot

## What it does
Finds kernels with no `tl.dot` whose nested loops (`for ic` / `for ky` /
`for kx`) load operands and multiply-accumulate them (`acc += x * w`): a
direct convolution or a hand-written matrix product on the CUDA cores.

## Why is this bad?
Without `tl.dot` nothing runs on the tensor cores, and every product is
re-loaded from memory. In the runs this rule comes from, a scalar direct
convolution made VGG16 0.11x of PyTorch; PyTorch's convolution (cuDNN) with a
Triton GEMM and fused bias + ReLU reached 0.71x, and a Winograd kernel
written by the LLM only 0.60x.

## Example
```python
for ic in range(C_in):
    for ky in range(3):
        for kx in range(3):
            x = tl.load(x_ptr + ...)
            w = tl.load(w_ptr + ...)
            acc += x * w
```

## Use instead
Keep PyTorch's convolution and fuse the epilogue in Triton, or write the
convolution as an implicit GEMM: gather an input tile of shape
(BLOCK_M, BLOCK_K) over (ic, ky, kx) and multiply with `tl.dot` by a
(BLOCK_K, BLOCK_N) weight tile.
"#;

/// Whether a multiply-accumulate multiplies an input window by weights, as a
/// direct convolution does: both factors are loaded from memory and vary with
/// at least two element-by-element loops of the nest (`x[ic, oh + ky, ow + kx]`
/// and `w[oc, ic, ky, kx]`). Norms, cross-entropy and variance walk tiles
/// (`range(0, N, BLOCK)`) and multiply an input by itself or by a scale;
/// interpolation multiplies by coefficients it computes: no product that
/// belongs on tensor cores.
fn is_window_times_weights<'a>(model: &FileModel<'a>, k: &Kernel<'a>, value: Node<'a>, loops: &[usize]) -> bool {
    let src = model.src;
    let Some(product) = find_product(value) else { return false };
    let (Some(left), Some(right)) = (field!(product, "left"), field!(product, "right")) else {
        return false;
    };
    let loop_vars: Vec<&str> =
        loops.iter().filter(|&&l| !walks_tiles(model, k, l)).filter_map(|&l| k.loops[l].var.as_deref()).collect();
    let varies = |n: Node| {
        let deps = k.deps(n, src);
        loop_vars.iter().filter(|v| deps.contains(**v)).count()
    };
    varies(left) >= 2
        && varies(right) >= 2
        && k.loaded(left, src)
        && k.loaded(right, src)
        && shaped_like_gemm(model, k, value, left, right, &loop_vars)
}

/// Whether the two factors could be a matrix product's, not a depthwise
/// (per-channel) one: their load addresses share no index besides the loops
/// summed over. A depthwise convolution reads `x[c, iy, ix]` and `w[c, ky, kx]`:
/// each output channel reads one input channel (both addresses use `c`), so
/// there is no GEMM to give `tl.dot`. A direct convolution's addresses share
/// only the summed `ic, ky, kx`.
fn shaped_like_gemm<'a>(
    model: &FileModel<'a>,
    k: &Kernel<'a>,
    value: Node<'a>,
    left: Node<'a>,
    right: Node<'a>,
    summed: &[&str],
) -> bool {
    let src = model.src;
    // The load's address, for a factor that is a load or a name bound to one.
    let load_in = |n: Node| k.calls.iter().find(|c| c.is_tl("load") && range_of(n).contains_range(range_of(c.node)));
    let address = |n: Node<'a>| -> Option<Node<'a>> {
        let load = load_in(n).or_else(|| {
            let mut ids = Vec::new();
            collect_identifiers(n, src, &mut ids);
            ids.iter().find_map(|id| k.assigns.iter().rfind(|a| &a.target == id).and_then(|a| load_in(a.value)))
        })?;
        load.arg(0, "pointer")
    };
    // The buffers the kernel loads from and stores to.
    let buffers: std::collections::HashSet<String> = k
        .calls
        .iter()
        .filter(|c| c.is_tl("load") || c.is_tl("store"))
        .filter_map(|c| c.arg(0, "pointer").and_then(|p| k.pointer_base(p, src)))
        .collect();
    // The names an address is written with, through names that are addresses
    // themselves (`base = x_ptr + nc * H * W`, then `base + ih * W + iw`).
    let address_names = |pointer: Node| -> Vec<String> {
        let mut ids = Vec::new();
        collect_identifiers(pointer, src, &mut ids);
        let mut i = 0;
        while i < ids.len() && ids.len() < 64 {
            let binds: Vec<_> = k.assigns.iter().filter(|a| a.target == ids[i]).collect();
            if let [one] = binds.as_slice() {
                if k.pointer_base(one.value, src).is_some_and(|b| buffers.contains(&b)) {
                    let mut inner = Vec::new();
                    collect_identifiers(one.value, src, &mut inner);
                    for n in inner {
                        if !ids.contains(&n) {
                            ids.push(n);
                        }
                    }
                }
            }
            i += 1;
        }
        ids
    };
    let (Some(pa), Some(pb)) = (address(left), address(right)) else { return true };
    let (a, b) = (address_names(pa), address_names(pb));
    // What each address depends on through any name.
    let (deps_a, deps_b) = (k.deps(pa, src), k.deps(pb, src));
    // `tl.sum(x * w, axis=0)` also sums over the vector axis a `tl.arange` index walks.
    let reduced = model.text(value).contains("sum(");
    let vector_axis = |name: &str| {
        k.assigns.iter().any(|a| a.target == name && model.text(a.value).contains("arange("))
            && !k.var_deps(name, src).iter().any(|d| d.starts_with("@pid"))
    };
    let index = |name: &String| {
        !summed.contains(&name.as_str())
            && !(reduced && vector_axis(name))
            && k.param(name).is_none()
            && !k.is_constexpr(name)
            && !k.var_deps(name, src).iter().any(|d| summed.contains(&d.as_str()))
    };
    // An index one address is written with that the other also depends on
    // (`x[nc, ...]` and `w[nc % C, ...]`): per channel, not a matrix product.
    let shared = |names: &[String], other: &std::collections::HashSet<String>| {
        names.iter().filter(|n| index(n)).any(|n| other.contains(n.as_str()))
    };
    !shared(&a, &deps_b) && !shared(&b, &deps_a)
}

/// A loop whose variable picks a block of elements: it steps by a block size,
/// or it is combined with a `tl.arange` (`m * BLOCK_M + tl.arange(0, BLOCK_M)`).
fn walks_tiles(model: &FileModel, k: &Kernel, l: usize) -> bool {
    let lp = &k.loops[l];
    if lp.step.is_some_and(|s| {
        let mut ids = Vec::new();
        collect_identifiers(s, model.src, &mut ids);
        ids.iter().any(|i| k.is_constexpr(i))
    }) {
        return true;
    }
    let Some(var) = lp.var.as_deref() else { return false };
    k.assigns.iter().filter(|a| a.loops.contains(&l)).any(|a| {
        let t = model.text(a.value);
        t.contains("arange(") && {
            let mut ids = Vec::new();
            collect_identifiers(a.value, model.src, &mut ids);
            ids.iter().any(|i| i == var)
        }
    })
}

/// The loops a multiply-accumulate sums over: those around it, less the ones
/// that also hold the accumulator's last fresh start before it (`acc =
/// tl.zeros(...)` inside `for row in ...` begins a new sum per row) and
/// grid-stride loops (each pass is another program's output, not a term).
fn accumulating_loops(model: &FileModel, k: &Kernel, mac: &crate::model::Assign) -> Vec<usize> {
    let start = k
        .assigns
        .iter()
        .filter(|b| b.target == mac.target && !b.augmented && b.node.end_byte() <= mac.node.start_byte())
        .rfind(|b| {
            let mut ids = Vec::new();
            collect_identifiers(b.value, model.src, &mut ids);
            !ids.contains(&b.target)
        });
    mac.loops
        .iter()
        .copied()
        .filter(|l| !start.is_some_and(|s| s.loops.contains(l)))
        .filter(|&l| !k.is_grid_stride(l, model.src))
        .collect()
}

/// The first `a * b` in an expression (the multiply of `acc += a * b` or `acc = acc + a * b`).
fn find_product(node: Node) -> Option<Node> {
    let mut found = None;
    crate::model::visit_nodes(node, &mut |n| {
        if found.is_none()
            && n.kind_name() == "binary_operator"
            && field!(n, "operator").is_some_and(|o| o.kind_name() == "*")
        {
            found = Some(n);
        }
    });
    found
}

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    for k in scope.kernels {
        if k.tl_calls("dot").next().is_some() {
            continue;
        }
        // Multiply-accumulates at loop depth >= 2 whose loop nest loads.
        let mut reported_roots = Vec::new();
        for a in &k.assigns {
            if a.loops.len() < 2 {
                continue;
            }
            let value = model.text(a.value);
            let target = &a.target;
            let is_mac = (a.augmented && value.contains('*'))
                || (!a.augmented && value.contains('*') && value.trim_start().starts_with(&format!("{target} +")));
            if !is_mac {
                continue;
            }
            let nest = accumulating_loops(model, k, a);
            if nest.len() < 2 || !is_window_times_weights(model, k, a.value, &nest) {
                continue;
            }
            let innermost = *a.loops.last().unwrap_or(&0);
            if !k.calls_in_loop(innermost).any(|c| c.is_tl("load")) {
                continue;
            }
            let root = nest[0];
            if reported_roots.contains(&root) {
                continue;
            }
            reported_roots.push(root);
            let vars: Vec<String> =
                nest.iter().filter_map(|&l| k.loops[l].var.clone()).map(|v| format!("`{v}`")).collect();
            let message = format!(
                "scalar multiply-accumulate loops over {} in `{}` with no `tl.dot`: nothing runs on the tensor cores. Keep PyTorch's convolution (cuDNN) with a fused Triton epilogue, or write an implicit GEMM with `tl.dot`",
                vars.join(", "),
                k.name
            );
            out.push(RULE.diagnostic(k.loops[root].header_range, message));
        }
    }
}
