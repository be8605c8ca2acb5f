//! Shrinking a `tl.dot` pipeline's tile until its shared memory fits: the
//! tile to pick, the edits that write it into a configuration, and how safe
//! that is. KL006's quick fix and the `OutOfResources` fix (`fix::oor`) share it.

use crate::diagnostic::{Applicability, Edit};
use crate::model::range_of;
use crate::model::smem::{estimate, Config, Dims, Tile};
use crate::text::TextRange;

/// The tile that fits `limit` and keeps the most work per program: the
/// largest output tile (BLOCK_M × BLOCK_N), then the deepest pipeline
/// (BLOCK_K × stages), then the most stages. Sizes stay powers of two and at
/// least 16 (`tl.dot`'s minimum); nothing grows. `None` when nothing fits.
pub(crate) fn shrink_to_fit(tile: Tile, elem_bytes: i64, sm: u32, limit: i64) -> Option<Tile> {
    let halvings = |v: i64| {
        let mut out = vec![v];
        let mut x = v;
        while x / 2 >= 16 && x % 2 == 0 {
            x /= 2;
            out.push(x);
        }
        out
    };
    let mut best: Option<(Tile, (i64, i64, i64))> = None;
    for m in halvings(tile.m) {
        for n in halvings(tile.n) {
            for k in halvings(tile.k) {
                for stages in 1..=tile.stages.max(1) {
                    let t = Tile { m, n, k, stages, warps: tile.warps };
                    if estimate(t, elem_bytes, sm) > limit {
                        continue;
                    }
                    let score = (m * n, k * stages, stages);
                    if best.is_none_or(|(_, s)| score > s) {
                        best = Some((t, score));
                    }
                }
            }
        }
    }
    best.map(|(t, _)| t)
}

impl Config<'_> {
    /// The edits that turn this configuration's `old` tile into `new`, and
    /// `NAME=value` for each changed value. `None` when a changed value is not
    /// written as a literal this configuration owns.
    pub(crate) fn shrink_edits(&self, (m, n, kd): &Dims, old: Tile, new: Tile) -> Option<(Vec<Edit>, Vec<String>)> {
        let mut edits = Vec::new();
        let mut changed = Vec::new();
        for (name, before, after) in [
            (m.as_str(), old.m, new.m),
            (n.as_str(), old.n, new.n),
            (kd.as_str(), old.k, new.k),
            ("num_stages", old.stages, new.stages),
        ] {
            if before == after {
                continue;
            }
            match self.values.get(name).and_then(|v| v.1) {
                Some(node) => edits.push(Edit { range: range_of(node), new_text: after.to_string() }),
                // `num_stages` left at Triton's default: add it to the launch or Config.
                None if name == "num_stages" => edits.push(Edit {
                    range: TextRange::new(self.insert_at, self.insert_at),
                    new_text: format!(", num_stages={after}"),
                }),
                None => return None,
            }
            changed.push(format!("{name}={after}"));
        }
        Some((edits, changed))
    }
}

/// Fewer stages keep the tile and the kernel's results: safe. Smaller blocks
/// change what each program computes, which a kernel may depend on: review.
pub(crate) fn shrink_applicability(old: Tile, new: Tile) -> Applicability {
    if (old.m, old.n, old.k) == (new.m, new.n, new.k) {
        Applicability::Safe
    } else {
        Applicability::NeedsReview
    }
}
