//! Host loops: whether a Python loop walks time steps (its bound comes from
//! a tensor's shape, or its variable indexes a tensor) rather than layers or
//! a fixed count, and a short name for what it counts.

use std::collections::HashSet;

use tree_sitter::Node;

use super::dataflow::collect_identifiers;
use super::nodes::any_node;
use super::{FileModel, LoopKind};
use crate::model::NodeKind;

impl<'a> FileModel<'a> {
    /// Whether a host loop walks time steps (a sequence dimension) rather than
    /// layers or a fixed count: its bound comes from a tensor's shape, or its
    /// variable indexes a tensor that is not a module attribute. A loop over
    /// `self.*` (layers, parameters) is not a time loop unless the attribute's
    /// name counts time steps (`self.seq_len`, `self.num_steps`).
    pub(crate) fn is_time_loop(&self, f: usize, l: usize) -> bool {
        let func = &self.host_fns[f];
        let lp = &func.loops[l];
        let bound = match lp.kind {
            LoopKind::For => lp.stop.or(lp.head),
            LoopKind::While => lp.stop,
        };
        if let Some(b) = bound {
            if self.rooted_in_self(f, b, 0) {
                // `range(self.seq_len)`, `range(self.num_steps)`: a configured number of time steps.
                return counts_steps(self.text(b).trim());
            }
            if self.shape_derived(f, b) {
                return true;
            }
            // Iterating a tensor directly: `for x_t in x` / `x.unbind(0)`.
            if lp.kind == LoopKind::For && lp.start.is_none() && lp.stop.is_none() {
                let t = self.text(b);
                let views = [".unbind(", ".split(", ".chunk(", ".transpose(", ".permute(", ".flip(", ".movedim("];
                if views.iter().any(|v| t.contains(v)) {
                    return true;
                }
            }
        }
        match &lp.var {
            Some(var) => self.var_indexes_tensor(lp.body, var),
            None => false,
        }
    }

    fn rooted_in_self(&self, f: usize, node: Node, depth: usize) -> bool {
        if depth > 8 {
            return false;
        }
        let t = self.text(node).trim();
        if t.starts_with("self.")
            || t.starts_with("len(self.")
            || t.starts_with("enumerate(self.")
            || t.starts_with("zip(self.")
            || counts_layers(t)
        {
            return true;
        }
        if node.kind_name() == "identifier" {
            if let Some(a) = self.host_fns[f].assigns.iter().find(|a| a.target == t) {
                return self.rooted_in_self(f, a.value, depth + 1);
            }
        }
        false
    }

    /// Whether a host expression comes from a tensor's shape, following the
    /// function's assignments. Each name is looked at once (a worklist with a
    /// seen set), so the work is linear in the assignments however they chain:
    /// `a, b, c = [f(v) for v in (a, b, c)]` once made this exponential.
    fn shape_derived(&self, f: usize, node: Node) -> bool {
        let mut seen: HashSet<String> = HashSet::new();
        let mut seen_values: HashSet<usize> = HashSet::new();
        let mut work = vec![node];
        while let Some(n) = work.pop() {
            if !seen_values.insert(n.id()) {
                continue;
            }
            self.step(1);
            let t = self.text(n);
            if t.contains(".size(") || t.contains(".shape") || t.contains("len(") && !t.contains("len(self.") {
                return true;
            }
            let mut idents = Vec::new();
            collect_identifiers(n, self.src, &mut idents);
            for id in idents {
                if !seen.insert(id.clone()) {
                    continue;
                }
                work.extend(self.host_fns[f].assigns.iter().filter(|a| a.target == id).map(|a| a.value));
            }
        }
        false
    }

    fn var_indexes_tensor(&self, body: Node, var: &str) -> bool {
        any_node(body, |n| {
            if n.kind_name() != "subscript" {
                return false;
            }
            let (Some(value), Some(index)) = (field!(n, "value"), field!(n, "subscript")) else {
                return false;
            };
            if self.text(value).starts_with("self.") {
                return false;
            }
            let mut ids = Vec::new();
            collect_identifiers(index, self.src, &mut ids);
            ids.iter().any(|i| i == var)
        })
    }

    /// A short name for what a host loop counts: `seq_len`, `num_layers`, `x.size(0)`.
    pub(crate) fn loop_bound_text(&self, f: usize, l: usize) -> String {
        let lp = &self.host_fns[f].loops[l];
        let node = if lp.reversed && lp.step.is_some() { lp.start } else { lp.stop }.or(lp.head);
        let Some(mut node) = node else { return "?".to_string() };
        // `enumerate(xs)` / `zip(xs, ...)` count as many steps as `xs`.
        if node.kind_name() == "call" {
            let func = field!(node, "function").map(|f| self.text(f)).unwrap_or("");
            if matches!(func, "enumerate" | "zip") {
                if let Some(first) = field!(node, "arguments").and_then(|a| a.named_child(0)) {
                    node = first;
                }
            }
        }
        if matches!(node.kind_name(), "tuple" | "list") {
            return node.named_child_count().to_string();
        }
        let mut t = self.text(node).trim().to_string();
        // `seq_len - 1` in a reversed range counts seq_len steps.
        if lp.reversed {
            if let Some(stripped) = t.strip_suffix("- 1").or_else(|| t.strip_suffix("-1")) {
                t = stripped.trim().to_string();
            }
        }
        for prefix in ["self.", "len(self."] {
            if let Some(s) = t.strip_prefix(prefix) {
                t = s.trim_end_matches(')').to_string();
            }
        }
        // `range(0, T, 512)` takes T/512 steps, not T.
        if let (false, Some(step)) = (lp.reversed, lp.step) {
            let step = self.text(step).trim();
            if step != "1" {
                let wrapped = if t.contains(|c: char| " +-*/".contains(c)) { format!("({t})") } else { t };
                return format!("{wrapped}/{step}");
            }
        }
        t
    }
}

/// `self.seq_len`, `self.num_steps`, `self.T`: a plain attribute of the module
/// whose name says it counts time steps (a layer count or an iteration
/// budget does not).
fn counts_steps(t: &str) -> bool {
    let Some(attr) = t.strip_prefix("self.") else { return false };
    if !attr.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return false;
    }
    let attr = attr.to_ascii_lowercase();
    let words: Vec<&str> = attr.split('_').filter(|w| !w.is_empty()).collect();
    words
        .iter()
        .any(|w| matches!(*w, "seq" | "seqlen" | "step" | "steps" | "timesteps" | "time" | "horizon" | "t" | "tsteps"))
        || (words.contains(&"len") && !words.iter().any(|w| w.contains("hidden") || w.contains("feat")))
}

/// `rnn.num_layers`, `gru.num_directions`: a plain attribute that counts the
/// layers or directions of a module passed in, a configuration value like
/// `self.num_layers`, never a number of time steps.
fn counts_layers(t: &str) -> bool {
    let Some((base, attr)) = t.rsplit_once('.') else { return false };
    let plain = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let attr = attr.to_ascii_lowercase();
    plain(base) && plain(&attr) && (attr.contains("layer") || attr.contains("direction"))
}
