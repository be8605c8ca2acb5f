//! Full-analysis time for a 5,000-line kernel file (parse + model + rules),
//! an incremental reparse plus full analysis after a one-character edit, and
//! what the language server does per keystroke in a kernel (incremental
//! reparse, then the incremental analysis from the previous snapshot). Prints
//! figures; asserts nothing. Run: `cargo bench -p kernel-lsp --bench analysis`
//! (`KL_BENCH_MODEL_ONLY=1`, `KL_BENCH_TYPING_ONLY=1`, `KL_BENCH_HOST_TYPING_ONLY=1` or
//! `KL_BENCH_STATEMENT_TYPING_ONLY=1` to profile one part; with it,
//! `KL_BENCH_STATEMENT_IN=forward` or `=kernel` types only that statement).
//! `KL_BENCH_SCALING_ONLY=1` prints only the scaling figures: one module
//! (the KL001 fixture) repeated 1, 10 and 100 times, as a concatenated or
//! generated file repeats the same names. `KL_BENCH_FILE=PATH` benchmarks
//! that file instead of the fixtures repeated (for instance the file
//! `lsp_latency` edits, which `check_speed --keep DIR` leaves in DIR).
//! `KL_BENCH_TYPE_AFTER=TEXT KL_BENCH_TYPE=STATEMENT` types STATEMENT one
//! character per edit on a fresh line after the first line holding TEXT (to
//! look for a typing pattern's slow keystrokes); `KL_BENCH_PER_EDIT=1`
//! prints each edit of the second round with its path, times and stubs.
//! `KL_BENCH_GAP_US=N` sleeps N µs between edits, as the server idles between
//! a client's messages (a core left idle between keystrokes comes back cold);
//! with `KL_BENCH_GAP_SPIN=1` it spins instead (the core kept busy, not idle).
//! `KL_BENCH_ROUNDS=N` types each pattern N times (fewer, for valgrind).
//! `KL_BENCH_TS_GLIBC=1` leaves tree-sitter's C allocations on glibc's malloc
//! (the A/B of `model::tree_sitter_on_jemalloc`).
//! `KL_BENCH_BATTERY=1` types statements of every kind at five places (the
//! top host function and kernel, the lines before their loops, `forward`)
//! and prints the slowest keystroke and the p50 of each.

use std::time::{Duration, Instant};

use kernel_lsp::checker::check;
use kernel_lsp::config::Settings;
use kernel_lsp::model::parse_forest;

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

/// The server binary's allocators (`main.rs`): jemalloc for Rust, and for
/// tree-sitter's C allocations too, so that the bench times what the server does.
#[cfg(all(unix, not(target_os = "openbsd"), any(target_arch = "x86_64", target_arch = "aarch64")))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    #[cfg(all(unix, not(target_os = "openbsd"), any(target_arch = "x86_64", target_arch = "aarch64")))]
    if std::env::var_os("KL_BENCH_TS_GLIBC").is_none() {
        kernel_lsp::model::tree_sitter_on_jemalloc();
    }
    // `KERNEL_LSP_LOG=kernel_lsp=debug`: the checker's own log (why an edit was analysed afresh).
    if let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("KERNEL_LSP_LOG") {
        let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter(filter).try_init();
    }
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
        let tree = parse_forest(&text);
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
    if let Ok(statement) = std::env::var("KL_BENCH_TYPE") {
        let after = std::env::var("KL_BENCH_TYPE_AFTER").unwrap_or_default();
        typing(text, &settings, Place::Custom { after: after.leak(), statement: statement.leak() });
        return;
    }
    if std::env::var_os("KL_BENCH_BATTERY").is_some() {
        battery(&text, &settings);
        return;
    }
    if std::env::var_os("KL_BENCH_STATEMENT_TYPING_ONLY").is_some() {
        let only = std::env::var("KL_BENCH_STATEMENT_IN").ok();
        if only.as_deref() != Some("kernel") {
            typing(text.clone(), &settings, Place::Statement);
        }
        if only.as_deref() != Some("forward") {
            typing(text, &settings, Place::KernelStatement);
        }
        return;
    }
    // Warm up.
    for _ in 0..5 {
        let tree = parse_forest(&text);
        std::hint::black_box(check(&text, &tree, &settings));
    }
    let mut full = Vec::new();
    let mut parse_only = Vec::new();
    let mut analysis_only = Vec::new();
    let mut diagnostics = 0;
    for _ in 0..50 {
        let t0 = Instant::now();
        let tree = parse_forest(&text);
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
    let mut tree = parse_forest(&text);
    let scanned = kernel_lsp::model::recovery::scanned(&text);
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
        let index = kernel_lsp::text::LineIndex::new(&new_text);
        edited.reparse(&new_text, &scanned, &[(mid, mid, mid + 1)], &index);
        let result = check(&new_text, &edited, &settings);
        incremental.push(t0.elapsed());
        std::hint::black_box(result);
        tree = parse_forest(&text);
    }
    println!("kernel file: {lines} lines, {} bytes, {diagnostics} diagnostics", text.len());
    report("full analysis (parse + check)", full);
    report("  parse", parse_only);
    report("  model + rules", analysis_only);
    report("edit + incremental reparse + check", incremental);

    typing(text.clone(), &settings, Place::Kernel);
    typing(text.clone(), &settings, Place::Host);
    if text.contains("def forward(") {
        typing(text.clone(), &settings, Place::Statement);
    }
    typing(text.clone(), &settings, Place::KernelStatement);
    scaling(&settings);

    // Where the model + rules time goes.
    let tree = parse_forest(&text);
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
            (rule.check)(&kernel_lsp::rules::Scope::whole(&model, &settings, &Default::default()), &mut out);
            v.push(t0.elapsed());
        }
        report(&format!("  rule {}", rule.code), v);
    }
    let mut v = Vec::new();
    for _ in 0..20 {
        let t0 = Instant::now();
        std::hint::black_box(model.kernel_summaries(&Default::default()));
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
    /// A new 60-character statement, one character per edit, on a fresh line
    /// in the middle of the last `forward` (lsp_latency's statement mode):
    /// most keystrokes leave an unclosed bracket.
    Statement,
    /// The same in a kernel in the middle of the file, after its first body line.
    KernelStatement,
    /// `KL_BENCH_TYPE_AFTER=TEXT KL_BENCH_TYPE=STATEMENT`: STATEMENT typed
    /// on a fresh line after the first line that holds TEXT (indented as
    /// that line), to look for a typing pattern's slow keystrokes; and each
    /// of [`battery`]'s.
    Custom { after: &'static str, statement: &'static str },
}

/// The statements [`Place::Statement`] and [`Place::KernelStatement`] type (lsp_latency's).
const STATEMENT: &str = "z = torch.tanh(h * 0.25 + x.mean(dim=0, keepdim=True)) + 1.0";
const KERNEL_STATEMENT: &str = "z = tl.sigmoid(acc * 0.25 + h) * tl.exp(x - 1.0) + tl.abs(y)";

/// One edit: bytes `start..old_end` replaced by `text`; timed or not.
struct Edit {
    start: usize,
    old_end: usize,
    text: String,
    timed: bool,
}

/// One round of [`typing`]'s edits at `place` (each round leaves the text as it found it).
fn round_edits(text: &str, place: Place) -> Vec<Edit> {
    let edit = |start, old_end, text: &str, timed| Edit { start, old_end, text: text.to_string(), timed };
    let at = match place {
        Place::Kernel | Place::KernelStatement => {
            let jit = text[text.len() / 2..].find("@triton.jit").map(|i| i + text.len() / 2).expect("a kernel");
            let body = jit + text[jit..].find("):\n").expect("a def line") + 3;
            body + text[body..].find('\n').expect("a body line")
        }
        Place::Host => {
            // The end of a kernel launch (`kernel[grid](...)`), which only host code has.
            let launch = text[text.len() / 2..].find("](").map(|i| i + text.len() / 2).expect("a launch");
            launch + text[launch..].find('\n').expect("a line end")
        }
        Place::Custom { after, .. } => {
            let line = text.find(after).unwrap_or_else(|| panic!("KL_BENCH_TYPE_AFTER {after:?} is not in the file"));
            line + text[line..].find('\n').unwrap_or(text.len() - line)
        }
        Place::Statement => {
            let forward = text.rfind("def forward(").expect("a forward");
            let end = text[forward..].find("\n\n").map_or(text.len(), |i| forward + i);
            let middle = forward + (end - forward) / 2;
            middle + text[middle..].find('\n').expect("a line end")
        }
    };
    let statement = match place {
        Place::Custom { statement, .. } => {
            let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let indent = text[line_start..].len() - text[line_start..].trim_start_matches(' ').len();
            Some((statement, indent))
        }
        Place::Statement => Some((STATEMENT, 8)),
        Place::KernelStatement => Some((KERNEL_STATEMENT, 4)),
        Place::Kernel | Place::Host => None,
    };
    if let Some((statement, indent)) = statement {
        // A fresh line after `at`, the statement typed on it, the line removed.
        let indent = " ".repeat(indent);
        let mut out = vec![edit(at, at, &format!("\n{indent}"), false)];
        let typed_at = at + 1 + indent.len();
        for (k, ch) in statement.char_indices() {
            out.push(edit(typed_at + k, typed_at + k, &ch.to_string(), true));
        }
        out.push(edit(at, typed_at + statement.len(), "", false));
        return out;
    }
    // Type ` + 1` and delete the `1`, then restore the line.
    let mut out: Vec<Edit> =
        [" ", "+", " ", "1"].iter().enumerate().map(|(k, c)| edit(at + k, at + k, c, true)).collect();
    out.push(edit(at + 3, at + 4, "", true));
    out.push(edit(at, at + 3, "", false));
    out
}

/// What the language server does per keystroke.
fn typing(text: String, settings: &Settings, place: Place) -> Vec<Duration> {
    let settings = settings.clone();
    // What the language server does per keystroke: applying the edit to the
    // text and its line index, reparsing with the edited tree and analysing
    // from the previous snapshot.
    let mut text: std::sync::Arc<str> = std::sync::Arc::from(text.as_str());
    let mut index = kernel_lsp::text::LineIndex::new(&text);
    let edits = round_edits(&text, place);
    let mut scanned = kernel_lsp::model::recovery::scanned(&text);
    let mut tree = kernel_lsp::model::Forest::parse(&text, &scanned);
    let (_, mut snapshot) = kernel_lsp::checker::analyze(&text, &tree, &settings, &index, None);
    let (mut reparse, mut analyse, mut typed, mut runs, mut incremental_runs) =
        (Vec::new(), Vec::new(), Vec::new(), 0, 0);
    let (mut stubs, mut host_stubs) = (0, 0);
    let only = ["KL_BENCH_TYPING_ONLY", "KL_BENCH_HOST_TYPING_ONLY", "KL_BENCH_STATEMENT_TYPING_ONLY", "KL_BENCH_TYPE"]
        .iter()
        .any(|v| std::env::var_os(v).is_some());
    let statement = matches!(place, Place::Statement | Place::KernelStatement | Place::Custom { .. });
    // `KL_BENCH_PER_EDIT=1`: each timed edit of the second round on stderr (which ones are slow, and why).
    let per_edit = std::env::var_os("KL_BENCH_PER_EDIT").is_some();
    let rounds = match (only, statement) {
        (true, true) => 40,
        (true, false) => 400,
        (false, true) => 3,
        (false, false) => 10,
    };
    // `KL_BENCH_ROUNDS=N` (at least 2: the first is not timed), for valgrind.
    let rounds =
        std::env::var("KL_BENCH_ROUNDS").ok().and_then(|v| v.parse::<usize>().ok()).map_or(rounds, |n| n.max(2));
    let gap = std::env::var("KL_BENCH_GAP_US").ok().and_then(|v| v.parse().ok()).map(Duration::from_micros);
    let spin = std::env::var_os("KL_BENCH_GAP_SPIN").is_some();
    for round in 0..rounds {
        for Edit { start, old_end, text: ch, timed } in &edits {
            if let Some(gap) = gap {
                if spin {
                    let until = Instant::now() + gap;
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                } else {
                    std::thread::sleep(gap);
                }
            }
            let (start, old_end) = (*start, *old_end);
            let new_end = start + ch.len();
            let t0 = Instant::now();
            let mut s = String::with_capacity(text.len() + ch.len());
            s.push_str(&text[..start]);
            s.push_str(ch);
            s.push_str(&text[old_end..]);
            let point = |index: &kernel_lsp::text::LineIndex, b: usize| {
                let row = index.line_of(b);
                tree_sitter::Point::new(row, b - index.line_start(row))
            };
            let mut new_index = index.clone();
            new_index.edit(start, old_end, ch);
            let edit = tree_sitter::InputEdit {
                start_byte: start,
                old_end_byte: old_end,
                new_end_byte: new_end,
                start_position: point(&index, start),
                old_end_position: point(&index, old_end),
                new_end_position: point(&new_index, new_end),
            };
            tree.edit(&edit);
            text = std::sync::Arc::from(s);
            index = new_index;
            let edits = [(start, old_end, new_end)];
            (scanned, _) = tree.reparse(&text, &scanned, &edits, &index);
            let t1 = Instant::now();
            let (result, next) = kernel_lsp::checker::analyze(&text, &tree, &settings, &index, Some(&snapshot));
            let t2 = Instant::now();
            runs += 1;
            incremental_runs += usize::from(next.is_incremental());
            stubs += next.stubs();
            host_stubs += next.host_stubs();
            snapshot = next;
            std::hint::black_box(result);
            if round == 1 && per_edit && *timed {
                eprintln!(
                    "edit {:>3} {:?}: reparse {:>6.3} ms, analysis {:>6.3} ms, {:?}, builds {}, stubs {}/{}",
                    start,
                    ch,
                    (t1 - t0).as_secs_f64() * 1e3,
                    (t2 - t1).as_secs_f64() * 1e3,
                    snapshot.path(),
                    snapshot.builds(),
                    snapshot.stubs(),
                    snapshot.host_stubs()
                );
            }
            if round > 0 && *timed {
                reparse.push(t1 - t0);
                analyse.push(t2 - t1);
                typed.push(t2 - t0);
            }
        }
    }
    report(
        match place {
            Place::Kernel => "typing in a kernel (server path)",
            Place::Host => "typing in host code (server path)",
            Place::Statement => "a statement typed in forward",
            Place::KernelStatement => "a statement typed in a kernel",
            Place::Custom { .. } => "KL_BENCH_TYPE typed",
        },
        typed.clone(),
    );
    report("  edit + incremental reparse", reparse);
    report("  incremental analysis", analyse);
    println!(
        "  ({incremental_runs} of {runs} analyses incremental; per analysis {:.0} kernel statements and {:.0} host functions read as stubs; the file is {} trees)",
        stubs as f64 / runs as f64,
        host_stubs as f64 / runs as f64,
        tree.len()
    );
    typed
}

/// `KL_BENCH_BATTERY=1`: statements of every kind typed one character per
/// edit at the top of the file (in the first host function and the first
/// kernel) and in the last `forward`, each keystroke a reparse and an
/// incremental analysis; prints the slowest keystroke and the p50 per
/// statement and place. Most keystrokes leave the statement unfinished (an
/// operator without its operand, a string or a header left open): the
/// parser's recovery must stay inside it wherever in the file it is typed.
fn battery(text: &str, settings: &Settings) {
    const STATEMENTS: &[&str] = &[
        "z = torch.tanh(h * 0.25 + x.mean(dim=0, keepdim=True)) + 1.0",
        "z = -n ** 2 // 3 % 4 | 5 & 6 ^ 7 << 1 >> 2",
        "z = not n or n is None and n in (1, 2)",
        "out = x if n > 2 else h",
        "assert n > 0, 'n must be positive'",
        "z = \"abc\" + 'de'",
        "if n > 0 and h.is_cuda: out = out * 2",
        "for i in range(n): out += i",
        "while n > 0: n -= 1",
        "with torch.no_grad(): z = n",
        "z = lambda q: q + 1",
        "z: int = n",
        "z = [i for i in range(3) if i]",
        "print(f'{n}')",
    ];
    const KERNEL_STATEMENTS: &[&str] = &[
        "z = tl.sigmoid(acc * 0.25 + h) * tl.exp(x - 1.0) + tl.abs(y)",
        "z = -offs ** 2 // 3 % 4 | 5 & 6 ^ 7 << 1 >> 2",
        "if BLOCK > 16: acc = acc * 2",
        "for k2 in range(0, BLOCK): acc += k2",
        "tl.static_assert(BLOCK > 0, 'BLOCK must be positive')",
    ];
    let line_after = |from: usize, body_of: &str| -> &'static str {
        let def = from + text[from..].find(body_of).unwrap_or_else(|| panic!("no {body_of:?} in the file"));
        let body = def + text[def..].find(":\n").expect("a def line") + 2;
        let end = body + text[body..].find('\n').expect("a body line");
        text[body..end].to_string().leak()
    };
    // The first body line of a function, and the line before its first `for`
    // (the statement typed there runs into the loop's header).
    let before_loop = |from: usize| -> &'static str {
        let def = from + text[from..].find("def ").expect("a def");
        let header = def + text[def..].find("\n    for ").expect("a loop in the function") + 1;
        let start = text[..header - 1].rfind('\n').map_or(0, |i| i + 1);
        text[start..header - 1].to_string().leak()
    };
    // The first `def` at column 0 without a decorator above it.
    let first_host = (0..text.len())
        .filter(|&i| text[i..].starts_with("\ndef ") && !text[..i].rsplit('\n').next().unwrap_or("").starts_with('@'))
        .next()
        .expect("a host function");
    let first_kernel = text.find("@triton.jit").expect("a kernel");
    let host = line_after(first_host, "\ndef ");
    let host_loop = before_loop(first_host);
    let kernel = line_after(first_kernel, "def ");
    let kernel_loop = before_loop(first_kernel);
    let forward = {
        let at = text.rfind("def forward(").expect("a forward");
        let end = text[at..].find("\n\n").map_or(text.len(), |i| at + i);
        let middle = at + (end - at) / 2;
        let start = middle + text[middle..].find('\n').expect("a line") + 1;
        let stop = start + text[start..].find('\n').expect("a line end");
        &*text[start..stop].to_string().leak()
    };
    println!("statement typed one character per edit | place | slowest keystroke | p50 (ms)");
    let mut slowest = Duration::ZERO;
    for (place, after, statements) in [
        ("top host function", host, STATEMENTS),
        ("before a host loop", host_loop, STATEMENTS),
        ("top kernel", kernel, KERNEL_STATEMENTS),
        ("before a kernel loop", kernel_loop, KERNEL_STATEMENTS),
        ("forward", forward, STATEMENTS),
    ] {
        for &statement in statements {
            let mut typed = typing(text.to_string(), settings, Place::Custom { after, statement });
            typed.sort();
            slowest = slowest.max(typed[typed.len() - 1]);
            println!(
                "BATTERY {statement:<62} | {place:<20} | {:>7.2} | {:>6.2}",
                ms(typed[typed.len() - 1]),
                ms(typed[typed.len() / 2])
            );
        }
    }
    println!("BATTERY slowest keystroke of all: {:.2} ms", ms(slowest));
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
            let tree = parse_forest(&text);
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
