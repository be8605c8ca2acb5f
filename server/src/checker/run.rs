//! Running the rules. The checker reaches them only through the registry
//! (`rules::RULES`): a rule's `reach` says when it runs, `per_node` (KL107,
//! KL108) answers for the nodes of one statement. No rule module is named
//! here (`server/tests/layers.rs` fails if one is).

use std::sync::atomic::{AtomicUsize, Ordering};

use tree_sitter::Node;

use crate::config::Settings;
use crate::diagnostic::Diagnostic;
use crate::model::candidate::Imports;
use crate::model::{FileModel, NodeIndex, StubReads};
use crate::rules::{self, Reach};

/// `here` on this thread, and the host rules (with `skip_per_node`, but those that answer per node) with
/// it: with `two_threads`, the helper thread (`crate::fork`) starts on the
/// rules at once and this one joins in when `here` is done, each taking the
/// next rule not yet started; otherwise this thread runs `here`, then the rules.
pub(super) fn host_rules_beside<R>(
    model: &FileModel,
    stubs: &StubReads,
    settings: &Settings,
    two_threads: bool,
    skip_per_node: bool,
    here: impl FnOnce() -> R,
) -> (R, Vec<Diagnostic>) {
    let host: Vec<&rules::Rule> = rules::RULES
        .iter()
        .filter(|r| r.reach == Reach::Host && settings.enabled(r.code) && !(skip_per_node && r.per_node.is_some()))
        .collect();
    let next = AtomicUsize::new(0);
    let scope = rules::Scope::whole(model, settings, stubs);
    if !two_threads || host.is_empty() {
        let result = here();
        return (result, run_shared(&scope, &host, &next));
    }
    // The helper thread starts on the rules at once; this one joins in when
    // `here` is done, each taking the next rule not yet started.
    let ((result, mut out), theirs) = crate::fork::join(
        || {
            let result = here();
            (result, run_shared(&scope, &host, &next))
        },
        || run_shared(&scope, &host, &next),
    );
    out.extend(theirs);
    (result, out)
}

/// Runs the rules of `list` that no other thread has taken (`next` counts
/// those taken), one at a time: threads sharing `next` split the rules as
/// they finish them, whatever each costs, and run each once.
pub(super) fn run_shared(scope: &rules::Scope, list: &[&rules::Rule], next: &AtomicUsize) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    while let Some(rule) = list.get(next.fetch_add(1, Ordering::Relaxed)) {
        (rule.check)(scope, &mut out);
    }
    out
}

/// The findings in one statement of the rules that answer per node
/// (`Rule::per_node`: KL107, KL108), enabled or not: each depends on its
/// node and the file's imports alone. Its nodes are read off `index` (the
/// model's, which walked the statement) or, without one, off an index of the
/// statement alone.
pub(super) fn node_local_findings(
    src: &str,
    imports: &Imports,
    unit: Node,
    index: Option<&NodeIndex>,
) -> Vec<Diagnostic> {
    let own;
    let index = match index {
        Some(index) => index,
        None => {
            own = NodeIndex::build(unit, src);
            &own
        }
    };
    let nodes = index.statement_nodes(unit);
    rules::RULES.iter().filter_map(|r| r.per_node).flat_map(|per_node| per_node(src, imports, &nodes)).collect()
}

/// Whether the rule that reported `code` answers per node (`Rule::per_node`).
pub(super) fn is_node_local(code: &str) -> bool {
    rules::by_code(code).is_some_and(|r| r.per_node.is_some())
}

/// Whether a host rule reported `d`.
pub(super) fn is_host_diag(d: &Diagnostic) -> bool {
    rules::by_code(&d.code).is_some_and(|r| r.reach == Reach::Host)
}
