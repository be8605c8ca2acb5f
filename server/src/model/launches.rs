//! Launches: the launch sites a host call reaches (through helpers, as
//! `FileModel::callees` resolves them), the Python time loops that launch
//! kernels (which launches a loop over time steps repeats, whether it carries
//! state from one step's launch to the next rather than making independent
//! launches, and how many launches a forward makes), and the per-kernel
//! summary the editor and pipelines show. KL001 reports the time loops; the
//! summaries read their estimates to tell a persistent kernel from one
//! relaunched per step.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use tree_sitter::Node;

use super::{call_arguments, collect_identifiers, loop_within, FileModel, HostFn, Kernel, StubReads};
use crate::model::NodeKind;
use crate::text::TextRange;

/// A kernel as the editor and pipelines see it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KernelSummary {
    pub name: String,
    /// The `def` line through the end of the kernel's name.
    pub range: TextRange,
    /// The time loop is inside the kernel and no launch of it sits in a Python time loop.
    pub persistent: bool,
    pub has_time_loop: bool,
    pub launch_sites: usize,
    /// e.g. "2 launches per step × seq_len steps × num_layers layers", when a
    /// Python time loop that carries state relaunches it ([`time_loop_launches`]).
    pub launches_per_forward: Option<String>,
}

impl<'a> FileModel<'a> {
    /// Launch sites a call to host function `f` reaches, transitively, with the
    /// number of launches one call makes (launches inside loops of the callee count once).
    pub(crate) fn launches_reached(&self, f: usize, stubs: &StubReads) -> Vec<usize> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        self.collect_launches(f, &mut seen, &mut out, stubs);
        out
    }

    fn collect_launches(&self, f: usize, seen: &mut HashSet<usize>, out: &mut Vec<usize>, stubs: &StubReads) {
        if !seen.insert(f) {
            return;
        }
        self.step(1);
        if self.host_fns[f].stub.is_some() {
            // A stub's launch sites are not in the model.
            stubs.record(f);
        }
        out.extend(self.host_fns[f].launches.iter().copied());
        for call in &self.host_fns[f].calls {
            for callee in self.callees(f, call) {
                self.collect_launches(callee, seen, out, stubs);
            }
        }
        seen.remove(&f);
    }

    /// Whether a call to host function `f` reaches a launch site, transitively
    /// (`!self.launches_reached(f).is_empty()`, also through host stubs).
    pub(crate) fn reaches_launch(&self, f: usize) -> bool {
        let mut seen = HashSet::new();
        self.reaches_launch_from(f, &mut seen)
    }

    fn reaches_launch_from(&self, f: usize, seen: &mut HashSet<usize>) -> bool {
        if !seen.insert(f) {
            return false;
        }
        self.step(1);
        let func = &self.host_fns[f];
        if !func.launches.is_empty() || func.stub.as_ref().is_some_and(|s| s.launches) {
            return true;
        }
        func.calls.iter().any(|call| self.callees(f, call).into_iter().any(|c| self.reaches_launch_from(c, seen)))
    }

    /// Launch sites reached from inside the body of loop `l` of host function `f`:
    /// direct launches and launches through helper calls. Each entry is
    /// (launch index, the call site that leads there if indirect).
    pub(crate) fn launches_in_loop(&self, f: usize, l: usize, stubs: &StubReads) -> Vec<(usize, Option<Node<'a>>)> {
        let func = &self.host_fns[f];
        let mut out: Vec<(usize, Option<Node<'a>>)> =
            func.launches.iter().filter(|&&i| self.launches[i].loops.contains(&l)).map(|&i| (i, None)).collect();
        for call in func.calls.iter().filter(|c| c.loops.contains(&l)) {
            for callee in self.callees(f, call) {
                for li in self.launches_reached(callee, stubs) {
                    out.push((li, Some(call.node)));
                }
            }
        }
        out
    }

    pub fn kernel_summaries(&self, stubs: &StubReads) -> Vec<KernelSummary> {
        let estimates = super::launch_estimates(self, stubs);
        let mut sites: HashMap<&str, usize> = HashMap::new();
        for l in &self.launches {
            *sites.entry(l.kernel.as_str()).or_default() += 1;
        }
        self.kernels
            .iter()
            .map(|k| {
                let estimate = estimates.get(&k.name).cloned();
                let time_loops = k.time_loops(self);
                let has_time_loop = !time_loops.is_empty();
                // Persistent: a state loop inside the kernel (a recurrence, not a
                // flash-attention key loop) that no Python time loop relaunches,
                // or a grid sized to the GPU whose programs stride over the tiles.
                let recurrent = time_loops.iter().any(|&t| k.is_recurrence(t, self));
                let grid_stride = (0..k.loops.len()).any(|l| k.is_grid_stride(l, self.src));
                KernelSummary {
                    name: k.name.clone(),
                    range: k.header_range,
                    persistent: (recurrent && estimate.is_none()) || grid_stride,
                    has_time_loop,
                    launch_sites: sites.get(k.name.as_str()).copied().unwrap_or(0),
                    launches_per_forward: estimate,
                }
            })
            .collect()
    }
}

/// One Python time loop that launches kernels.
pub struct TimeLoopLaunches {
    pub host_fn: usize,
    pub loop_index: usize,
    /// (launch index, the helper call leading there, if indirect).
    pub launches: Vec<(usize, Option<tree_sitter::Range>)>,
    pub estimate: String,
}

pub(crate) fn time_loop_launches(model: &FileModel, stubs: &StubReads) -> Vec<TimeLoopLaunches> {
    let mut out = Vec::new();
    // built on the first time loop that needs it: one pass over the calls, not one per loop
    let mut callers: Option<HashMap<usize, (usize, usize)>> = None;
    for f in 0..model.host_fns.len() {
        let func = &model.host_fns[f];
        let time: Vec<bool> = (0..func.loops.len()).map(|l| model.is_time_loop(f, l)).collect();
        for l in 0..func.loops.len() {
            if !time[l] {
                continue;
            }
            let reached = model.launches_in_loop(f, l, stubs);
            if reached.is_empty() || !carries_state(model, f, l, stubs) {
                continue;
            }
            // A nested time loop that launches gets the diagnostic instead.
            let inner_launches = (0..func.loops.len()).any(|i| {
                i != l && time[i] && loop_within(&func.loops, i, l) && !model.launches_in_loop(f, i, stubs).is_empty()
            });
            if inner_launches {
                continue;
            }
            let per_step = reached.len();
            let mut factors = vec![format!("{} launch{} per step", per_step, if per_step == 1 { "" } else { "es" })];
            factors.push(format!("{} steps", model.loop_bound_text(f, l)));
            let mut p = func.loops[l].parent;
            while let Some(pl) = p {
                factors.push(factor(model, f, pl, time[pl]));
                p = func.loops[pl].parent;
            }
            let callers = callers.get_or_insert_with(|| first_callers_in_loops(model));
            factors.extend(caller_factors(model, callers, f, stubs));
            out.push(TimeLoopLaunches {
                host_fn: f,
                loop_index: l,
                launches: reached.into_iter().map(|(i, call)| (i, call.map(|c| c.range()))).collect(),
                estimate: factors.join(" × "),
            });
        }
    }
    out
}

/// Host names that the launches reached from loop `l` write and read: a
/// written name is one passed for a pointer the kernel stores to (or
/// atomically updates), a read name one passed for a pointer it loads. Names
/// the loop assigns from a written name, or from the result of a call that
/// launches, are written too (`h = step(x[t], h)`, `h, out = out, h`). The loop
/// carries state when a launch reads a written name as the previous step left
/// it: not rebound earlier in the same step (`c = F.linear(x_c, w)` before a
/// kernel that updates `c` in place makes a new `c` every step), or rebound
/// from a value that itself reads such a name (`h_prev = h.clone()`).
fn carries_state(model: &FileModel, f: usize, l: usize, stubs: &StubReads) -> bool {
    let func = &model.host_fns[f];
    let mut written: HashSet<String> = HashSet::new();
    let identity: HashMap<String, HashSet<String>> = HashMap::new();
    // What each launch and launching call reads, and where.
    let mut reads: Vec<(usize, HashSet<String>)> = Vec::new();
    for &li in func.launches.iter().filter(|&&i| model.launches[i].loops.contains(&l)) {
        let mut read = HashSet::new();
        launch_flow(model, li, &identity, Unknown::Everything, &mut written, &mut read);
        reads.push((model.launches[li].node.start_byte(), read));
    }
    let mut launching_calls: Vec<Node> = Vec::new();
    for call in func.calls.iter().filter(|c| c.loops.contains(&l)) {
        for callee in model.callees(f, call) {
            if !model.reaches_launch(callee) {
                continue;
            }
            launching_calls.push(call.node);
            let mut read = HashSet::new();
            helper_flow(model, call.node, callee, &identity, Unknown::Everything, 0, &mut written, &mut read, stubs);
            reads.push((call.node.start_byte(), read));
        }
    }
    // Host assignments inside the loop pass what a launch wrote on to new
    // names, and a launch that writes into a view (`h_t = hs[t]`) writes the
    // tensor it views.
    let in_loop: Vec<_> = func.assigns.iter().filter(|a| a.loops.contains(&l)).collect();
    for _ in 0..3 {
        for a in &in_loop {
            let mut ids = Vec::new();
            collect_identifiers(a.value, model.src, &mut ids);
            let from_launch = launching_calls.iter().any(|c| contains(a.value, *c));
            if from_launch || ids.iter().any(|i| written.contains(i)) {
                written.insert(a.target.clone());
            }
            if written.contains(&a.target) {
                if let Some(base) = view_base(a.value, model.src) {
                    written.insert(base.to_string());
                }
            }
        }
    }
    // A slice of its own per step, or a scratch buffer, holds nothing the next step reads.
    let step_local = model.step_local_memory(f, l);
    written.retain(|n| !step_local.contains(n));
    let flow = StepFlow {
        model,
        body: func.loops[l].body,
        assigns: &in_loop,
        written: &written,
        launching_calls: &launching_calls,
    };
    reads.iter().any(|(at, names)| names.iter().any(|n| flow.from_previous_step(n, *at, 0)))
}

/// Methods (and `torch.*` functions of their first argument) whose result may
/// share memory with the tensor they are called on.
const VIEW_METHODS: &[&str] = &[
    "view",
    "view_as",
    "reshape",
    "reshape_as",
    "transpose",
    "t",
    "permute",
    "squeeze",
    "unsqueeze",
    "flatten",
    "unflatten",
    "narrow",
    "select",
    "expand",
    "expand_as",
    "as_strided",
    "movedim",
    "moveaxis",
    "unfold",
    "split",
    "chunk",
    "unbind",
    "diagonal",
    "contiguous",
    "to",
    "type",
    "detach",
    "float",
    "half",
    "bfloat16",
    "swapaxes",
    "swapdims",
    "squeeze_",
    "unsqueeze_",
    "view_as_real",
    "view_as_complex",
];

/// The name whose memory `value` may view: `x` for `x[t]`, `x.T`,
/// `x[t].view(...)`, `torch.transpose(x, 0, 1)` or `x` itself; `None` for a
/// value that is a new tensor (`F.linear(...)`, `x.clone()`, `a + b`).
fn view_base<'s>(value: Node, src: &'s str) -> Option<&'s str> {
    let mut node = value;
    for _ in 0..16 {
        match node.kind_name() {
            "identifier" => return src.get(node.byte_range()),
            "subscript" => node = field!(node, "value")?,
            "attribute" => node = field!(node, "object")?,
            "parenthesized_expression" => node = node.named_child(0)?,
            "call" => {
                let function = field!(node, "function")?;
                if function.kind_name() != "attribute" {
                    return None;
                }
                let method = src.get(field!(function, "attribute")?.byte_range())?;
                if !VIEW_METHODS.contains(&method) {
                    return None;
                }
                let object = field!(function, "object")?;
                node = if src.get(object.byte_range()) == Some("torch") {
                    field!(node, "arguments")?.named_child(0)?
                } else {
                    object
                };
            }
            _ => return None,
        }
    }
    None
}

/// Which names hold what the previous step of a host loop left (see [`carries_state`]).
struct StepFlow<'m, 'a> {
    model: &'m FileModel<'a>,
    /// The loop's body: an assignment that is a statement of it runs on every step.
    body: Node<'a>,
    /// The assignments inside the loop, in document order.
    assigns: &'m [&'m super::Assign<'a>],
    written: &'m HashSet<String>,
    launching_calls: &'m [Node<'a>],
}

impl StepFlow<'_, '_> {
    /// Whether `name`, read at byte `at` inside the loop, can hold a value a
    /// launch wrote on an earlier step.
    fn from_previous_step(&self, name: &str, at: usize, depth: usize) -> bool {
        if !self.written.contains(name) {
            return false;
        }
        let binds: Vec<&&super::Assign> = self.assigns.iter().filter(|a| a.target == name).collect();
        // Rebound only in a branch or a nested loop, or updated in place
        // (`h += ...`): what the step reads may be last step's.
        let every_step = |a: &super::Assign| {
            !a.augmented && a.node.parent().and_then(|p| p.parent()).is_some_and(|b| b.id() == self.body.id())
        };
        if depth > 4 || binds.iter().any(|a| !every_step(a)) {
            return true;
        }
        let Some(last) = binds.iter().filter(|a| a.node.end_byte() <= at).last() else {
            // Not rebound before this read in the step: the value of the step before.
            return true;
        };
        // A value made by a launching call: that call's own reads are looked at where it is.
        if self.launching_calls.iter().any(|c| contains(last.value, *c)) {
            return false;
        }
        let mut ids = Vec::new();
        collect_identifiers(last.value, self.model.src, &mut ids);
        ids.iter().any(|i| self.from_previous_step(i, last.node.start_byte(), depth + 1))
    }
}

fn contains(outer: Node, inner: Node) -> bool {
    outer.start_byte() <= inner.start_byte() && inner.end_byte() <= outer.end_byte()
}

/// The host names behind an argument: the tensor it views, else its identifiers, mapped through `names`
/// (a helper's parameter -> the caller's names) when it is a helper's parameter.
fn arg_names(model: &FileModel, arg: Node, names: &HashMap<String, HashSet<String>>) -> HashSet<String> {
    // A view of a tensor (`y[n]`, `out[lo:hi]`, `h.view(...)`) passes that tensor's
    // memory; the names that index it (`n`, `lo`) are not memory the kernel touches.
    let mut ids = Vec::new();
    match view_base(arg, model.src) {
        Some(base) => ids.push(base.to_string()),
        None => collect_identifiers(arg, model.src, &mut ids),
    }
    let mut out = HashSet::new();
    for id in ids {
        match names.get(&id) {
            Some(outer) => out.extend(outer.iter().cloned()),
            None => {
                out.insert(id);
            }
        }
    }
    out
}

/// What a launch argument of a kernel whose memory access is not visible may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unknown {
    /// Memory read and written (KL001: a launch may carry state through it).
    Everything,
    /// Nothing known (a tensor must be shown to be one).
    Nothing,
}

/// Names in host function `f` that launches (direct, or through the helpers
/// it calls) pass for a pointer the kernel loads from or stores to: tensors
/// on the GPU. Arguments of kernels whose memory access is not visible are
/// left out, so a scalar (`n`) is never taken for a tensor.
pub(crate) fn gpu_tensor_names(model: &FileModel, f: usize, stubs: &StubReads) -> HashSet<String> {
    let func = &model.host_fns[f];
    let identity: HashMap<String, HashSet<String>> = HashMap::new();
    let mut out = HashSet::new();
    let mut read = HashSet::new();
    for &li in &func.launches {
        launch_flow(model, li, &identity, Unknown::Nothing, &mut out, &mut read);
    }
    for call in &func.calls {
        for callee in model.callees(f, call) {
            if callee != f && model.reaches_launch(callee) {
                helper_flow(model, call.node, callee, &identity, Unknown::Nothing, 0, &mut out, &mut read, stubs);
            }
        }
    }
    out.extend(read);
    out.remove("self");
    out
}

fn launch_flow(
    model: &FileModel,
    li: usize,
    names: &HashMap<String, HashSet<String>>,
    unknown: Unknown,
    written: &mut HashSet<String>,
    read: &mut HashSet<String>,
) {
    let launch = &model.launches[li];
    let access = model.kernel(&launch.kernel).and_then(|k| pointer_access(model, k));
    let params: Vec<String> =
        model.kernel(&launch.kernel).map(|k| k.params.iter().map(|p| p.name.to_string()).collect()).unwrap_or_default();
    let args = launch.args.iter().enumerate().map(|(i, a)| (params.get(i).cloned(), *a));
    let kwargs = launch.kwargs.iter().map(|(k, a)| (Some(k.clone()), *a));
    for (param, arg) in args.chain(kwargs) {
        let host = arg_names(model, arg, names);
        match (&access, param) {
            (Some((stores, loads)), Some(p)) => {
                if stores.contains(&p) {
                    written.extend(host.iter().cloned());
                }
                if loads.contains(&p) {
                    read.extend(host);
                }
            }
            // A kernel this file does not define, or whose memory access is not
            // visible: every argument may be read and written.
            _ if unknown == Unknown::Everything => {
                written.extend(host.iter().cloned());
                read.extend(host);
            }
            _ => {}
        }
    }
}

fn helper_flow(
    model: &FileModel,
    call: Node,
    callee: usize,
    names: &HashMap<String, HashSet<String>>,
    unknown: Unknown,
    depth: usize,
    written: &mut HashSet<String>,
    read: &mut HashSet<String>,
    stubs: &StubReads,
) {
    if depth > 4 {
        return;
    }
    let helper = &model.host_fns[callee];
    if helper.stub.is_some() {
        stubs.record(callee);
    }
    let (args, kwargs) = call_arguments(call, model.src);
    let params: Vec<&String> = helper.params.iter().filter(|p| p.as_str() != "self").collect();
    let mut inner: HashMap<String, HashSet<String>> = HashMap::new();
    for (i, a) in args.iter().enumerate() {
        if let Some(p) = params.get(i) {
            inner.insert((*p).clone(), arg_names(model, *a, names));
        }
    }
    for (k, a) in &kwargs {
        inner.insert(k.clone(), arg_names(model, *a, names));
    }
    // A parameter the helper rebinds to a device copy of itself (`x =
    // torch.from_numpy(x).cuda()`, `x = x.to(device)`) was on the host: the
    // launches see the copy, and the caller's value never reaches them.
    let copied: Vec<&String> = helper
        .assigns
        .iter()
        .filter(|a| !a.augmented && copies_to_device(model.text(a.value), &a.target))
        .map(|a| &a.target)
        .collect();
    for name in copied {
        inner.remove(name);
    }
    // Names the helper binds itself are its own; only its parameters lead back to the caller.
    for &li in &helper.launches {
        let mut w = HashSet::new();
        let mut r = HashSet::new();
        launch_flow(model, li, &inner, unknown, &mut w, &mut r);
        written.extend(w.into_iter().filter(|n| !helper_local(helper, n, &inner)));
        read.extend(r.into_iter().filter(|n| !helper_local(helper, n, &inner)));
    }
    for c in &helper.calls {
        for g in model.callees(callee, c) {
            if g != callee {
                helper_flow(model, c.node, g, &inner, unknown, depth + 1, written, read, stubs);
            }
        }
    }
}

/// Whether `value` is a device copy made from `name` ([`moves_to_gpu`]).
fn copies_to_device(value: &str, name: &str) -> bool {
    let reads_name = value.split(|c: char| !c.is_alphanumeric() && c != '_').any(|w| w == name);
    moves_to_gpu(value) && reads_name
}

/// Whether expression text `value` moves data to the GPU: `.cuda(...)`, or
/// `.to(...)` naming `cuda` or a device (not a dtype cast, which stays where it is).
pub(crate) fn moves_to_gpu(value: &str) -> bool {
    value.contains(".cuda(")
        || value.split(".to(").skip(1).any(|rest| {
            let arg = rest.split(')').next().unwrap_or("");
            arg.contains("cuda") || arg.contains("device")
        })
}

fn helper_local(helper: &HostFn, name: &str, inner: &HashMap<String, HashSet<String>>) -> bool {
    !inner.values().any(|outer| outer.contains(name)) && helper.assigns.iter().any(|a| a.target == name)
}

/// What the host-side analysis (KL001's state flow, `launch_flow`) reads of a
/// kernel. The incremental analysis keeps it per kernel: a kernel edit that
/// changes it changes host-rule findings, so it is analysed afresh.
#[derive(Debug, Clone)]
pub struct KernelHostView {
    /// Parameter names, in order (a launch's arguments map to them by position).
    pub params: Vec<String>,
    /// The pointer parameters it stores to and loads from, each sorted;
    /// `None` where [`pointer_access`] sees no store.
    pub access: Option<(Vec<String>, Vec<String>)>,
    /// Where its header's parts are, for a stub read without reading them
    /// again (kept by an analysis that keeps host links, see
    /// `checker`; not compared: an edit that moves them changes
    /// nothing the host rules read).
    pub header: Option<Box<KernelHeader>>,
}

/// The parts of a kernel's header a stub keeps, each byte range relative to the `def`'s start.
#[derive(Debug, Clone, Default)]
pub struct KernelHeader {
    /// The name's (the name is the text there).
    pub name_range: (u32, u32),
    /// Each parameter's name range and whether it is annotated `tl.constexpr`, in order.
    pub params: Box<[(u32, u32, bool)]>,
}

impl PartialEq for KernelHostView {
    fn eq(&self, other: &Self) -> bool {
        self.params == other.params && self.access == other.access
    }
}

impl Eq for KernelHostView {}

/// With `header`, the view keeps the kernel's header ([`KernelHeader`]).
pub(crate) fn kernel_host_view(model: &FileModel, k: &Kernel, header: bool) -> KernelHostView {
    if let Some(view) = &k.stub {
        let mut view = KernelHostView::clone(view);
        if header && view.header.is_none() {
            view.header = Some(Box::new(kernel_header(k)));
        }
        return view;
    }
    let sorted = |set: HashSet<String>| {
        let mut v: Vec<String> = set.into_iter().collect();
        v.sort_unstable();
        v
    };
    KernelHostView {
        params: k.params.iter().map(|p| p.name.to_string()).collect(),
        access: pointer_access(model, k).map(|(stores, loads)| (sorted(stores), sorted(loads))),
        header: header.then(|| Box::new(kernel_header(k))),
    }
}

/// The header of kernel `k` as a stub keeps it.
pub(crate) fn kernel_header(k: &Kernel) -> KernelHeader {
    let start = k.node.start_byte();
    let rel = |r: TextRange| -> (u32, u32) {
        let at = |b: usize| u32::try_from(b.saturating_sub(start)).unwrap_or(u32::MAX);
        (at(r.start), at(r.end))
    };
    KernelHeader {
        name_range: rel(k.name_range),
        params: k.params.iter().map(|p| (rel(p.range).0, rel(p.range).1, p.constexpr)).collect(),
    }
}

/// (pointer parameters the kernel stores to, those it loads from), or `None`
/// when it stores nowhere visible (its memory access sits in helpers or
/// descriptors this analysis does not follow).
fn pointer_access(model: &FileModel, k: &Kernel) -> Option<(HashSet<String>, HashSet<String>)> {
    if let Some(view) = &k.stub {
        let set = |v: &[String]| v.iter().cloned().collect::<HashSet<String>>();
        return view.access.as_ref().map(|(stores, loads)| (set(stores), set(loads)));
    }
    let mut stores = HashSet::new();
    let mut loads = HashSet::new();
    for c in &k.calls {
        let Some(name) = c.tl_name.as_deref() else { continue };
        let Some(ptr) = c.arg(0, "pointer") else { continue };
        let Some(base) = k.pointer_base(ptr, model.src) else { continue };
        if name == "store" || name.starts_with("atomic_") {
            stores.insert(base.clone());
        }
        if name == "load" || name.starts_with("atomic_") {
            loads.insert(base);
        }
    }
    if stores.is_empty() {
        None
    } else {
        Some((stores, loads))
    }
}

fn factor(model: &FileModel, f: usize, l: usize, is_time: bool) -> String {
    let bound = model.loop_bound_text(f, l);
    let noun = if is_time {
        "steps"
    } else if bound.to_ascii_lowercase().contains("layer") {
        "layers"
    } else {
        "iterations"
    };
    format!("{bound} {noun}")
}

/// Loops around the call sites of host function `f` in its callers (first caller that has any).
fn caller_factors(
    model: &FileModel,
    callers: &HashMap<usize, (usize, usize)>,
    f: usize,
    stubs: &StubReads,
) -> Vec<String> {
    // A host stub's calls are in the model without their loops: one that
    // calls `f` by name inside a loop is a caller this map misses.
    let func = &model.host_fns[f];
    let class = func.class.as_deref().filter(|_| func.name == "forward").map(|c| format!("class:{c}"));
    let names = |t: &String| *t == func.name || class.as_ref() == Some(t);
    for (g, h) in model.host_fns.iter().enumerate() {
        if h.stub.as_ref().is_some_and(|s| s.calls_in_loops_to.iter().any(names)) {
            stubs.record(g);
        }
    }
    let Some(&(g, c)) = callers.get(&f) else { return Vec::new() };
    let call = &model.host_fns[g].calls[c];
    call.loops.iter().rev().map(|&l| factor(model, g, l, model.is_time_loop(g, l))).collect()
}

/// Host function -> the first call to it by its name from inside a loop of
/// another function (function index, call index), in document order: the
/// loops around that call multiply the launches of a time loop inside the
/// function. One pass over every call, each resolved once.
fn first_callers_in_loops(model: &FileModel) -> HashMap<usize, (usize, usize)> {
    let mut out = HashMap::new();
    for (g, func) in model.host_fns.iter().enumerate() {
        for (c, call) in func.calls.iter().enumerate() {
            if call.loops.is_empty() {
                continue;
            }
            for callee in model.callees(g, call) {
                let name = call.callee.trim_start_matches('.');
                if callee != g && (name == model.host_fns[callee].name || name.ends_with(".apply")) {
                    out.entry(callee).or_insert((g, c));
                }
            }
        }
    }
    out
}

/// Kernel name -> launches-per-forward estimate, for kernels a Python time loop launches per step.
pub(crate) fn launch_estimates(model: &FileModel, stubs: &StubReads) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for tl in model.time_loop_launches(stubs) {
        for (li, _) in &tl.launches {
            out.entry(model.launches[*li].kernel.clone()).or_insert_with(|| tl.estimate.clone());
        }
    }
    out
}
