//! What one top-level statement contributes, read off a model that walked
//! it ([`facts`]): its kernels (the kernel rules run one kernel at a time, so
//! each diagnostic belongs to its kernel), KL005's findings, whether it
//! holds host code, what it launches, its classes and directives; on the host
//! path also how its host code links to other statements (`host_links`) and
//! what a host stub of it keeps (`host_stub_of`).

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use tree_sitter::Node;

use super::matching::*;
use super::snapshot::*;
use super::ClassSummary;
use crate::config::Settings;
use crate::diagnostic::Diagnostic;
use crate::model::candidate;
use crate::model::field;
use crate::model::NodeKind;
use crate::model::{kernel_host_view, range_of, FileModel, HostStub, StubReads};
use crate::rules::{self, Reach};
use crate::text::TextRange;

/// The statements `selected` (indexes into `nodes`, ascending; `ranges`
/// are theirs) as `model` (which walked at least them) sees them, without
/// host-rule diagnostics; and KL005 diagnostics that fall in no statement. With `link`, also how
/// their host code links to other statements and what a host stub of each
/// keeps (`Snapshot::linked`). `kept` gives, for a statement the edit left as
/// it was, its facts in the previous snapshot: what depends on its text alone
/// (its module reads, import bindings, error shape) is taken from there, not
/// walked again (a 220-line class the host path reads because it calls the
/// edited launcher).
pub(super) fn facts<'p>(
    model: &FileModel,
    stubs: &StubReads,
    (nodes, ranges): (&[Node], &[TextRange]),
    selected: &[usize],
    settings: &Settings,
    link: bool,
    kept: impl Fn(usize) -> Option<&'p UnitFacts>,
) -> (Vec<Fresh>, Vec<Diagnostic>) {
    let mut slot: HashMap<usize, usize> = HashMap::with_capacity_and_hasher(selected.len(), Default::default());
    let mut units: Vec<Fresh> = selected
        .iter()
        .enumerate()
        .map(|(s, &i)| {
            slot.insert(i, s);
            (unread(model, nodes[i], kept(i)), Vec::new())
        })
        .collect();
    let slots = Slots { ranges, slot };
    kernel_facts(model, stubs, settings, selected, &slots, link, &mut units);
    let loose = attribute_findings(model, stubs, settings, &slots, &mut units);
    host_facts(model, nodes, selected, &slots, &mut units);
    if link {
        host_links(model, stubs, &mut units, &|pos| slots.unit(pos));
        let candidate = candidate::is_candidate(model);
        for (s, &i) in selected.iter().enumerate() {
            if let Some(stub) = host_stub_of(model, nodes[i], &units[s].0, candidate) {
                units[s].0.links.get_or_insert_with(Default::default).host_stub = Some(stub);
            }
        }
    }
    (units, loose)
}

/// The statements read, by position: each statement's range (`nodes`), and
/// for those selected, their index among the facts being read.
struct Slots<'r> {
    ranges: &'r [TextRange],
    slot: HashMap<usize, usize>,
}

impl Slots<'_> {
    /// The selected statement that holds byte `pos` (its index in the facts).
    fn unit(&self, pos: usize) -> Option<usize> {
        unit_of(self.ranges, pos).and_then(|i| self.slot.get(&i).copied())
    }
}

/// A statement's facts before its kernels and host code are read: what its
/// text alone gives (from `kept`, its facts last time, where the edit left it as it was).
fn unread(model: &FileModel, node: Node, kept: Option<&UnitFacts>) -> UnitFacts {
    let (has_error, reads, import_binds) = match kept {
        Some(k) => (k.has_error, k.reads.clone(), k.import_binds.clone()),
        None => text_facts(node, model.src),
    };
    UnitFacts {
        kind: node.kind_id(),
        has_error,
        neutral: true,
        kernels: Vec::new(),
        helper_callees: Vec::new(),
        launched: Vec::new(),
        module_assigns: Vec::new(),
        reads,
        import_binds,
        host_loops: 0,
        widths: host_widths(model, node),
        diags: Vec::new(),
        classes: Vec::new(),
        directives: Vec::new(),
        links: None,
    }
}

/// Each kernel's facts, in the statement that defines it, and its kernel
/// rules' findings, run one kernel at a time so that each diagnostic belongs
/// to its kernel (those reaching outside the statement are its foreign ones).
fn kernel_facts(
    model: &FileModel,
    stubs: &StubReads,
    settings: &Settings,
    selected: &[usize],
    slots: &Slots,
    link: bool,
    units: &mut [Fresh],
) {
    let mut produced = Vec::new();
    for k in &model.kernels {
        let Some(u) = slots.unit(k.node.start_byte()) else { continue };
        let (facts, foreign) = &mut units[u];
        facts.kernels.push(KernelFacts {
            name: k.name.clone(),
            header_range: k.header_range,
            has_time_loop: !k.time_loops(model).is_empty(),
            persistent_shape: k.time_loops(model).iter().any(|&t| k.is_recurrence(t, model)),
            grid_stride: (0..k.loops.len()).any(|l| k.is_grid_stride(l, model.src)),
            host_view: Arc::new(kernel_host_view(model, k, link)),
            reads_widths: crate::model::smem::reads_host_widths(k, model),
        });
        for c in k.calls.iter().filter(|c| c.tl_name.is_none()) {
            if !facts.helper_callees.contains(&c.callee) {
                facts.helper_callees.push(c.callee.clone());
            }
        }
        let scope = rules::Scope { kernels: std::slice::from_ref(k), ..rules::Scope::whole(model, settings, stubs) };
        rules::run_reach(&scope, Reach::Kernel, &mut produced);
        let here = slots.ranges[selected[u]];
        for d in produced.drain(..) {
            if positions(&d).all(|r| here.start <= r.start && r.end <= here.end) {
                facts.diags.push(d);
            } else {
                foreign.push(d);
            }
        }
    }
}

/// KL005's findings, each on the attribute itself, inside its statement;
/// returns those that fall in no statement.
fn attribute_findings(
    model: &FileModel,
    stubs: &StubReads,
    settings: &Settings,
    slots: &Slots,
    units: &mut [Fresh],
) -> Vec<Diagnostic> {
    let mut loose = Vec::new();
    let mut attr_diags = Vec::new();
    rules::run_reach(&rules::Scope::whole(model, settings, stubs), Reach::TlAttr, &mut attr_diags);
    for d in attr_diags {
        match unit_of(slots.ranges, d.range.start) {
            Some(i) => {
                if let Some(&u) = slots.slot.get(&i) {
                    match home(slots.ranges, &d) {
                        Some(_) => units[u].0.diags.push(d),
                        None => units[u].1.push(d),
                    }
                }
            }
            None => loose.push(d),
        }
    }
    loose
}

/// What the statements' host code holds: which statements hold any (not
/// `neutral`), the module-level names they assign, their host loops, what
/// they launch, their classes and directives.
fn host_facts(model: &FileModel, nodes: &[Node], selected: &[usize], slots: &Slots, units: &mut [Fresh]) {
    let mut host = |pos: usize| {
        if let Some(u) = slots.unit(pos) {
            units[u].0.neutral = false;
        }
    };
    // Imports, wherever they are (also in a statement that does not parse):
    // the kernel rules read the `triton` aliases, the hygiene rules every import.
    for &i in selected {
        if model.src.get(nodes[i].byte_range()).is_some_and(has_import_keyword) {
            host(nodes[i].start_byte());
        }
    }
    for f in &model.host_fns[1..] {
        host(f.node.start_byte());
    }
    for c in &model.classes {
        host(c.node.start_byte());
    }
    let module = &model.host_fns[0];
    for n in module
        .loops
        .iter()
        .map(|l| l.node)
        .chain(module.calls.iter().map(|c| c.node))
        .chain(module.syncs.iter().map(|s| s.node))
        .chain(module.assigns.iter().map(|a| a.node))
    {
        host(n.start_byte());
    }
    for r in &model.launch_candidates {
        host(r.start);
    }
    for a in &module.assigns {
        if let Some(u) = slots.unit(a.node.start_byte()) {
            let names = &mut units[u].0.module_assigns;
            if !names.contains(&a.target) {
                names.push(a.target.clone());
            }
        }
    }
    for l in model.host_fns.iter().flat_map(|f| &f.loops) {
        if let Some(u) = slots.unit(l.node.start_byte()) {
            units[u].0.host_loops += 1;
        }
    }
    for l in &model.launches {
        if let Some(u) = slots.unit(l.node.start_byte()) {
            if !units[u].0.launched.contains(&l.kernel) {
                units[u].0.launched.push(l.kernel.clone());
            }
        }
    }
    for c in &model.classes {
        if let Some(u) = slots.unit(c.node.start_byte()) {
            units[u].0.classes.push(ClassSummary { name: c.name.clone(), range: c.name_range });
        }
    }
    for (pos, d) in &model.directives {
        if let Some(u) = slots.unit(*pos) {
            units[u].0.directives.push((*pos, d.clone()));
        }
    }
}

/// Whether a statement has a syntax error, its module reads (read when first
/// asked, see `UnitFacts::reads`) and import bindings.
type TextFacts = (bool, std::sync::OnceLock<Vec<String>>, Vec<String>);

/// What a statement's facts take from its text alone: whether it has a
/// syntax error, its module reads (left to be read when first asked) and
/// import bindings (the same for the same text: `matching` keeps a statement
/// with a syntax error only if it parsed the same way).
fn text_facts(unit: Node, src: &str) -> TextFacts {
    let import_binds = if src.get(unit.byte_range()).is_some_and(has_import_keyword) {
        crate::model::import_binds(unit, src)
    } else {
        Vec::new()
    };
    (unit.has_error(), std::sync::OnceLock::new(), import_binds)
}

/// [`UnitFacts::widths`]: the element widths named in `unit` outside its kernels.
fn host_widths(model: &FileModel, unit: Node) -> u8 {
    let (start, end) = (unit.start_byte(), unit.end_byte());
    let mut host = String::new();
    let mut at = start;
    for k in model.kernels.iter().filter(|k| start <= k.node.start_byte() && k.node.end_byte() <= end) {
        if k.node.start_byte() >= at {
            host.push_str(model.src.get(at..k.node.start_byte()).unwrap_or(""));
            at = k.node.end_byte();
        }
    }
    host.push_str(model.src.get(at..end).unwrap_or(""));
    crate::model::smem::width_families(&host)
}

/// What a call's callee key (`HCall::callee`) may reach, as a name a
/// statement defines (`UnitFacts::defines`): `helper` and `.method` a
/// function or method of that name, `Class.apply` and `Class()` the class.
pub(super) fn call_token(callee: &str) -> String {
    if let Some(class) = callee.strip_suffix(".apply").or_else(|| callee.strip_suffix("()")) {
        return format!("class:{class}");
    }
    callee.trim_start_matches('.').to_string()
}

/// The host-code links of the statements `model` walked: the names each
/// defines and calls, its launch sites and its time loops' estimates.
pub(super) fn host_links(
    model: &FileModel,
    stubs: &StubReads,
    units: &mut [Fresh],
    unit: &impl Fn(usize) -> Option<usize>,
) {
    let mut links: Vec<HostLinks> = vec![HostLinks::default(); units.len()];
    let push = |list: &mut Vec<String>, token: String| {
        if !list.contains(&token) {
            list.push(token);
        }
    };
    for (f, func) in model.host_fns.iter().enumerate() {
        if f > 0 {
            if let Some(u) = unit(func.node.start_byte()) {
                push(&mut links[u].defines, func.name.clone());
            }
        }
        for call in &func.calls {
            let Some(u) = unit(call.node.start_byte()) else { continue };
            let token = call_token(&call.callee);
            if !call.loops.is_empty() {
                push(&mut links[u].calls_in_loops_to, token.clone());
            }
            push(&mut links[u].calls_to, token);
        }
    }
    for c in &model.classes {
        if let Some(u) = unit(c.node.start_byte()) {
            push(&mut links[u].defines, format!("class:{}", c.name));
        }
    }
    // `name[grid](...)` calls: whether a launch site is a kernel's depends on
    // the kernel names the file defines.
    for r in &model.launch_candidates {
        let Some(u) = unit(r.start) else { continue };
        let name = model.src.get(r.start..r.end).and_then(|t| t.split('[').next()).unwrap_or_default().trim();
        push(&mut links[u].calls_to, name.to_string());
    }
    for l in &model.launches {
        if let Some(u) = unit(l.node.start_byte()) {
            let sites = &mut links[u].launch_sites;
            match sites.iter_mut().find(|(k, _)| *k == l.kernel) {
                Some((_, n)) => *n += 1,
                None => sites.push((l.kernel.clone(), 1)),
            }
        }
    }
    for tl in model.time_loop_launches(stubs) {
        let func = &model.host_fns[tl.host_fn];
        let Some(u) = unit(func.loops[tl.loop_index].node.start_byte()) else { continue };
        let start = (tl.host_fn > 0).then(|| func.node.start_byte());
        for (li, _) in &tl.launches {
            links[u].estimates.push((start, model.launches[*li].kernel.clone(), tl.estimate.clone()));
        }
    }
    for (u, mut l) in links.into_iter().enumerate() {
        let empty = l.defines.is_empty()
            && l.calls_to.is_empty()
            && l.calls_in_loops_to.is_empty()
            && l.launch_sites.is_empty()
            && l.estimates.is_empty();
        if !empty {
            l.defines.shrink_to_fit();
            l.calls_to.shrink_to_fit();
            l.calls_in_loops_to.shrink_to_fit();
            l.launch_sites.shrink_to_fit();
            l.estimates.shrink_to_fit();
            units[u].0.links = Some(Box::new(l));
        }
    }
}

/// The statement `node` as a host stub, if it can be one: a plain top-level
/// `def` of host code (no decorator, no nested definition, no kernel, no
/// class, no import, no syntax error, no module-level name assigned; not
/// `get_inputs` or `get_init_inputs`, which KL106 reads the calls of), with
/// what other functions read of it.
pub(super) fn host_stub_of(model: &FileModel, node: Node, facts: &UnitFacts, candidate: bool) -> Option<Arc<HostStub>> {
    if node.kind_name() != "function_definition"
        || facts.has_error
        || !facts.kernels.is_empty()
        || !facts.classes.is_empty()
        || !facts.module_assigns.is_empty()
        || model.src.get(node.byte_range()).is_none_or(has_import_keyword)
    {
        return None;
    }
    let range = range_of(node);
    // Host functions are in document order (after the module scope): this
    // one, and no other inside it.
    let fns = &model.host_fns[1..];
    let at = fns.partition_point(|h| h.node.start_byte() < range.start);
    let func = fns.get(at).filter(|h| h.node == node)?;
    let nested = fns.get(at + 1).is_some_and(|h| h.node.start_byte() < range.end);
    if nested || matches!(func.name.as_str(), "get_inputs" | "get_init_inputs") {
        return None;
    }
    let start = node.start_byte();
    let rel = |at: usize| u32::try_from(at - start).ok();
    // Only the calls that reach a function of this file: one that reaches
    // none now (`range(...)`) could only reach a definition a later edit
    // adds, and a stub that calls a name a changed statement defines is walked.
    let f = model.host_fns.len() - fns.len() + at;
    let calls = func
        .calls
        .iter()
        .filter(|c| !model.callees(f, c).is_empty())
        .map(|c| Some((rel(c.node.start_byte())?, rel(c.node.end_byte())?, c.callee.clone())))
        .collect::<Option<Vec<_>>>()?;
    // `candidate::reachable` reads the `X.apply` calls of a candidate's functions from the node index.
    let apply_classes = if candidate {
        crate::model::inside(&model.nodes().calls, node)
            .filter_map(|n| field!(n, "function"))
            .filter_map(|callee| model.text(callee).strip_suffix(".apply").map(str::to_string))
            .collect()
    } else {
        Vec::new()
    };
    let candidates = &model.launch_candidates;
    let first = candidates.partition_point(|r| r.start < range.start);
    let params = crate::model::host_param_ranges(node)
        .into_iter()
        .map(|r| Some((rel(r.start)?, rel(r.end)?)))
        .collect::<Option<Vec<_>>>()?;
    if params.len() != func.params.len()
        || model.src.get(func.name_range.start..func.name_range.end) != Some(&func.name)
    {
        return None;
    }
    Some(Arc::new(HostStub {
        name_range: (rel(func.name_range.start)?, rel(func.name_range.end)?),
        params: params.into(),
        calls: calls.into(),
        launches: !func.launches.is_empty(),
        launch_candidates: candidates[first..]
            .iter()
            .take_while(|r| r.start < range.end)
            .any(|r| range.contains_range(*r)),
        apply_classes: apply_classes.into(),
        calls_in_loops_to: facts.links().calls_in_loops_to.clone().into(),
    }))
}

/// What the findings of a host stub read of a candidate besides the
/// functions it reaches: the `torch.nn` modules `ModelNew` holds (KL101),
/// whether the task is half precision (KL106), and whether a method of
/// `ModelNew` stores into `self` (then KL104 reads every function `forward`
/// reaches, and host stubs are not used).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct HostContext {
    pub(super) modules: Vec<(String, String)>,
    pub(super) half: bool,
    pub(super) stores: bool,
}

pub(super) fn host_context(model: &FileModel) -> HostContext {
    if !candidate::is_candidate(model) {
        return HostContext::default();
    }
    let imports = candidate::imports(model);
    HostContext {
        modules: candidate::torch_modules(model, imports, "ModelNew"),
        half: candidate::task_is_half(model, imports),
        stores: !candidate::self_stores(model).is_empty(),
    }
}
