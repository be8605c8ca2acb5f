//! A bounded property test: mutated fixtures (broken, partial, odd bytes)
//! never panic the analysis, and every range it returns lies on the text.

use std::path::Path;

use kernel_lsp::checker::check_text;
use kernel_lsp::config::Settings;
use kernel_lsp::diagnostic::apply_edits;

#[path = "../src/xorshift.rs"]
mod xorshift;
use xorshift::Rng;

const SNIPPETS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    ":",
    "\n",
    "\n    ",
    "    ",
    "for t in range(",
    "while n < H:\n",
    "tl.",
    "tl.arange(0, ",
    "tl.store(",
    "tl.load(",
    "@triton.jit\ndef k(",
    "kernel[grid](",
    "\"\"\"",
    "'",
    "#",
    "é",
    "𝄞",
    "\u{0}",
    "\t",
    "\\",
    "lambda META: (",
    "triton.Config({",
    "num_stages=",
    "+= BLOCK",
    "tl.program_id(1)",
    "tl.atomic_add(",
    "def ",
    "class ",
];

fn char_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut t = text.to_string();
    for _ in 0..1 + rng.below(4) {
        let a = char_boundary(&t, rng.below(t.len() + 1));
        let b = char_boundary(&t, a + rng.below(80));
        match rng.below(5) {
            0 => t.replace_range(a..b, ""),
            1 => t.insert_str(a, SNIPPETS[rng.below(SNIPPETS.len())]),
            2 => {
                let dup = t[a..b].to_string();
                t.insert_str(b, &dup);
            }
            3 => t.truncate(a),
            _ => {
                let c = char_boundary(&t, rng.below(t.len() + 1));
                let piece = t[a..b].to_string();
                t.insert_str(c, &piece);
            }
        }
    }
    t
}

fn assert_sound(text: &str, seed: u64) {
    let settings = Settings::default();
    let result = check_text(text, &settings);
    for d in &result.diagnostics {
        let r = d.range;
        assert!(r.start <= r.end && r.end <= text.len(), "seed {seed}: range {r:?} off the text");
        assert!(text.is_char_boundary(r.start) && text.is_char_boundary(r.end), "seed {seed}: range splits a char");
        if let Some(fix) = &d.fix {
            apply_edits(text, &fix.edits).unwrap_or_else(|e| panic!("seed {seed}: fix does not apply: {e}"));
        }
    }
    for k in &result.kernels {
        assert!(k.range.end <= text.len(), "seed {seed}: kernel range off the text");
    }
}

#[test]
fn mutated_fixtures_never_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut sources = Vec::new();
    for dir in ["tests/fixtures/rules", "examples/gru"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "py") {
                sources.push(std::fs::read_to_string(p).unwrap());
            }
        }
    }
    let iterations: u64 = std::env::var("KERNEL_LSP_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    for (i, src) in sources.iter().enumerate() {
        for n in 0..iterations {
            let seed = (i as u64 + 1) * 1_000_003 + n;
            let mut rng = Rng(seed | 1);
            let text = mutate(&mut rng, src);
            assert_sound(&text, seed);
        }
    }
}

#[test]
fn hostile_inputs_give_results_not_panics() {
    let deep = format!("x = {}1{}\n", "(".repeat(50_000), ")".repeat(50_000));
    let deep_blocks: String = (0..2_000).map(|i| format!("{}if x:\n", " ".repeat(i))).collect();
    let long_line = format!("y = [{}]\n", "1, ".repeat(200_000));
    let unclosed = "@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr:\n    offs = tl.arange(0, \n".to_string();
    let odd = "\u{feff}import triton\r\n@triton.jit\r\ndef k(x):\r\n    return tl.tanh(x)\r\n\u{2028}".to_string();
    for (i, text) in [deep, deep_blocks, long_line, unclosed, odd, String::new()].iter().enumerate() {
        assert_sound(text, i as u64);
    }
    // The CRLF kernel is still analysed.
    let crlf = "import triton\r\nimport triton.language as tl\r\n@triton.jit\r\ndef k(x):\r\n    return tl.tanh(x)\r\n";
    assert_eq!(check_text(crlf, &Settings::default()).diagnostics.len(), 1);
}
