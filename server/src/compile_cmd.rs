//! `kernel-lsp check --compile`: every kernel of every checked file compiled
//! by the user's Triton (`compile::Compiler`), one worker per core, the
//! results merged into each file's diagnostics and reported per kernel.

use std::io::Write;
use std::sync::Arc;

use kernel_lsp::compile::{self, Compiler, Job};
use kernel_lsp::model;
use kernel_lsp::text::LineIndex;
use serde_json::{json, Value};

use crate::check_cmd::{position, settings_for, CheckArgs, FileReport};

/// What the run compiled with.
pub struct Summary {
    pub triton: String,
    pub target: compile::Target,
    pub python: String,
    pub jobs: usize,
    pub cached: usize,
    /// Configurations left out by `compile.max-configs`.
    pub omitted: usize,
}

/// Compiles the kernels of `reports`, adds the diagnostics to each and keeps
/// the resources; an error says why nothing could be compiled.
pub fn compile_reports(reports: &mut [FileReport], args: &CheckArgs) -> Result<Summary, String> {
    let first = reports.first().ok_or("no file to compile")?;
    let settings = settings_for(&first.path, args)?;
    let python = compile::resolve_python(&first.path, &settings);
    let mut jobs: Vec<(usize, Job)> = Vec::new();
    let mut kernel_ranges = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        let settings = settings_for(&r.path, args)?;
        let tree = model::parse_forest(&r.text);
        let path = std::path::absolute(&r.path).unwrap_or_else(|_| r.path.clone());
        jobs.extend(compile::jobs(&path, &r.text, &tree, &settings).into_iter().map(|j| (i, j)));
        kernel_ranges.push(compile::kernel_ranges(&r.text, &tree));
    }
    // Files tree-sitter could not parse: CPython's parser has the last word on KL900.
    let unparsed: Vec<(usize, String)> = reports
        .iter()
        .enumerate()
        .filter(|(_, r)| r.result.diagnostics.iter().any(|d| d.code == model::syntax::CODE))
        .map(|(i, r)| (i, r.text.clone()))
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let workers = cores.min(jobs.len()).max(1);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let (owners, jobs): (Vec<usize>, Vec<Job>) = jobs.into_iter().unzip();
    let n = jobs.len();
    let omitted = jobs.iter().map(|j| j.omitted).sum();
    let (hello, target, outcomes, parses) = runtime.block_on(async {
        let compiler = Arc::new(Compiler::new(&python, &settings, workers)?);
        let hello = compiler.hello().await?;
        let target = compiler.target(&hello);
        let outcomes = compiler.run(jobs).await?;
        let mut parses = Vec::new();
        for (i, text) in &unparsed {
            if compiler.python_parses(text).await == Ok(true) {
                parses.push(*i);
            }
        }
        Ok::<_, String>((hello, target, outcomes, parses))
    })?;
    let cached = outcomes.iter().filter(|o| o.cached).count();
    for (i, r) in reports.iter_mut().enumerate() {
        let mine: Vec<compile::Outcome> =
            outcomes.iter().zip(&owners).filter(|(_, &o)| o == i).map(|(o, _)| o.clone()).collect();
        let mut settled = compile::settled(&mine, &kernel_ranges[i]);
        settled.python_parses = parses.contains(&i);
        let (diagnostics, resources) = compile::report(&r.text, &mine);
        settled.errors = diagnostics.iter().filter(|d| d.code == "KL901").map(|d| d.range).collect();
        let text = &r.text;
        r.result.diagnostics = r.result.diagnostics.iter().filter_map(|d| settled.settle(text, d)).collect();
        r.result.diagnostics.extend(diagnostics);
        r.result.diagnostics.sort();
        r.resources = resources;
    }
    Ok(Summary { triton: hello.triton, target, python, jobs: n, cached, omitted })
}

pub fn print_text(out: &mut impl Write, reports: &[FileReport], s: &Summary) -> std::io::Result<()> {
    writeln!(
        out,
        "Compiled {} kernel {} with Triton {} for {} ({}){}{}.",
        s.jobs,
        if s.jobs == 1 { "configuration" } else { "configurations" },
        s.triton,
        s.target.name(),
        s.target.from,
        if s.cached > 0 { format!(", {} from the cache", s.cached) } else { String::new() },
        if s.omitted > 0 { format!(", {} more left out by compile.max-configs", s.omitted) } else { String::new() },
    )?;
    for r in reports {
        let index = LineIndex::new(&r.text);
        for res in &r.resources {
            let (line, col) = position(&r.text, &index, res.name_range.start);
            writeln!(out, "  {}:{line}:{col}: `{}` ({}): {}", r.path.display(), res.kernel, res.config, res.summary())?;
        }
    }
    Ok(())
}

pub fn json(reports: &[FileReport], compiled: &Result<Summary, String>) -> Value {
    let s = match compiled {
        Ok(s) => s,
        Err(why) => return json!({"error": why}),
    };
    let mut kernels = Vec::new();
    for r in reports {
        let index = LineIndex::new(&r.text);
        for res in &r.resources {
            let (line, column) = position(&r.text, &index, res.name_range.start);
            let mut v = serde_json::to_value(res).unwrap_or(Value::Null);
            v["file"] = json!(r.path.display().to_string());
            v["line"] = json!(line);
            v["column"] = json!(column);
            kernels.push(v);
        }
    }
    json!({
        "error": null,
        "triton": s.triton,
        "target": s.target.name(),
        "target_from": s.target.from,
        "python": s.python,
        "configurations": s.jobs,
        "cached": s.cached,
        "omitted": s.omitted,
        "kernels": kernels,
    })
}
