//! The shrink for a run that failed with Triton's `OutOfResources` (KL902).
//!
//! Triton says how much shared memory the failing kernel needed and how much
//! the GPU has: `out of resource: shared memory, Required: 262144, Hardware
//! limit: 232448. Reducing block sizes or `num_stages` may help.` The fix is
//! KL006's shrink (`fix::shrink::shrink_to_fit`), with two corrections from the
//! measurement: the hardware limit in the message replaces the configured
//! GPU's, and where the run needed more than the calibrated estimate of the
//! failing configuration, every estimate is scaled up by that ratio (the
//! estimate is never trusted to be looser than the measurement; where it is
//! above it, it is kept as it is).
//!
//! The configuration it edits is the one the run failed on: the launch on the
//! error's line (its literal keywords, or the constexpr defaults it leaves in
//! place), or the `triton.Config` entries of an autotuned kernel. The edited
//! text is re-parsed and re-estimated before the fix is offered.

use tree_sitter::Node;

use crate::config::{Settings, GPUS};
use crate::diagnostic::{apply_edits, Applicability, Edit, Fix};
use crate::fix::shrink::{shrink_applicability, shrink_to_fit};
use crate::model::smem::{self, Config, Dims, Tile};
use crate::model::{self, FileModel};
use crate::text::group;

/// What `OutOfResources` says about shared memory, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmemOverflow {
    pub required: i64,
    pub limit: i64,
}

/// Reads `Required` and `Hardware limit` from Triton's message; `None` for any
/// other message, including an `OutOfResources` about another resource.
pub(crate) fn parse_message(message: &str) -> Option<SmemOverflow> {
    let at = message.find("out of resource: shared memory")?;
    let rest = &message[at..];
    let number_after = |label: &str| -> Option<i64> {
        let from = rest.find(label)? + label.len();
        let digits: String = rest[from..].trim_start().chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse().ok()
    };
    let required = number_after("Required:")?;
    let limit = number_after("Hardware limit:")?;
    (required > limit && limit > 0).then_some(SmemOverflow { required, limit })
}

/// The shrink for the kernel that failed, in `text`: `line` (1-based) is where
/// the error was raised in this file, if it was. `Err` says why there is none.
pub fn fix(text: &str, settings: &Settings, message: &str, line: Option<u32>) -> Result<Fix, String> {
    let overflow =
        parse_message(message).ok_or_else(|| "the message is not Triton's shared-memory OutOfResources".to_string())?;
    let tree = model::parse_forest(text);
    if tree.has_error() {
        return Err("the file does not parse".to_string());
    }
    let model = FileModel::build(text, &tree);
    let target = Target::find(&model, line)?;
    let sm = sm_for(settings, overflow.limit);
    let plan = plan(&target, overflow, sm)?;

    // Verify: the edited text parses, and every configuration that was over is now under.
    let fixed = apply_edits(text, &plan.edits).map_err(|e| format!("the edits do not apply: {e}"))?;
    let tree = model::parse_forest(&fixed);
    if tree.has_error() {
        return Err("the edited file would not parse".to_string());
    }
    let model = FileModel::build(&fixed, &tree);
    let after = Target::find_kernel(&model, &target.kernel)?;
    for (i, budget) in &plan.checked {
        let cfg = after.configs.get(*i).ok_or("the edited file lost a configuration")?;
        let tile = cfg.tile(&after.dims).ok_or("the edited configuration has no known tile")?;
        if smem::estimate(tile, after.bytes, sm) > *budget {
            return Err(format!("the shrunk {} still does not fit", cfg.label.trim_start_matches("this ")));
        }
    }
    Ok(Fix { title: plan.title.into(), applicability: plan.applicability, edits: plan.edits })
}

/// The compute capability behind a hardware limit: the configured GPU's when
/// its limit is the one in the message, else the first known GPU with that
/// limit (the estimate only tells Hopper from the rest), else the configured one.
fn sm_for(settings: &Settings, limit: i64) -> u32 {
    let gpu = settings.gpu();
    if gpu.smem_per_block as i64 == limit {
        return gpu.sm;
    }
    GPUS.iter().find(|g| g.smem_per_block as i64 == limit).map(|g| g.sm).unwrap_or(gpu.sm)
}

/// The kernel that failed and which of its configurations ran.
struct Target<'a> {
    kernel: String,
    dims: Dims,
    bytes: i64,
    configs: Vec<Config<'a>>,
    /// Indexes into `configs` of the ones the run could have used.
    ran: Vec<usize>,
}

impl<'a> Target<'a> {
    fn find(model: &FileModel<'a>, line: Option<u32>) -> Result<Self, String> {
        let covers = |node: Node| {
            line.is_some_and(|l| {
                let l = l as usize;
                node.start_position().row < l && l <= node.end_position().row + 1
            })
        };
        // The launch on the error's line names the kernel.
        let launch = model.launches.iter().find(|l| covers(l.node));
        let mut target = match launch {
            Some(l) => Self::find_kernel(model, &l.kernel)?,
            None => {
                let mut with_dot: Vec<&str> = model
                    .kernels
                    .iter()
                    .filter(|k| smem::dot_dims(k, model).is_some())
                    .map(|k| k.name.as_str())
                    .collect();
                with_dot.dedup();
                match with_dot.as_slice() {
                    [one] => Self::find_kernel(model, one)?,
                    [] => return Err("no kernel of this file has a `tl.dot` pipeline to shrink".to_string()),
                    _ => {
                        return Err(format!(
                            "the error names no launch in this file, and {} kernels have a `tl.dot` pipeline: {}",
                            with_dot.len(),
                            with_dot.join(", ")
                        ))
                    }
                }
            }
        };
        if let Some(l) = launch {
            // A launch that sets its own sizes (or one of an untuned kernel) ran its own configuration.
            if let Some(i) = target.configs.iter().position(|c| c.node.id() == l.node.id()) {
                target.ran = vec![i];
            }
        }
        Ok(target)
    }

    fn find_kernel(model: &FileModel<'a>, name: &str) -> Result<Self, String> {
        let k = model.kernels.iter().find(|k| k.name == name).ok_or_else(|| format!("no kernel `{name}` here"))?;
        let dims = smem::dot_dims(k, model)
            .ok_or_else(|| format!("`{name}` has no `tl.dot` whose block sizes can be read off its parameters"))?;
        let names = [dims.0.as_str(), dims.1.as_str(), dims.2.as_str()];
        let configs = smem::configs(k, model, &names);
        let ran = (0..configs.len()).collect();
        Ok(Target { kernel: name.to_string(), bytes: smem::elem_bytes(k, model), dims, configs, ran })
    }
}

struct Plan {
    title: String,
    applicability: Applicability,
    edits: Vec<Edit>,
    /// (configuration index, byte budget of the estimate) to re-check after the edit.
    checked: Vec<(usize, i64)>,
}

fn plan(target: &Target, overflow: SmemOverflow, sm: u32) -> Result<Plan, String> {
    let tiles: Vec<(usize, Tile)> =
        target.ran.iter().filter_map(|&i| Some((i, target.configs[i].tile(&target.dims)?))).collect();
    let name = &target.kernel;
    if tiles.is_empty() {
        return Err(format!(
            "the block sizes of `{name}` at this launch are not integer literals, `triton.Config` entries or constexpr defaults"
        ));
    }
    // The configuration that failed: the one whose estimate is nearest the measurement.
    let distance = |t: &Tile| (smem::estimate(*t, target.bytes, sm) as f64 / overflow.required as f64).ln().abs();
    let failed = tiles
        .iter()
        .min_by(|a, b| distance(&a.1).total_cmp(&distance(&b.1)))
        .map(|(_, t)| *t)
        .ok_or("no configuration")?;
    let estimated = smem::estimate(failed, target.bytes, sm);
    // Scale estimates up when the run needed more than estimated; never down.
    let budget = if overflow.required > estimated {
        (overflow.limit as i128 * estimated as i128 / overflow.required as i128) as i64
    } else {
        overflow.limit
    };
    let mut edits: Vec<Edit> = Vec::new();
    let mut checked = Vec::new();
    let mut changes = Vec::new();
    let mut applicability = Applicability::Safe;
    for (i, tile) in tiles {
        if smem::estimate(tile, target.bytes, sm) <= budget {
            continue;
        }
        let cfg = &target.configs[i];
        let new = shrink_to_fit(tile, target.bytes, sm, budget).ok_or_else(|| {
            format!("no tile of `{name}` with powers of two of at least 16 fits in {} B", group(overflow.limit))
        })?;
        let (cfg_edits, changed) = cfg
            .shrink_edits(&target.dims, tile, new)
            .ok_or_else(|| format!("a size of {} that must change is not written as a literal it owns", cfg.label))?;
        for e in cfg_edits {
            match edits.iter().find(|x| x.range == e.range) {
                Some(x) if x.new_text == e.new_text => {}
                Some(_) => return Err(format!("two configurations of `{name}` share a literal that must differ")),
                None => edits.push(e),
            }
        }
        applicability = applicability.max(shrink_applicability(tile, new));
        checked.push((i, budget));
        let about = group(smem::estimate(new, target.bytes, sm) * overflow.required.max(estimated) / estimated);
        changes.push(format!("{} (about {about} B)", changed.join(", ")));
    }
    if edits.is_empty() {
        return Err(format!("no configuration of `{name}` is over {} B by the estimate", group(budget)));
    }
    changes.dedup();
    let title = format!(
        "Shrink to {} to fit the {} B the GPU has (the run needed {} B)",
        changes.join("; "),
        group(overflow.limit),
        group(overflow.required)
    );
    Ok(Plan { title, applicability, edits, checked })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages recorded on an H100 (Triton 3.6): `scripts/smem_calibration.csv`
    /// and the `matmul_smem` example's header.
    const H100_BIG_BLOCKS: &str = "out of resource: shared memory, Required: 1048576, Hardware limit: 232448. Reducing block sizes or `num_stages` may help.";
    const H100_AUTOTUNE: &str = "out of resource: shared memory, Required: 262144, Hardware limit: 232448. Reducing block sizes or `num_stages` may help.";

    fn example(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/matmul_smem").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn line_of(text: &str, needle: &str) -> u32 {
        text.lines().position(|l| l.contains(needle)).expect("needle") as u32 + 1
    }

    #[test]
    fn reads_the_recorded_messages() {
        assert_eq!(parse_message(H100_BIG_BLOCKS), Some(SmemOverflow { required: 1_048_576, limit: 232_448 }));
        let wrapped = format!("triton.runtime.errors.OutOfResources: {H100_AUTOTUNE}");
        assert_eq!(parse_message(&wrapped), Some(SmemOverflow { required: 262_144, limit: 232_448 }));
        assert_eq!(parse_message("out of resource: threads, Required: 2048, Hardware limit: 1024."), None);
        assert_eq!(parse_message("out of resource: shared memory, Required: lots"), None);
        assert_eq!(parse_message(""), None);
    }

    #[test]
    fn shrinks_the_launch_that_failed() {
        let text = example("candidate_big_blocks.py");
        let line = line_of(&text, "linear_bias_relu_kernel[grid](");
        let fix = fix(&text, &Settings::default(), H100_BIG_BLOCKS, Some(line)).expect("a fix");
        assert_eq!(fix.applicability, Applicability::NeedsReview);
        let fixed = apply_edits(&text, &fix.edits).expect("edits apply");
        // The measurement equals the estimate: the same shrink as KL006 on an H100.
        let kl006 = crate::checker::check_text(&text, &Settings::default())
            .diagnostics
            .into_iter()
            .find(|d| d.code == "KL006")
            .and_then(|d| d.fix)
            .expect("KL006 fix");
        assert_eq!(apply_edits(&text, &kl006.edits).expect("kl006 edits"), fixed);
        assert!(crate::checker::check_text(&fixed, &Settings::default()).diagnostics.iter().all(|d| d.code != "KL006"));
    }

    #[test]
    fn the_hardware_limit_in_the_message_wins_over_the_setting() {
        let text = example("candidate_big_blocks.py");
        let line = line_of(&text, "linear_bias_relu_kernel[grid](");
        let msg = "out of resource: shared memory, Required: 1048576, Hardware limit: 101376. Reducing block sizes or `num_stages` may help.";
        let fix = fix(&text, &Settings::default(), msg, Some(line)).expect("a fix");
        let fixed = apply_edits(&text, &fix.edits).expect("edits apply");
        let l4 = Settings { target_gpu: "l4".into(), ..Settings::default() };
        assert!(crate::checker::check_text(&fixed, &l4).diagnostics.iter().all(|d| d.code != "KL006"), "{fixed}");
        assert!(fix.title.contains("101,376 B"), "{}", fix.title);
    }

    #[test]
    fn a_measurement_above_the_estimate_scales_the_budget() {
        let text = example("candidate_big_blocks.py");
        let line = line_of(&text, "linear_bias_relu_kernel[grid](");
        // Twice the estimate: the shrink must fit half the limit by the estimate.
        let msg = "out of resource: shared memory, Required: 2097152, Hardware limit: 232448.";
        let fix = fix(&text, &Settings::default(), msg, Some(line)).expect("a fix");
        let fixed = apply_edits(&text, &fix.edits).expect("edits apply");
        let tree = model::parse_forest(&fixed);
        let model = FileModel::build(&fixed, &tree);
        let t = Target::find(&model, Some(line)).expect("target");
        let tile = t.configs[t.ran[0]].tile(&t.dims).expect("tile");
        assert!(smem::estimate(tile, t.bytes, 90) <= 232_448 / 2, "{tile:?}");
    }

    #[test]
    fn an_autotuned_kernel_gets_its_oversized_config_shrunk() {
        let text = example("candidate_autotune.py");
        // The autotuner surfaces OutOfResources only when every config fails; the
        // error's line is the launch, which sets no block sizes itself.
        let line = text.lines().position(|l| l.contains("[grid](")).map(|i| i as u32 + 1);
        let fix = fix(&text, &Settings::default(), H100_AUTOTUNE, line).expect("a fix");
        let fixed = apply_edits(&text, &fix.edits).expect("edits apply");
        assert_eq!(fixed.matches("triton.Config(").count(), 3);
        assert!(crate::checker::check_text(&fixed, &Settings::default()).diagnostics.iter().all(|d| d.code != "KL006"));
    }

    #[test]
    fn no_fix_without_a_pipeline_or_a_shared_memory_message() {
        let text = example("candidate_big_blocks.py");
        let e =
            fix(&text, &Settings::default(), "out of resource: threads, Required: 2048, Hardware limit: 1024", None);
        assert!(e.unwrap_err().contains("not Triton's shared-memory"));
        let plain = "import triton\n\n@triton.jit\ndef k(x_ptr):\n    pass\n";
        let e = fix(plain, &Settings::default(), H100_BIG_BLOCKS, Some(4)).unwrap_err();
        assert!(e.contains("no kernel of this file has a `tl.dot`"), "{e}");
        assert!(fix("def (:\n", &Settings::default(), H100_BIG_BLOCKS, None).is_err());
    }
}
