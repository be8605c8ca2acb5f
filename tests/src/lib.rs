//! Shared helpers for end-to-end tests live in `tests/tests/common`; this
//! library holds what the benchmark binaries share: the generated Triton
//! files they measure on, and the stdio client that speaks to the servers.

pub mod stdio;

/// One generated block: a kernel, the helper that launches it in a time loop,
/// and a plain elementwise kernel. About 50 lines; every name ends in `_{i}`.
pub fn block(i: usize) -> String {
    format!(
        r#"
@triton.jit
def cell_{i}(x_ptr, h_ptr, w_ptr, out_ptr, n, H: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    cols = tl.arange(0, H)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    h = tl.load(h_ptr + offs, mask=mask, other=0.0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for k in range(0, H):
        w = tl.load(w_ptr + k * H + cols)
        acc += tl.sum(w, axis=0) * x
    gate = tl.sigmoid(acc + h)
    y = x * 2.0
    cand = tl.tanh(acc)
    out = gate * h + (1.0 - gate) * cand + y
    tl.store(out_ptr + offs, out, mask=mask)


def run_cell_{i}(x, h, w, steps):
    out = torch.empty_like(h)
    n = h.numel()
    grid = (triton.cdiv(n, 128),)
    for t in range(steps):
        cell_{i}[grid](x[t], h, w, out, n, H=64, BLOCK=128)
        h = out
    return h


@triton.jit
def scale_{i}(x_ptr, y_ptr, n, s, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, v * s, mask=mask)


def run_scale_{i}(x, s):
    y = torch.empty_like(x)
    n = x.numel()
    scale_{i}[(triton.cdiv(n, 256),)](x, y, n, s, BLOCK=256)
    return y

"#
    )
}

/// A generated file and where its edits go.
pub struct Generated {
    pub text: String,
    /// 0-based lines of `y = x * 2.0`, one in each `cell_` kernel.
    pub kernel_lines: Vec<usize>,
    /// 0-based lines of host code: `out = torch.empty_like(h)` in each
    /// launching helper and the `h = run_cell_K(...)` lines of `forward`.
    pub host_lines: Vec<usize>,
    /// 0-based lines of `forward`'s body: every `h = run_cell_K(...)`.
    pub forward_lines: Vec<usize>,
}

/// How big a generated file is: at least this many lines, or bytes.
#[derive(Clone, Copy, Debug)]
pub enum Size {
    Lines(usize),
    Bytes(usize),
}

/// A Triton file of about `lines` lines: blocks with distinct names, then a
/// `ModelNew` whose `forward` calls every launching helper, then padding.
pub fn generate(lines: usize) -> Generated {
    generate_sized(Size::Lines(lines))
}

/// [`generate`] to a size in lines or bytes. The line count is kept as the
/// text grows, so a 6 MB file takes as long to build as it takes to write.
pub fn generate_sized(size: Size) -> Generated {
    const HEADER: &str = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\n";
    // Room left for `forward` (one line per block) and the padding.
    let more_blocks = |text: &str, line_count: usize, blocks: usize| match size {
        Size::Lines(lines) => line_count + 60 < lines,
        Size::Bytes(bytes) => text.len() + blocks * 40 + 200 < bytes,
    };
    let mut text = String::from(HEADER);
    let mut line_count = newlines(&text);
    let mut kernel_lines = Vec::new();
    let mut host_lines = Vec::new();
    let mut forward_lines = Vec::new();
    let mut i = 0;
    while more_blocks(&text, line_count, i) {
        let b = block(i);
        let offset = b.lines().position(|l| l.trim() == "y = x * 2.0").expect("marker line");
        kernel_lines.push(line_count + offset);
        let offset = b.lines().position(|l| l.trim() == "out = torch.empty_like(h)").expect("host marker line");
        host_lines.push(line_count + offset);
        text.push_str(&b);
        line_count += newlines(&b);
        i += 1;
    }
    let class = "\nclass ModelNew(nn.Module):\n    def __init__(self):\n        super().__init__()\n\n    def forward(self, x, h, w):\n";
    text.push_str(class);
    line_count += newlines(class);
    for k in 0..i {
        if k % 2 == 0 {
            host_lines.push(line_count);
        }
        forward_lines.push(line_count);
        text.push_str(&format!("        h = run_cell_{k}(x, h, w, 16)\n"));
        line_count += 1;
    }
    text.push_str("        return run_scale_0(h, 0.5)\n");
    line_count += 1;
    let padded = |text: &str, line_count: usize| match size {
        Size::Lines(lines) => line_count >= lines,
        Size::Bytes(bytes) => text.len() >= bytes,
    };
    while !padded(&text, line_count) {
        text.push_str("# padding\n");
        line_count += 1;
    }
    host_lines.sort_unstable();
    Generated { text, kernel_lines, host_lines, forward_lines }
}

/// Every piece of generated text ends in a newline, so its line count (as
/// `str::lines` counts them) is its number of newlines.
fn newlines(s: &str) -> usize {
    s.bytes().filter(|&b| b == b'\n').count()
}

/// The release build of the server the benchmarks measure: `target/release/kernel-lsp`
/// (under `CARGO_TARGET_DIR` when set).
pub fn default_kernel_lsp() -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let target = std::env::var_os("CARGO_TARGET_DIR").map(|d| root.join(d)).unwrap_or_else(|| root.join("target"));
    target.join("release").join("kernel-lsp")
}

/// The ruff the benchmarks compare against: the project's `.venv` one, else `ruff` on PATH.
pub fn default_ruff() -> String {
    let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/ruff");
    if venv.is_file() {
        venv.display().to_string()
    } else {
        "ruff".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The incremental line count matches `str::lines` on the text and the
    /// marker lines point at their markers.
    #[test]
    fn generated_lines_are_where_they_say() {
        let g = generate(1_000);
        let lines: Vec<&str> = g.text.lines().collect();
        assert!(lines.len() >= 1_000 && lines.len() < 1_010, "{} lines", lines.len());
        assert!(!g.kernel_lines.is_empty());
        for &l in &g.kernel_lines {
            assert_eq!(lines[l].trim(), "y = x * 2.0");
        }
        for &l in &g.host_lines {
            let line = lines[l].trim();
            assert!(line == "out = torch.empty_like(h)" || line.starts_with("h = run_cell_"), "{line}");
        }
    }

    #[test]
    fn sized_in_bytes_reaches_the_size_with_distinct_blocks() {
        let g = generate_sized(Size::Bytes(200_000));
        assert!(g.text.len() >= 200_000 && g.text.len() < 200_000 + 2_000, "{} bytes", g.text.len());
        let blocks = g.kernel_lines.len();
        assert!(g.text.contains(&format!("def cell_{}(", blocks - 1)));
        assert!(!g.text.contains(&format!("def cell_{}(", blocks)));
    }
}
