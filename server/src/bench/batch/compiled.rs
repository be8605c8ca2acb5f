//! The batch's compile stage, on the CPU cores before any GPU: each runnable
//! candidate's kernels compiled by the user's Triton (the compile worker, in
//! the sandbox, one per core; the candidate is never imported). A compile
//! error the compiler is sure of (not one from an assumed type) is the
//! candidate's verdict, as the GPU would give it, and it never takes a GPU.
//! A syntax error tree-sitter found stands only where CPython's own parser
//! agrees; without a worker, the harness judges it as a single `bench` does.

use std::path::Path;
use std::sync::Arc;

use super::{BenchResult, Job};
use crate::compile::{self, Compiler};
use crate::config::Settings;

/// Splits `runnable` into (verdicts found by compiling, still runnable); the
/// syntax rejections CPython does not confirm go back to the runnable ones.
pub(crate) fn check(
    python: &str,
    settings: &Settings,
    syntax: Vec<(Job, BenchResult)>,
    runnable: Vec<Job>,
) -> (Vec<(Job, BenchResult)>, Vec<Job>, Option<String>) {
    let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => return (Vec::new(), rejoin(syntax, runnable), Some(format!("no runtime: {e}"))),
    };
    let compiler = match Compiler::new(python, settings, cores) {
        Ok(c) => Arc::new(c),
        Err(why) => return (Vec::new(), rejoin(syntax, runnable), Some(why)),
    };
    runtime.block_on(async {
        let mut rejected = Vec::new();
        let mut keep = Vec::new();
        for (job, verdict) in syntax {
            match compiler.python_parses(&job.candidate_text).await {
                Ok(false) => rejected.push((job, verdict)),
                _ => keep.push(job),
            }
        }
        let mut owners = Vec::new();
        let mut compile_jobs = Vec::new();
        for (i, job) in runnable.iter().enumerate() {
            let tree = crate::model::parse_forest(&job.candidate_text);
            for j in compile::jobs(Path::new(&job.candidate), &job.candidate_text, &tree, settings) {
                owners.push(i);
                compile_jobs.push(j);
            }
        }
        let outcomes = match compiler.run(compile_jobs).await {
            Ok(o) => o,
            Err(why) => {
                keep.extend(runnable);
                return (rejected, keep, Some(why));
            }
        };
        let mut verdicts: Vec<Option<BenchResult>> = vec![None; runnable.len()];
        for (i, job) in runnable.iter().enumerate() {
            let mine: Vec<compile::Outcome> =
                outcomes.iter().zip(&owners).filter(|(_, o)| **o == i).map(|(o, _)| o.clone()).collect();
            let Some(d) = compile::sure_errors(&job.candidate_text, &mine).into_iter().next() else {
                continue;
            };
            let index = crate::text::LineIndex::new(&job.candidate_text);
            let (line, col) = index.position(&job.candidate_text, d.range.start, crate::text::ColumnUnit::Char);
            let mut r = BenchResult::failed(
                "compile-error",
                d.message.to_string(),
                Some(Path::new(&job.candidate)),
                Some(line as u32 + 1),
            );
            if let Some(e) = r.error.as_mut() {
                e.column = Some(col as u32 + 1);
            }
            r.mode = if job.cpu { "cpu-interpreter" } else { "gpu" }.to_string();
            r.extra.insert("static_check".into(), "compile".into());
            verdicts[i] = Some(r);
        }
        for (job, verdict) in runnable.into_iter().zip(verdicts) {
            match verdict {
                Some(r) => rejected.push((job, r)),
                None => keep.push(job),
            }
        }
        (rejected, keep, None)
    })
}

fn rejoin(syntax: Vec<(Job, BenchResult)>, mut runnable: Vec<Job>) -> Vec<Job> {
    runnable.extend(syntax.into_iter().map(|(j, _)| j));
    runnable
}
