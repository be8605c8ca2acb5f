//! Kernel facts: a `@triton.jit` function's parameters, `tl.*` calls and
//! loops, and what its loops are: tile loops, grid-stride loops, time loops,
//! recurrences, grid-wide barriers. What makes one of these a mistake is a
//! rule's business.

use std::collections::HashSet;

use tree_sitter::Node;

use super::dataflow::collect_identifiers;
use super::{loop_within, range_of, Assign, FileModel, Loop, LoopKind};
use crate::model::NodeKind;
use crate::text::TextRange;

#[derive(Debug, Clone)]
pub struct Param<'a> {
    /// The name, as written in the file's text (no copy per model).
    pub name: &'a str,
    pub range: TextRange,
    pub constexpr: bool,
    pub default: Option<Node<'a>>,
    /// The whole parameter node (name, annotation and default).
    pub node: Node<'a>,
}

/// A call inside a kernel.
#[derive(Debug, Clone)]
pub struct KCall<'a> {
    pub node: Node<'a>,
    /// `X` when the call is `tl.X(...)` (whatever `triton.language` is imported as).
    pub tl_name: Option<String>,
    /// The last name of the callee, e.g. `load` or `grid_barrier`.
    pub callee: String,
    pub args: Vec<Node<'a>>,
    pub kwargs: Vec<(String, Node<'a>)>,
    /// Enclosing loops, outermost first.
    pub loops: Vec<usize>,
}

impl<'a> KCall<'a> {
    pub(crate) fn is_tl(&self, name: &str) -> bool {
        self.tl_name.as_deref() == Some(name)
    }
    pub fn arg(&self, index: usize, keyword: &str) -> Option<Node<'a>> {
        self.args.get(index).copied().or_else(|| self.kwargs.iter().find(|(k, _)| k == keyword).map(|(_, v)| *v))
    }
}

#[derive(Debug, Clone)]
pub struct Kernel<'a> {
    pub name: String,
    pub name_range: TextRange,
    /// The `function_definition` node.
    pub node: Node<'a>,
    /// `def` keyword through the name.
    pub header_range: TextRange,
    /// Decorator expressions, e.g. `triton.autotune(configs=[...], key=[...])`.
    pub decorators: Vec<Node<'a>>,
    pub params: Vec<Param<'a>>,
    pub loops: Vec<Loop<'a>>,
    pub calls: Vec<KCall<'a>>,
    pub assigns: Vec<Assign<'a>>,
    /// `value[index]` expressions inside the kernel body.
    pub subscripts: Vec<(Node<'a>, Vec<usize>)>,
    /// Identifier pairs multiplied together (`n * BLOCK_N`), for tile-loop recognition.
    pub products: Vec<(String, String)>,
    /// A kernel whose body was not walked (`FileModel::build_stubbed`): only
    /// its header is read, and what the host-side analysis reads of its body
    /// is this view, kept from an earlier analysis.
    pub stub: Option<std::sync::Arc<super::KernelHostView>>,
}

impl<'a> Kernel<'a> {
    /// A kernel as its header reads: name, `def`, decorators and parameters,
    /// its body not yet walked (`stub`: read as a stub, see the field).
    pub(crate) fn from_header(
        name: String,
        name_range: TextRange,
        def: Node<'a>,
        decorators: Vec<Node<'a>>,
        params: Vec<Param<'a>>,
        stub: Option<std::sync::Arc<super::KernelHostView>>,
    ) -> Self {
        Kernel {
            name,
            name_range,
            node: def,
            header_range: TextRange::new(def.start_byte(), name_range.end),
            decorators,
            params,
            loops: Vec::new(),
            calls: Vec::new(),
            assigns: Vec::new(),
            subscripts: Vec::new(),
            products: Vec::new(),
            stub,
        }
    }

    pub(crate) fn param(&self, name: &str) -> Option<&Param<'a>> {
        self.params.iter().find(|p| p.name == name)
    }

    pub(crate) fn is_constexpr(&self, name: &str) -> bool {
        self.param(name).is_some_and(|p| p.constexpr)
    }

    pub(crate) fn tl_calls<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s KCall<'a>> + 's {
        self.calls.iter().filter(move |c| c.is_tl(name))
    }

    /// Calls inside loop `l` (at any depth).
    pub(crate) fn calls_in_loop<'s>(&'s self, l: usize) -> impl Iterator<Item = &'s KCall<'a>> + 's {
        self.calls.iter().filter(move |c| c.loops.contains(&l))
    }

    /// A loop that walks tiles: its step, or a factor its variable is
    /// multiplied by, is a `tl.constexpr` block size. A factor alone is not
    /// enough when the loop is a recurrence whose bound does not involve it:
    /// `for t in range(T): ... x_ptr + t * H + cols` walks time steps of a
    /// row `H` wide (`tl.arange(0, H)` makes `H` a constexpr), where a tile
    /// walk's bound is counted in its blocks (`tl.cdiv(N, BLOCK)`, `N // BLOCK`).
    pub(crate) fn is_tile_loop(&self, l: usize, model: &FileModel) -> bool {
        let src = model.src;
        let lp = &self.loops[l];
        if let Some(step) = lp.step {
            let mut ids = Vec::new();
            collect_identifiers(step, src, &mut ids);
            if ids.iter().any(|i| self.is_constexpr(i)) {
                return true;
            }
        }
        let Some(var) = &lp.var else { return false };
        let factors: Vec<&String> = self
            .products
            .iter()
            .filter_map(|(a, b)| {
                if a == var && self.is_constexpr(b) {
                    Some(b)
                } else if b == var && self.is_constexpr(a) {
                    Some(a)
                } else {
                    None
                }
            })
            .collect();
        if factors.is_empty() {
            return false;
        }
        let bound: HashSet<String> = match lp.stop.or(lp.head) {
            Some(stop) => self.deps(stop, src),
            None => HashSet::new(),
        };
        factors.iter().any(|f| bound.contains(f.as_str())) || !self.is_recurrence(l, model)
    }

    /// Whether the loop's variable starts from, or strides by, the grid (a
    /// grid-stride or per-program loop rather than a serial walk).
    pub(crate) fn loop_follows_grid(&self, l: usize, src: &str) -> bool {
        let lp = &self.loops[l];
        let mut parts: Vec<Node> = [lp.start, lp.step].into_iter().flatten().collect();
        if lp.kind == LoopKind::While {
            if let Some(var) = &lp.var {
                parts.extend(self.assigns.iter().filter(|a| &a.target == var && !lp.contains(a.node)).map(|a| a.value));
            }
        }
        parts.iter().any(|p| self.deps(*p, src).iter().any(|d| d.starts_with("@pid") || d.starts_with("@nprog")))
    }

    /// Whether `name` sizes a `tl.arange`: a block size, not a program count.
    fn is_arange_bound(&self, name: &str, src: &str) -> bool {
        self.tl_calls("arange").any(|c| c.args.iter().any(|a| &src[a.byte_range()] == name))
    }

    /// A grid-stride loop over tiles: it starts at the program's id and steps
    /// by the number of programs (`tl.num_programs(0)` or a `NUM_SMS` the host
    /// passes), so a grid sized to the GPU walks every tile.
    pub(crate) fn is_grid_stride(&self, l: usize, src: &str) -> bool {
        let lp = &self.loops[l];
        let (Some(start), Some(step)) = (lp.start, lp.step) else { return false };
        let start_deps = self.deps(start, src);
        let step_deps = self.deps(step, src);
        start_deps.iter().any(|d| d.starts_with("@pid"))
            && !step_deps.iter().any(|d| d.starts_with("@pid"))
            && (step_deps.iter().any(|d| d.starts_with("@nprog"))
                || step_deps.iter().any(|d| self.param(d).is_some() && !self.is_arange_bound(d, src)))
    }

    /// Time loops inside the kernel: outermost loops that are not tile loops,
    /// do not follow the grid, and both load and store in their body (they
    /// carry state from one step to the next).
    pub(crate) fn time_loops(&self, model: &FileModel) -> Vec<usize> {
        let src = model.src;
        let candidate = |l: usize| {
            !self.is_tile_loop(l, model)
                && !self.loop_follows_grid(l, src)
                && self.calls_in_loop(l).any(|c| c.is_tl("store"))
                && self.calls_in_loop(l).any(|c| c.is_tl("load"))
                && (self.calls_in_loop(l).any(|c| c.is_tl("dot") || c.is_tl("sum"))
                    || (0..self.loops.len()).any(|i| loop_within(&self.loops, i, l))
                    || self.calls_in_loop(l).any(|c| {
                        c.tl_name.is_none()
                            && model
                                .kernel(&c.callee)
                                .is_some_and(|h| h.name != self.name && h.product_params(model).is_some())
                    }))
        };
        (0..self.loops.len())
            .filter(|&l| candidate(l))
            .filter(|&l| {
                // Outermost such loop.
                let mut p = self.loops[l].parent;
                while let Some(pl) = p {
                    if candidate(pl) {
                        return false;
                    }
                    p = self.loops[pl].parent;
                }
                true
            })
            .collect()
    }

    /// Whether `name`, read at byte `at` inside loop `t`, holds the previous
    /// step's value: the loop rebinds it, and only after this point. A nested
    /// loop binds its variable at its header, before its body runs; a binding
    /// in a branch that does not hold the read (the `if` of an `if`/`else`)
    /// does not rebind it for the read.
    pub(crate) fn holds_previous_step(&self, t: usize, name: &str, at: usize) -> bool {
        let mut later = false;
        for a in self.assigns.iter().filter(|a| a.loops.contains(&t) && !a.augmented && a.target == name) {
            let bound = match a.node.kind_name() {
                "for_statement" => field!(a.node, "right").map_or(a.node.start_byte(), |r| r.end_byte()),
                _ => a.node.end_byte(),
            };
            let mut block = a.node.parent();
            while let Some(b) = block.filter(|b| b.kind_name() != "block") {
                block = b.parent();
            }
            let reaches = block.is_none_or(|b| range_of(b).contains(at));
            if bound <= at && !reaches {
                continue;
            }
            if bound <= at {
                return false;
            }
            later = true;
        }
        later
    }

    /// Whether `name` is bound somewhere in the kernel to a value read from memory (`w = tl.load(...)`).
    pub(crate) fn binds_load(&self, name: &str, src: &str) -> bool {
        self.assigns
            .iter()
            .any(|a| a.target == name && src.get(a.value.byte_range()).is_some_and(|v| v.contains("load(")))
    }

    /// Whether `expr` reads memory: it loads, or names a value bound to a load.
    pub fn loaded(&self, expr: Node, src: &str) -> bool {
        let mut ids = Vec::new();
        collect_identifiers(expr, src, &mut ids);
        src.get(expr.byte_range()).is_some_and(|t| t.contains("load(")) || ids.iter().any(|id| self.binds_load(id, src))
    }

    /// For a `@triton.jit` helper that returns a product of one of its
    /// parameters by a block it loads (`def project(x, w_ptr, ...): w =
    /// tl.load(w_ptr + ...); return tl.dot(x, w)`): the indexes of the
    /// parameters multiplied as they are passed, and of the pointer parameters
    /// the loaded factor is read through.
    pub(crate) fn product_params(&self, model: &FileModel) -> Option<(Vec<usize>, Vec<usize>)> {
        let src = model.src;
        let (mut direct, mut pointers) = (Vec::new(), Vec::new());
        for call in self.calls.iter().filter(|c| c.is_tl("dot")) {
            for o in [call.arg(0, "input"), call.arg(1, "other")].into_iter().flatten() {
                let deps = self.deps(o, src);
                for (i, p) in self.params.iter().enumerate() {
                    if p.constexpr || !deps.contains(p.name) {
                        continue;
                    }
                    if !self.loaded(o, src) {
                        direct.push(i);
                    } else if self.calls.iter().any(|c| {
                        c.is_tl("load")
                            && c.arg(0, "pointer").and_then(|q| self.pointer_base(q, src)).as_deref() == Some(p.name)
                    }) {
                        pointers.push(i);
                    }
                }
            }
        }
        (!direct.is_empty() && !pointers.is_empty()).then_some((direct, pointers))
    }

    /// Whether loop `t` of kernel `k` is a recurrence: a state carried from step
    /// to step feeds a product (`tl.dot(h, w_hh)`, `tl.sum(h * w)`), either in
    /// registers (a name bound before the loop and rebound inside it, used
    /// directly as a product's operand) or through memory (a buffer the loop both
    /// stores to and loads from). A flash-attention key-block loop (its running
    /// `acc`, `m_i` are accumulators, never a product's operand) and a norm's row
    /// loop are not.
    pub(crate) fn is_recurrence(&self, t: usize, model: &FileModel) -> bool {
        let k = self;
        let src = model.src;
        let from_previous_step = |name: &str, at: usize| k.holds_previous_step(t, name, at);
        let products = k.calls_in_loop(t).filter(|c| c.is_tl("dot") || c.is_tl("sum"));
        for call in products {
            let operands: Vec<Node> = if call.is_tl("dot") {
                [call.arg(0, "input"), call.arg(1, "other")].into_iter().flatten().collect()
            } else {
                call.arg(0, "input").into_iter().collect()
            };
            for o in operands {
                let mut ids = Vec::new();
                collect_identifiers(o, src, &mut ids);
                if ids.iter().any(|i| from_previous_step(i, o.start_byte())) {
                    return true;
                }
            }
        }
        // A helper that multiplies what it is passed (`project(h, w_hh_ptr, ...)`).
        for call in k.calls_in_loop(t).filter(|c| c.tl_name.is_none()) {
            let Some(helper) = model.kernel(&call.callee).filter(|h| h.name != k.name) else { continue };
            let Some((direct, _)) = helper.product_params(model) else { continue };
            for i in direct {
                let Some(a) = call.arg(i, &helper.params[i].name) else { continue };
                let mut ids = Vec::new();
                collect_identifiers(a, src, &mut ids);
                if ids.iter().any(|id| from_previous_step(id, a.start_byte())) {
                    return true;
                }
            }
        }
        let bases = |name: &str| -> HashSet<String> {
            k.calls_in_loop(t)
                .filter(|c| c.is_tl(name))
                .filter_map(|c| c.arg(0, "pointer").and_then(|p| k.pointer_base(p, src)))
                .collect()
        };
        let stored = bases("store");
        // A step that reads back only the element it writes itself (the same
        // address, moving with the loop's variable) passes nothing on.
        let var = k.loops[t].var.as_deref();
        let addresses = |name: &str, base: &str| -> Vec<String> {
            k.calls_in_loop(t)
                .filter(|c| c.is_tl(name))
                .filter_map(|c| c.arg(0, "pointer"))
                .filter(|p| k.pointer_base(*p, src).as_deref() == Some(base))
                .map(|p| model.text(p).split_whitespace().collect::<String>())
                .collect()
        };
        let own_element = |b: &String| {
            let stores = addresses("store", b);
            let moves = |p: Node| var.is_some_and(|v| k.deps(p, src).contains(v));
            let loads_move = k
                .calls_in_loop(t)
                .filter(|c| c.is_tl("load"))
                .filter_map(|c| c.arg(0, "pointer"))
                .filter(|p| k.pointer_base(*p, src).as_deref() == Some(b.as_str()))
                .all(moves);
            loads_move && addresses("load", b).iter().all(|a| stores.contains(a))
        };
        bases("load").iter().any(|b| stored.contains(b) && !own_element(b))
    }

    /// Whether the kernel (or a `@triton.jit` helper it calls) spins on a
    /// grid-wide barrier inside loop `l`: an atomic plus a spinning `while`.
    pub(crate) fn has_grid_barrier_in(&self, l: usize, model: &FileModel) -> bool {
        let atomics = self.calls_in_loop(l).any(|c| c.tl_name.as_deref().is_some_and(|n| n.starts_with("atomic_")));
        let spin = (0..self.loops.len()).any(|i| {
            let lp = &self.loops[i];
            lp.kind == LoopKind::While && loop_within(&self.loops, i, l) && self.is_spin(i, model)
        });
        if atomics && spin {
            return true;
        }
        self.calls_in_loop(l).any(|c| {
            c.tl_name.is_none()
                && model
                    .kernel(&c.callee)
                    .is_some_and(|helper| helper.name != self.name && helper.is_grid_barrier(model))
        })
    }

    /// A `while` loop that waits on memory: its condition or body reads
    /// through an atomic or a (volatile) load.
    fn is_spin(&self, i: usize, model: &FileModel) -> bool {
        let lp = &self.loops[i];
        let head = lp.head.map(|h| model.text(h)).unwrap_or("");
        head.contains("atomic_")
            || head.contains(".load(")
            || self
                .calls_in_loop(i)
                .any(|c| c.tl_name.as_deref().is_some_and(|n| n.starts_with("atomic_") || n == "load"))
            || self.spin_var_reads_memory(lp, model)
    }

    /// `while count < target:` where `count` comes from an atomic or a load.
    fn spin_var_reads_memory(&self, lp: &Loop, model: &FileModel) -> bool {
        let Some(var) = &lp.var else { return false };
        self.assigns
            .iter()
            .filter(|a| &a.target == var)
            .any(|a| model.text(a.value).contains("atomic_") || model.text(a.value).contains(".load("))
    }

    /// Whether some `while` loop of this kernel spins on memory that other
    /// programs write (a grid-wide barrier or a wait for a neighbour).
    pub(crate) fn spins(&self, model: &FileModel) -> bool {
        (0..self.loops.len()).any(|i| self.loops[i].kind == LoopKind::While && self.is_spin(i, model))
    }

    /// A helper that is itself a barrier: atomics and a spinning `while`.
    pub(crate) fn is_grid_barrier(&self, model: &FileModel) -> bool {
        let atomics = self.calls.iter().any(|c| c.tl_name.as_deref().is_some_and(|n| n.starts_with("atomic_")));
        atomics && (0..self.loops.len()).any(|i| self.loops[i].kind == LoopKind::While && self.is_spin(i, model))
    }
}
