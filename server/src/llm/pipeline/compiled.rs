//! The user's Triton on an LLM answer before anything runs it: each kernel is
//! compiled for the target GPU by the compile worker (in the sandbox; the
//! answer's module is never imported). A compile error the compiler is sure
//! of (not one that may come from an assumed type) refuses the answer with
//! the compiler's own message, which goes back in the repair prompt: Triton's
//! CPU interpreter, which benchmarks on a machine without a GPU, runs kernels
//! as Python and accepts what the compiler rejects (`break`, for one).

use std::path::Path;
use std::sync::Arc;

use crate::compile::{self, Compiler};
use crate::config::Settings;

use tokio::sync::mpsc::UnboundedSender;

use super::{extract, prompts, CandidateStatus, Ctx, Problem, StageEvent};
use std::time::Instant;

/// What compiling a file found: its sure compile errors, each with its place
/// and source line, ready for a prompt; empty when every kernel compiled.
#[derive(Debug, Default)]
pub(super) struct Verdict {
    pub errors: Vec<String>,
    /// Kernel configurations compiled.
    pub configurations: usize,
}

/// The compiler for `python`, prepared once per pipeline (its sandbox).
pub(super) async fn prepare(python: &str, settings: &Settings) -> Result<Arc<Compiler>, String> {
    if !settings.compile.enabled {
        return Err("compile.enabled is off".into());
    }
    let (p, s) = (python.to_string(), settings.clone());
    tokio::task::spawn_blocking(move || Compiler::new(&p, &s, 1).map(Arc::new))
        .await
        .unwrap_or_else(|e| Err(format!("the compile worker could not be prepared: {e}")))
}

/// Compiles every kernel of `text` (as the file `path`).
pub(super) async fn check(
    compiler: &Arc<Compiler>,
    path: &Path,
    text: &str,
    settings: &Settings,
) -> Result<Verdict, String> {
    let tree = crate::model::parse_forest(text);
    let jobs = compile::jobs(path, text, &tree, settings);
    let configurations = jobs.len();
    let outcomes = compiler.run(jobs).await?;
    let index = crate::text::LineIndex::new(text);
    let errors = compile::sure_errors(text, &outcomes)
        .iter()
        .map(|d| {
            let line = index.line_of(d.range.start) + 1;
            let source =
                extract::source_line(text, line as u32).map(|s| format!("\n    {}", s.trim_end())).unwrap_or_default();
            format!("compile error at line {line}:{source}\n{}", readable(&d.message))
        })
        .collect();
    Ok(Verdict { errors, configurations })
}

/// `AttributeError("module 'x' has no attribute 'y'") (Triton ...)` reads as Python prints it:
/// `AttributeError: module 'x' has no attribute 'y' (Triton ...)`.
fn readable(message: &str) -> String {
    let Some(open) = message.find("(\"").or_else(|| message.find("('")) else { return message.to_string() };
    let (kind, rest) = message.split_at(open);
    if kind.is_empty() || !kind.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || !kind.ends_with("Error") {
        return message.to_string();
    }
    let quote = &rest[1..2];
    let Some(close) = rest.find(&format!("{quote})")) else { return message.to_string() };
    format!("{kind}: {}{}", &rest[2..close], &rest[close + 2..])
}

/// The answer's kernels compiled by the user's Triton before it runs: a sure
/// compile error is a problem to repair; a compiler that cannot run is said
/// in the timeline and the benchmark goes on.
pub(super) async fn compile_stage(
    ctx: &Ctx,
    index: u32,
    attempt: u32,
    text: &str,
    tx: &UnboundedSender<StageEvent>,
) -> Option<Problem> {
    let start = Instant::now();
    let verdict = ctx.compile_verdict(text).await;
    let ms = start.elapsed().as_millis() as u64;
    let (score, problem) = match &verdict {
        Ok(v) if !v.errors.is_empty() => ("rejected", v.errors[0].lines().last().unwrap_or_default().to_string()),
        Ok(v) => ("pass", format!("{} kernel configurations compiled", v.configurations)),
        Err(why) => ("skipped", why.clone()),
    };
    let _ = tx.send(StageEvent {
        finished: true,
        record: ctx.record("compile", Some(index), Some(attempt), score.into(), ms, &problem, None),
    });
    let v = verdict.ok().filter(|v| !v.errors.is_empty())?;
    Some(Problem {
        stage: "Triton's compiler rejects it",
        template: prompts::REPAIR_COMPILE,
        summary: problem,
        detail: v.errors.join("\n\n"),
        status: CandidateStatus::Failed,
    })
}

impl Ctx {
    /// The user's Triton on `text` as this file (see `compiled`).
    pub(super) async fn compile_verdict(&self, text: &str) -> Result<Verdict, String> {
        let compiler = self.compiler.get_or_init(|| prepare(&self.compile_python, &self.req.settings)).await.clone()?;
        check(&compiler, &self.file, text, &self.req.settings).await
    }
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn an_exception_repr_reads_as_python_prints_it() {
        assert_eq!(
            readable("AttributeError(\"module 'triton.language' has no attribute 'tanh'\") (Triton 3.9.0, sm_90)"),
            "AttributeError: module 'triton.language' has no attribute 'tanh' (Triton 3.9.0, sm_90)"
        );
        assert_eq!(readable("ValueError('bad (thing)')"), "ValueError: bad (thing)");
        assert_eq!(
            readable("input and other must have equal reduction dimensions"),
            "input and other must have equal reduction dimensions"
        );
        assert_eq!(readable("f(\"x\")"), "f(\"x\")");
    }
}
