//! A KernelBench task's main computation: the ops the reference `Model`
//! computes (its `torch.*` calls and the `torch.nn` modules its `forward`
//! calls), or, without a `Model`, the ops that are a task on their own.
//! Asked by KL102 of a candidate file and by the rewrite gate (`llm::gate`)
//! of the reference file an answer is compared against.

use crate::model::candidate::{self, Imports};
use crate::model::{inside, FileModel};

/// Module types and functional ops that are a task on their own.
const TASK_MODULES: &[&str] = &[
    "gru",
    "lstm",
    "rnn",
    "multiheadattention",
    "transformer",
    "transformerencoder",
    "transformerdecoder",
    "transformerencoderlayer",
    "transformerdecoderlayer",
    "conv1d",
    "conv2d",
    "conv3d",
    "convtranspose1d",
    "convtranspose2d",
    "convtranspose3d",
    "scaled_dot_product_attention",
];

/// Heavy ops besides [`TASK_MODULES`] (all heavy): when the reference uses
/// one, the lighter ops around it (activations, norms) are not the task.
const HEAVY_TOO: &[&str] =
    &["linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "gru_cell", "grucell", "lstmcell", "rnncell"];

fn is_heavy(op: &str) -> bool {
    TASK_MODULES.contains(&op) || HEAVY_TOO.contains(&op)
}

/// The lower-cased name an op is known by: the module type of `self.X(...)`,
/// or the last name of a `torch.*` call (`torch.nn.functional.relu` -> `relu`).
pub(crate) fn op_key(
    call: tree_sitter::Node,
    imports: &Imports,
    modules: &[(String, String)],
    src: &str,
) -> Option<String> {
    let func = field!(call, "function")?;
    if let Some(attr) = candidate::self_attr(func, src) {
        return modules.iter().find(|(a, _)| a == attr).map(|(_, ty)| ty.to_ascii_lowercase());
    }
    let q = imports.qualify(func, src)?;
    if !q.starts_with("torch.") || candidate::is_torch_scaffolding(&q) {
        return None;
    }
    Some(q.rsplit('.').next().unwrap_or_default().to_ascii_lowercase())
}

/// What the task computes: the reference `Model`'s ops, or the ops that are a task on their own.
pub fn ops(model: &FileModel, imports: &Imports) -> Vec<String> {
    let Some(forward) = candidate::method(model, "Model", "forward") else {
        return TASK_MODULES.iter().map(|s| s.to_string()).collect();
    };
    let modules = candidate::torch_modules(model, imports, "Model");
    let mut ops: Vec<String> = Vec::new();
    for n in inside(&model.nodes().calls, model.host_fns[forward].node) {
        if let Some(op) = op_key(n, imports, &modules, model.src) {
            if !ops.contains(&op) {
                ops.push(op);
            }
        }
    }
    if ops.iter().any(|o| is_heavy(o)) {
        ops.retain(|o| is_heavy(o));
    }
    ops
}

/// The task's main ops as the reference `Model` in `reference` (a parsed
/// model of another file, read by the caller) computes them; `None` when that
/// file has no `Model.forward`.
pub(crate) fn of_reference(reference: &FileModel) -> Option<Vec<String>> {
    candidate::method(reference, "Model", "forward")?;
    Some(ops(reference, &candidate::imports(reference)))
}
