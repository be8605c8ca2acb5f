//! What a host loop's steps pass to each other, beyond the names its
//! launches write and read (`launches::carries_state`): memory that cannot
//! carry state from one step to the next (a slice of its own per step, a
//! scratch buffer), and the evidence that the loop walks time steps of a
//! sequence through a small step kernel (KL001's mistake) rather than
//! panels of a factorization or chunks of a long axis.

use std::collections::HashSet;

use tree_sitter::Node;

use super::nodes::any_node;
use super::FileModel;
use crate::model::NodeKind;

/// Calls that allocate a new tensor.
const ALLOCATIONS: &[&str] = &[
    "torch.empty",
    "torch.zeros",
    "torch.ones",
    "torch.full",
    "torch.empty_like",
    "torch.zeros_like",
    "torch.ones_like",
    "torch.full_like",
    "torch.empty_strided",
    ".new_empty",
    ".new_zeros",
    ".new_ones",
    ".new_full",
];

impl<'a> FileModel<'a> {
    /// Names whose memory cannot carry state from one step of loop `l` of
    /// host function `f` to the next:
    /// - a tensor used in the loop only as `t[i]`, `i` the loop's variable:
    ///   each step reads and writes a slice of its own (one launch per sample);
    /// - a scratch buffer: allocated in the function before the loop and never
    ///   mentioned after it, so what a step leaves there is never the result
    ///   (a workspace reused per chunk; the state of a recurrence is what the
    ///   loop computes, and outlives it).
    pub(crate) fn step_local_memory(&self, f: usize, l: usize) -> HashSet<String> {
        let func = &self.host_fns[f];
        let lp = &func.loops[l];
        let mut out = HashSet::new();
        if let Some(var) = &lp.var {
            // The step's own counter is a number, never memory.
            out.insert(var.clone());
            let mut uses: Vec<(String, bool)> = Vec::new();
            super::visit_nodes(lp.body, &mut |n| {
                if n.kind_name() != "identifier" {
                    return;
                }
                let own_slice = n.parent().is_some_and(|p| {
                    (p.kind_name() == "subscript"
                        && field!(p, "value") == Some(n)
                        && field!(p, "subscript").is_some_and(|i| self.text(i).trim() == var)
                        && p.named_child_count() == 2)
                        // a test of the list itself (`xs[i] if xs else y`, `len(xs)`) reads no memory
                        || matches!(p.kind_name(), "not_operator" | "boolean_operator")
                        || (p.kind_name() == "conditional_expression" && p.named_child(1) == Some(n))
                        || (p.kind_name() == "argument_list"
                            && p.parent().and_then(|c| field!(c, "function")).is_some_and(|f| self.text(f) == "len"))
                });
                uses.push((self.text(n).to_string(), own_slice));
            });
            for (name, _) in uses.iter().filter(|(_, own)| *own) {
                if uses.iter().filter(|(n, _)| n == name).all(|(_, own)| *own) {
                    out.insert(name.clone());
                }
            }
        }
        let after = lp.node.end_byte();
        let rest = self.src.get(after..func.node.end_byte()).unwrap_or("");
        for a in func.assigns.iter().filter(|a| !a.loops.contains(&l) && a.node.end_byte() <= lp.node.start_byte()) {
            if func.params.contains(&a.target) || out.contains(&a.target) {
                continue;
            }
            let allocates = |t: &str| ALLOCATIONS.iter().any(|c| t.starts_with(c) || t.contains(&format!("{c}(")));
            let all_allocations = func
                .assigns
                .iter()
                .filter(|b| b.target == a.target && !b.loops.contains(&l))
                .all(|b| allocates(self.text(b.value).trim()));
            if all_allocations && !read_in(rest, &a.target) {
                out.insert(a.target.clone());
            }
        }
        out
    }

    /// A whole-tensor operation (`torch.sort(keys)`) that a step of loop `l`
    /// runs between its launches, directly or in a helper of the file it
    /// calls: the text of the call, for the message.
    pub(crate) fn whole_tensor_step(&self, f: usize, l: usize) -> Option<String> {
        let func = &self.host_fns[f];
        let find = |body: Node| -> Option<String> {
            let mut hit = None;
            any_node(body, |n| {
                if n.kind_name() != "call" {
                    return false;
                }
                let Some(attr) =
                    field!(n, "function").filter(|f| f.kind_name() == "attribute").and_then(|f| field!(f, "attribute"))
                else {
                    return false;
                };
                if WHOLE_TENSOR_OPS.contains(&self.text(attr)) {
                    hit = Some(self.text(n).lines().next().unwrap_or("").trim().to_string());
                    return true;
                }
                false
            });
            hit
        };
        if let Some(h) = find(func.loops[l].body) {
            return Some(h);
        }
        for call in func.calls.iter().filter(|c| c.loops.contains(&l)) {
            for callee in self.callees(f, call) {
                if let Some(h) = field!(self.host_fns[callee].node, "body").and_then(find) {
                    return Some(h);
                }
            }
        }
        None
    }

    /// What shows that loop `l` of host function `f` steps through time with
    /// a small step kernel, in words for the message, or `None`:
    /// - each step reads an element of a sequence: the loop's variable
    ///   indexes a tensor it reads (`x[t]`, `states[t - 1]`; a slice
    ///   `x[lo:hi]` or a chunk `w[i // C]` is not a step), or the loop walks a tensor's axis
    ///   (`enumerate(x.transpose(0, 1))`);
    /// - its bound names time steps (`self.seq_len`, `num_steps`);
    /// - a launch in it has a fixed grid of a few programs (`(1,)`).
    pub(crate) fn time_step_evidence(&self, f: usize, l: usize, launches: &[usize]) -> Option<String> {
        let func = &self.host_fns[f];
        let lp = &func.loops[l];
        if let Some(var) = &lp.var {
            let mut found: Option<Node> = None;
            any_node(lp.body, |n| {
                if n.kind_name() != "subscript" || found.is_some() {
                    return false;
                }
                let Some(value) = field!(n, "value") else { return false };
                if self.text(value).starts_with("self.") || value.kind_name() != "identifier" {
                    return false;
                }
                // Read, not written: `ws[i].copy_(...)` and `out[t] = ...` are outputs.
                let written = n.parent().is_some_and(|p| {
                    (p.kind_name() == "attribute" && field!(p, "object") == Some(n))
                        || (matches!(p.kind_name(), "assignment" | "augmented_assignment")
                            && field!(p, "left") == Some(n))
                });
                let mut c = n.walk();
                let element =
                    !written && n.children_by_field_name("subscript", &mut c).any(|i| step_index(self, i, var));
                if element {
                    found = Some(n);
                }
                element
            });
            if let Some(n) = found {
                return Some(format!("each step reads `{}`", self.text(n).trim()));
            }
        }
        if let Some(head) = lp.head {
            let t = self.text(head);
            let views = [".unbind(", ".transpose(", ".permute(", ".movedim(", ".flip("];
            if views.iter().any(|v| t.contains(v)) {
                return Some(format!("the loop walks `{}`", t.trim()));
            }
        }
        let bound = self.loop_bound_text(f, l);
        if names_steps(&bound) {
            return Some(format!("the loop counts `{bound}` steps"));
        }
        for &li in launches {
            let launch = &self.launches[li];
            if fixed_small_grid(self, f, launch.grid) {
                return Some(format!(
                    "`{}` runs on a fixed grid of `{}` per step",
                    launch.kernel,
                    self.text(launch.grid).trim()
                ));
            }
        }
        None
    }
}

/// Whether `text` (the code after a loop) reads `name` before it binds it
/// anew (`name = ...` first: a new buffer, another branch's).
fn read_in(text: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = text[from..].find(name).map(|i| from + i) {
        let end = i + name.len();
        let whole = !text[..i].ends_with(word) && !text[end..].starts_with(word);
        if whole {
            let after = text[end..].trim_start_matches([' ', '\t']);
            return !(after.starts_with('=') && !after.starts_with("=="));
        }
        from = end;
    }
    false
}

/// Host operations that need all of a tensor at once: a sort, a scan, a
/// global selection. A loop step that runs one between its launches needs
/// every block of the launch before it, a barrier across the whole grid.
const WHOLE_TENSOR_OPS: &[&str] =
    &["sort", "argsort", "topk", "unique", "unique_consecutive", "searchsorted", "nonzero", "cumsum", "kthvalue"];

/// An index that picks the element of one time step: the loop's variable,
/// or it plus or minus a literal (`t`, `t - 1`); a chunk's (`i // C`) or an
/// offset's (`base + i`) is not one.
fn step_index(model: &FileModel, i: Node, var: &str) -> bool {
    match i.kind_name() {
        "identifier" => model.text(i) == var,
        "binary_operator" => {
            let op = field!(i, "operator").map(|o| model.text(o)).unwrap_or("");
            matches!(op, "+" | "-")
                && field!(i, "left").is_some_and(|l| l.kind_name() == "identifier" && model.text(l) == var)
                && field!(i, "right").is_some_and(|r| r.kind_name() == "integer")
        }
        "parenthesized_expression" => i.named_child(0).is_some_and(|c| step_index(model, c, var)),
        _ => false,
    }
}

/// A loop bound whose name counts time steps: `seq_len`, `T`, `num_steps`,
/// `timesteps` (a layer count, a chunk count or a matrix size does not).
fn names_steps(bound: &str) -> bool {
    let b = bound.trim().to_ascii_lowercase();
    if !b.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return false;
    }
    let words: Vec<&str> = b.split('_').filter(|w| !w.is_empty()).collect();
    b == "t"
        || words
            .iter()
            .any(|w| matches!(*w, "seq" | "seqlen" | "steps" | "timesteps" | "time" | "horizon" | "tsteps" | "step"))
        || (words.contains(&"len") && words.iter().any(|w| w.starts_with("seq")))
}

/// A grid of integer literals of at most 8 programs: `(1,)`, `(4, 2)`,
/// directly or through a name the function binds to one.
fn fixed_small_grid(model: &FileModel, f: usize, grid: Node) -> bool {
    let mut g = grid;
    if g.kind_name() == "identifier" {
        let name = model.text(g);
        let mut binds = model.host_fns[f].assigns.iter().filter(|a| a.target == name);
        match (binds.next(), binds.next()) {
            (Some(a), None) => g = a.value,
            _ => return false,
        }
    }
    if !matches!(g.kind_name(), "tuple" | "list") || g.named_child_count() == 0 {
        return false;
    }
    let mut c = g.walk();
    let sizes: Option<Vec<i64>> = g.named_children(&mut c).map(|n| model.text(n).trim().parse::<i64>().ok()).collect();
    sizes.is_some_and(|s| s.iter().product::<i64>() <= 8)
}
