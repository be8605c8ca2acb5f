//! The full check: every statement read, the rules of every reach run. A
//! large file builds the node index beside the model and runs the host rules
//! beside the kernel rules, on two threads.

use std::sync::Arc;

use super::matching::*;
use super::run::*;
use super::snapshot::*;
use super::units::*;
use crate::config::Settings;
use crate::model::candidate;
use crate::model::field;
use crate::model::Forest;
use crate::model::NodeKind;
use crate::model::{launch_estimates, range_of, FileModel, StubReads};
use crate::text::TextRange;

/// Files this large build the node index beside the model (`FileModel::build_with_index`)
/// and run the host rules beside the kernel rules; below it a thread's start costs more than it saves.
pub(super) const PARALLEL_INDEX_BYTES: usize = 32 * 1024;

pub(super) fn full(text: &Arc<str>, tree: &Forest, settings: &Settings) -> Snapshot {
    full_on(text, tree, settings, text.len() >= PARALLEL_INDEX_BYTES)
}

/// [`full`], on two threads or one.
pub(super) fn full_on(text: &Arc<str>, tree: &Forest, settings: &Settings, two_threads: bool) -> Snapshot {
    let nodes = top_level(tree);
    // The hygiene rules ask for the node index in a candidate (`ModelNew` at module level).
    let candidate = nodes.iter().any(|n| {
        n.kind_name() == "class_definition" && field!(n, "name").is_some_and(|m| &text[m.byte_range()] == "ModelNew")
    });
    let model =
        if candidate && two_threads { FileModel::build_with_index(text, tree) } else { FileModel::build(text, tree) };
    let ranges: Vec<TextRange> = nodes.iter().map(|n| range_of(*n)).collect();
    let all: Vec<usize> = (0..nodes.len()).collect();
    // A model without host stubs: no question reads beyond one.
    let stubs = StubReads::default();
    // A large file runs the host rules on a second thread while the kernel
    // rules run here, and this thread then takes the host rules not yet
    // started: they only read the model (each kernel rule's kernels arrive in its `Scope`).
    let ((mut fresh, loose), host) = host_rules_beside(&model, &stubs, settings, two_threads, false, || {
        facts(&model, &stubs, (&nodes, &ranges), &all, settings, true, |_| None)
    });
    let mut host_diags = loose;
    for d in host {
        match home(&ranges, &d) {
            Some(u) => fresh[u].0.diags.push(d),
            None => host_diags.push(d),
        }
    }
    let units = fresh
        .into_iter()
        .zip(&ranges)
        .map(|((facts, foreign), range)| Unit { facts: Arc::new(facts), range: *range, delta: 0, foreign })
        .collect();
    let imports = Arc::new(candidate::imports(&model).clone());
    Snapshot {
        settings: settings.clone(),
        text: text.clone(),
        tree: tree.clone(),
        estimates: Arc::new(launch_estimates(&model, &stubs).into_iter().collect()),
        tl_aliases: model.tl_aliases.clone(),
        triton_aliases: model.triton_aliases.clone(),
        triton_imported: crate::model::triton_imported(&nodes, text),
        units,
        host_diags,
        launch_counts: Arc::new(launch_counts(&model)),
        path: Path::Fresh,
        stubs: 0,
        host_stubs: 0,
        candidate: candidate::is_candidate(&model).then(|| imports.clone()),
        imports,
        context: host_context(&model),
        linked: true,
        walk_again: Vec::new(),
        builds: 0,
    }
}
