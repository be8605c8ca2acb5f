//! Full-analysis time for a 5,000-line kernel file (parse + model + rules),
//! an incremental reparse plus full analysis after a one-character edit, and
//! what the language server does per keystroke in a kernel (incremental
//! reparse, then the incremental analysis from the previous snapshot). Prints
//! figures; asserts nothing. Run: `cargo bench -p kernel-lsp --bench analysis`
//! (`KL_BENCH_MODEL_ONLY=1` or `KL_BENCH_TYPING_ONLY=1` to profile one part).
//! `KL_BENCH_SCALING_ONLY=1` prints only the scaling figures: one module
//! (the KL001 fixture) repeated 1, 10 and 100 times, as a concatenated or
//! generated file repeats the same names. `KL_BENCH_FILE=PATH` benchmarks
//! that file instead of the fixtures repeated (for instance the file
//! `lsp_latency` edits, which `check_speed --keep DIR` leaves in DIR).

use std::time::{Duration, Instant};

use kernel_lsp::checker::check;
use kernel_lsp::config::Settings;
use kernel_lsp::model::parse;

/// Builds a file of at least `lines` lines from the rule fixtures, renaming
/// kernels so every copy is a distinct kernel with its own launches.
pub fn kernel_file(lines: usize) -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rules");
    let mut parts: Vec<String> = std::fs::read_dir(dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .map(|p| std::fs::read_to_string(p).expect("fixture"))
        .collect();
    parts.sort();
    let mut out = String::new();
    let mut copy = 0;
    while out.lines().count() < lines {
        for p in &parts {
            out.push_str(&p.replace("(x_ptr", &format!("(x{copy}_ptr")).replace("def ", &format!("def c{copy}_")));
            out.push('\n');
        }
        copy += 1;
    }
    out
}

fn stats(mut v: Vec<Duration>) -> (Duration, Duration, Duration) {
    v.sort();
    (v[0], v[v.len() / 2], v[v.len() * 99 / 100])
}

fn main() {
    // `KL_BENCH_FILE=PATH`: another file instead, such as lsp_latency's own
    // (`target/release/check_speed --keep DIR --runs 1` writes it to DIR/kernels_5k.py).
    let text = match std::env::var_os("KL_BENCH_FILE") {
        Some(path) => std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("KL_BENCH_FILE {path:?}: {e}")),
        None => kernel_file(5_000),
    };
    let settings = Settings::default();
    if std::env::var_os("KL_BENCH_SCALING_ONLY").is_some() {
        scaling(&settings);
        return;
    }
    // For profilers: only the model build, many times.
    if std::env::var_os("KL_BENCH_MODEL_ONLY").is_some() {
        let tree = parse(&text, None);
        for _ in 0..200 {
            std::hint::black_box(kernel_lsp::model::FileModel::build(&text, &tree));
        }
        return;
    }
    let lines = text.lines().count();
    if std::env::var_os("KL_BENCH_TYPING_ONLY").is_some() {
        typing(text, &settings, Place::Kernel);
        return;
    }
    if std::env::var_os("KL_BENCH_HOST_TYPING_ONLY").is_some() {
        typing(text, &settings, Place::Host);
        return;
    }
    // Warm up.
    for _ in 0..5 {
        let tree = parse(&text, None);
        std::hint::black_box(check(&text, &tree, &settings));
    }
    let mut full = Vec::new();
    let mut parse_only = Vec::new();
    let mut analysis_only = Vec::new();
    let mut diagnostics = 0;
    for _ in 0..50 {
        let t0 = Instant::now();
        let tree = parse(&text, None);
        let t1 = Instant::now();
        let result = check(&text, &tree, &settings);
        let t2 = Instant::now();
        diagnostics = result.diagnostics.len();
        full.push(t2 - t0);
        parse_only.push(t1 - t0);
        analysis_only.push(t2 - t1);
    }
    // Incremental: edit one character in the middle and reparse with the old tree.
    let mut incremental = Vec::new();
    let mut tree = parse(&text, None);
    let mid = text.len() / 2;
    let mid = (0..=mid).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    for i in 0..50 {
        let ch = if i % 2 == 0 { "x" } else { "y" };
        let new_text = format!("{}{}{}", &text[..mid], ch, &text[mid..]);
        let t0 = Instant::now();
        let mut edited = tree.clone();
        edited.edit(&tree_sitter::InputEdit {
            start_byte: mid,
            old_end_byte: mid,
            new_end_byte: mid + 1,
            start_position: tree_sitter::Point::new(0, 0),
            old_end_position: tree_sitter::Point::new(0, 0),
            new_end_position: tree_sitter::Point::new(0, 1),
        });
        let new_tree = parse(&new_text, Some(&edited));
        let result = check(&new_text, &new_tree, &settings);
        incremental.push(t0.elapsed());
        std::hint::black_box(result);
        tree = parse(&text, None);
    }
    println!("kernel file: {lines} lines, {} bytes, {diagnostics} diagnostics", text.len());
    report("full analysis (parse + check)", full);
    report("  parse", parse_only);
    report("  model + rules", analysis_only);
    report("edit + incremental reparse + check", incremental);

    typing(text.clone(), &settings, Place::Kernel);
    typing(text.clone(), &settings, Place::Host);
    scaling(&settings);

    // Where the model + rules time goes.
    let tree = parse(&text, None);
    let mut build = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        std::hint::black_box(kernel_lsp::model::FileModel::build(&text, &tree));
        build.push(t0.elapsed());
    }
    report("  model build", build);
    let model = kernel_lsp::model::FileModel::build(&text, &tree);
    for rule in kernel_lsp::rules::RULES {
        let mut v = Vec::new();
        for _ in 0..20 {
            let mut out = Vec::new();
            let t0 = Instant::now();
            (rule.check)(&model, &settings, &mut out);
            v.push(t0.elapsed());
        }
        report(&format!("  rule {}", rule.code), v);
    }
    let mut v = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        std::hint::black_box(model.kernel_summaries());
        v.push(t0.elapsed());
    }
    report("  kernel summaries", v);
}

fn report(name: &str, v: Vec<Duration>) {
    let (min, p50, p99) = stats(v);
    println!("{name:<34} min {:>8.3} ms   p50 {:>8.3} ms   p99 {:>8.3} ms", ms(min), ms(p50), ms(p99));
}

/// Where [`typing`] types.
#[derive(Clone, Copy, PartialEq)]
enum Place {
    /// The first body line of a kernel in the middle of the file.
    Kernel,
    /// The end of a kernel launch in the middle of the file.
    Host,
}

/// What the language server does per keystroke.
fn typing(text: String, settings: &Settings, place: Place) {
    let settings = settings.clone();
    // What the language server does per keystroke: typing ` + 1` and deleting
    // the `1` at the end of a line in the middle of the file (in a kernel or
    // in host code), reparsing with the edited tree and analysing from the
    // previous snapshot.
    let mut text: std::sync::Arc<str> = std::sync::Arc::from(text.as_str());
    let mut index = kernel_lsp::text::LineIndex::new(&text);
    let at = match place {
        Place::Kernel => {
            let jit = text[text.len() / 2..].find("@triton.jit").map(|i| i + text.len() / 2).expect("a kernel");
            let body = jit + text[jit..].find("):\n").expect("a def line") + 3;
            body + text[body..].find('\n').expect("a body line")
        }
        Place::Host => {
            // The end of a kernel launch (`kernel[grid](...)`), which only host code has.
            let launch = text[text.len() / 2..].find("](").map(|i| i + text.len() / 2).expect("a launch");
            launch + text[launch..].find('\n').expect("a line end")
        }
    };
    let mut tree = parse(&text, None);
    let (_, mut snapshot) = kernel_lsp::checker::analyze(&text, &tree, &settings, &index, None);
    let (mut reparse, mut analyse, mut typed, mut incremental_runs) = (Vec::new(), Vec::new(), Vec::new(), 0);
    let (mut stubs, mut host_stubs) = (0, 0);
    let only =
        std::env::var_os("KL_BENCH_TYPING_ONLY").is_some() || std::env::var_os("KL_BENCH_HOST_TYPING_ONLY").is_some();
    let rounds = if only { 400 } else { 10 };
    for round in 0..rounds {
        let mut col = at;
        for (ch, delete) in [(" ", false), ("+", false), (" ", false), ("1", false), ("", true)] {
            let (start, old_end, new_end) = if delete { (col - 1, col, col - 1) } else { (col, col, col + ch.len()) };
            let t0 = Instant::now();
            let mut s = String::with_capacity(text.len() + 1);
            s.push_str(&text[..start]);
            s.push_str(ch);
            s.push_str(&text[old_end..]);
            let point = |index: &kernel_lsp::text::LineIndex, b: usize| {
                let row = index.line_of(b);
                tree_sitter::Point::new(row, b - index.line_start(row))
            };
            let mut new_index = index.clone();
            new_index.edit(start, old_end, ch);
            tree.edit(&tree_sitter::InputEdit {
                start_byte: start,
                old_end_byte: old_end,
                new_end_byte: new_end,
                start_position: point(&index, start),
                old_end_position: point(&index, old_end),
                new_end_position: point(&new_index, new_end),
            });
            text = std::sync::Arc::from(s);
            index = new_index;
            tree = parse(&text, Some(&tree));
            let t1 = Instant::now();
            let (result, next) = kernel_lsp::checker::analyze(&text, &tree, &settings, &index, Some(&snapshot));
            let t2 = Instant::now();
            incremental_runs += usize::from(next.is_incremental());
            stubs += next.stubs();
            host_stubs += next.host_stubs();
            snapshot = next;
            std::hint::black_box(result);
            if round > 0 {
                reparse.push(t1 - t0);
                analyse.push(t2 - t1);
                typed.push(t2 - t0);
            }
            col = new_end;
        }
    }
    report(
        if place == Place::Kernel { "typing in a kernel (server path)" } else { "typing in host code (server path)" },
        typed,
    );
    report("  edit + incremental reparse", reparse);
    report("  incremental analysis", analyse);
    println!(
        "  ({incremental_runs} of {} analyses incremental; per analysis {:.0} kernel statements and {:.0} host functions read as stubs)",
        rounds * 5,
        stubs as f64 / (rounds * 5) as f64,
        host_stubs as f64 / (rounds * 5) as f64
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Peak resident memory of this process so far, in MiB (Linux; 0 elsewhere).
fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kb / 1024.0
}

/// Time and memory of a full analysis of one module repeated 1x, 10x and
/// 100x: names resolve per copy, so both grow with the file, not its square.
/// Sizes run in increasing order, so the peak after each is that size's peak.
fn scaling(settings: &Settings) {
    let module = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/rules/KL001.py"))
        .expect("the KL001 fixture");
    println!("repeated module (KL001 fixture): copies, lines, median full analysis, peak RSS");
    for copies in [1usize, 10, 100] {
        let text = module.repeat(copies);
        let mut times = Vec::new();
        for _ in 0..5 {
            let start = Instant::now();
            let tree = parse(&text, None);
            std::hint::black_box(check(&text, &tree, settings));
            times.push(start.elapsed());
        }
        times.sort();
        println!(
            "  {copies:>4}x {:>7} lines  {:>9.2} ms  {:>7.1} MiB",
            text.lines().count(),
            times[times.len() / 2].as_secs_f64() * 1e3,
            peak_rss_mib()
        );
    }
}
