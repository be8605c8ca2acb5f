//! The first prompt of a rewrite: the action's template, or for a repair the
//! error the baseline benchmark and the compiler found.

use std::path::Path;

use super::{diagnostics_text, prompts, repair_template, Action, Ctx, LlmError};
use crate::bench::BenchResult;

pub(super) fn first_prompt(
    ctx: &Ctx,
    baseline: &BenchResult,
    compile_errors: &[String],
    dir: Option<&Path>,
) -> Result<String, LlmError> {
    let reference_src = match &ctx.reference {
        Some(p) => std::fs::read_to_string(p).unwrap_or_else(|e| format!("# cannot read {}: {e}", p.display())),
        None => "# `class Model` is defined in the file itself (see below)".to_string(),
    };
    let diagnostics = diagnostics_text(&ctx.text, &ctx.req.settings, None);
    let name = ctx.file.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    let template = match ctx.req.action {
        Action::Persistent => prompts::PERSISTENT,
        Action::Grid2d => prompts::GRID_2D,
        Action::BlockSize => prompts::BLOCK_SIZE,
        Action::Repair => {
            let compiled = compile_errors.join("\n\n");
            let (template, stage, error) = match (&baseline.error, compile_errors.is_empty()) {
                (Some(error), true) => (
                    repair_template(&error.kind),
                    format!("the benchmark reports {}", error.kind),
                    ctx.error_text(baseline, &ctx.text),
                ),
                (Some(error), false) => (
                    repair_template(&error.kind),
                    format!("the benchmark reports {}, and Triton's compiler rejects the file", error.kind),
                    format!("{}\n\n{compiled}", ctx.error_text(baseline, &ctx.text)),
                ),
                (None, false) => (prompts::REPAIR_COMPILE, "Triton's compiler rejects the file".to_string(), compiled),
                (None, true) => {
                    return Err(LlmError::Setup(format!(
                        "nothing to repair: {name} compiles, runs and matches its reference ({})",
                        baseline.mode
                    )))
                }
            };
            let head = prompts::render(
                &prompts::load(template, dir)?,
                &[("stage", &stage), ("error", &error), ("gpu", &ctx.gpu), ("smem_limit", &ctx.smem)],
            );
            return Ok(format!(
                "{head}\n\n## What the checker reports\n\n{diagnostics}\n\n## The reference module (`Model`)\n\n```python\n{reference_src}\n```\n\n## The current file (`{name}`)\n\n```python\n{}\n```\n",
                ctx.text
            ));
        }
    };
    let example = match ctx.req.action {
        Action::Persistent => {
            prompts::example_section(prompts::example_for(&format!("{reference_src}\n{}", ctx.text)), dir)?
        }
        _ => String::new(),
    };
    Ok(prompts::render(
        &prompts::load(template, dir)?,
        &[
            ("example", &example),
            ("file_name", &name),
            ("file", &ctx.text),
            ("reference", &reference_src),
            ("diagnostics", &diagnostics),
            ("gpu", &ctx.gpu),
            ("smem_limit", &ctx.smem),
        ],
    ))
}
