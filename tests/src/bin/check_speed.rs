//! Whole-process time of `kernel-lsp check` against `ruff check --no-cache`.
//!
//! Generates three inputs in a temporary directory: the 5,000-line file of
//! `lsp_latency` (many kernels and their launching helpers), a 6 MB file of
//! the same blocks with distinct names, and a directory of many 500-line
//! files. Runs each tool on each input repeatedly, interleaving the tools so
//! both see the same machine state, and prints a Markdown table of the median
//! and minimum wall time, the median CPU time (less disturbed than wall time
//! on a busy machine) and the peak RSS of each, with the load average
//! before and after (the figures are only as quiet as the machine). A last
//! column times tree-sitter-python's parse of the same text alone, in this
//! process on one thread: a floor under kernel-lsp check's CPU time.
//! `--baseline PATH` adds another kernel-lsp build, for before/after figures.
//!
//! ```text
//! cargo build --release -p kernel-lsp -p kernel-lsp-tests
//! target/release/check_speed [--kernel-lsp PATH] [--ruff PATH | --no-ruff] [--runs N] [--files N] [--format json] [--baseline PATH]
//! target/release/check_speed --keep DIR --runs 1   # leaves the inputs in DIR, for profilers
//! ```

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use kernel_lsp_tests::{default_kernel_lsp, default_ruff, generate, generate_sized, Size};

/// One run's wall time, CPU time (user + system, all threads) and peak resident set.
struct Sample {
    ms: f64,
    cpu_ms: f64,
    peak_rss_kb: u64,
}

/// Runs `command` once with stdout and stderr discarded; returns its wall
/// time and peak RSS (from `wait4`, so no wrapper process is timed).
// The child is reaped by `wait4`, which `Child::wait` cannot replace: it gives no rusage.
#[allow(clippy::zombie_processes)]
fn run_once(command: &[String]) -> Sample {
    let start = Instant::now();
    let child = Command::new(&command[0])
        .args(&command[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", command[0]));
    let mut status = 0;
    // SAFETY: `rusage` is plain data that wait4 fills in; the pid is our own child, waited for once.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    let ms = start.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(pid, child.id() as libc::pid_t, "wait4 failed for {}", command[0]);
    let code = libc::WEXITSTATUS(status);
    // Both tools exit 1 when they report findings; 2 is a usage or I/O error.
    assert!(libc::WIFEXITED(status) && code <= 1, "{command:?} exited with status {status:#x}");
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    Sample { ms, cpu_ms: tv(usage.ru_utime) + tv(usage.ru_stime), peak_rss_kb: usage.ru_maxrss as u64 }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// Median time to parse `texts` with tree-sitter-python in this process, on
/// one thread, freeing each tree outside the clock: what kernel-lsp check
/// pays before it builds its model, whatever the model and rules cost.
fn parse_alone_ms(texts: &[&str], runs: usize) -> f64 {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&tree_sitter_python::LANGUAGE.into()).expect("the bundled grammar loads");
    let mut times = Vec::new();
    for _ in 0..runs.max(1) {
        let mut ms = 0.0;
        for text in texts {
            let start = Instant::now();
            let tree = parser.parse(text, None).expect("a tree");
            ms += start.elapsed().as_secs_f64() * 1000.0;
            drop(tree);
        }
        times.push(ms);
    }
    median(&times)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "n/a".into())
}

fn main() {
    let mut kernel_lsp = default_kernel_lsp().display().to_string();
    let mut ruff = Some(default_ruff());
    let mut runs = 15usize;
    let mut files = 200usize;
    let mut json = false;
    let mut keep: Option<PathBuf> = None;
    let mut baseline: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            // A path is made absolute: the servers run in a temporary directory.
            "--kernel-lsp" => {
                let p = args.next().expect("--kernel-lsp PATH");
                kernel_lsp = std::path::absolute(&p).map_or(p, |a| a.display().to_string());
            }
            "--ruff" => {
                ruff = args.next().map(|p| {
                    if p.contains('/') {
                        std::path::absolute(&p).map_or(p, |a| a.display().to_string())
                    } else {
                        p
                    }
                })
            }
            "--no-ruff" => ruff = None,
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).filter(|&n| n > 0).expect("--runs N"),
            "--files" => files = args.next().and_then(|v| v.parse().ok()).filter(|&n| n > 0).expect("--files N"),
            "--format" => json = args.next().as_deref() == Some("json"),
            "--baseline" => baseline = Some(args.next().expect("--baseline PATH")),
            "--keep" => keep = Some(args.next().expect("--keep DIR").into()),
            other => {
                eprintln!(
                    "usage: check_speed [--kernel-lsp PATH] [--ruff PATH | --no-ruff] [--runs N] [--files N] [--format json] [--baseline PATH] [--keep DIR]; got {other}"
                );
                std::process::exit(2);
            }
        }
    }

    let dir = keep.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("check-speed-{}", std::process::id())));
    let many = dir.join("many");
    std::fs::create_dir_all(&many).expect("temp dir");
    let file_5k = dir.join("kernels_5k.py");
    let text_5k = generate(5_000).text;
    std::fs::write(&file_5k, &text_5k).expect("write the 5,000-line file");
    let file_6mb = dir.join("kernels_6mb.py");
    let text_6mb = generate_sized(Size::Bytes(6 << 20)).text;
    std::fs::write(&file_6mb, &text_6mb).expect("write the 6 MB file");
    let small = generate(500).text;
    for i in 0..files {
        std::fs::write(many.join(format!("kernels_{i:04}.py")), &small).expect("write a small file");
    }
    let describe = |t: &str| match t.len() {
        n if n >= 1 << 20 => format!("{} lines, {:.1} MB", t.lines().count(), n as f64 / (1 << 20) as f64),
        n => format!("{} lines, {} KB", t.lines().count(), n / 1024),
    };
    let cases = [
        ("5,000-line file".to_string(), describe(&text_5k), file_5k),
        ("6 MB file, distinct names".to_string(), describe(&text_6mb), file_6mb),
        (format!("directory of {files} files"), format!("{} x {}", files, describe(&small)), many),
    ];
    let many_texts: Vec<&str> = (0..files).map(|_| small.as_str()).collect();
    let parse_texts: [Vec<&str>; 3] = [vec![text_5k.as_str()], vec![text_6mb.as_str()], many_texts];

    let mut tools: Vec<(String, Vec<String>)> = Vec::new();
    let mut ours = vec![kernel_lsp, "check".to_string()];
    if json {
        ours.extend(["--format".to_string(), "json".to_string()]);
    }
    tools.push((if json { "kernel-lsp check --format json" } else { "kernel-lsp check" }.to_string(), ours));
    if let Some(b) = baseline {
        let mut theirs = tools[0].1.clone();
        theirs[0] = b;
        tools.push(("baseline".to_string(), theirs));
    }
    let with_ruff = ruff.is_some();
    if let Some(r) = ruff {
        tools.push(("ruff check --no-cache".to_string(), vec![r, "check".into(), "--no-cache".into()]));
    }

    let load_before = load_average();
    println!("{runs} runs per tool and input, tools interleaved, after one warm-up run each; load average before: {load_before}");
    let mut rows = Vec::new();
    for ((name, size, path), texts) in cases.iter().zip(&parse_texts) {
        let commands: Vec<Vec<String>> =
            tools.iter().map(|(_, c)| c.iter().cloned().chain([path.display().to_string()]).collect()).collect();
        for c in &commands {
            run_once(c);
        }
        let mut samples: Vec<Vec<Sample>> = commands.iter().map(|_| Vec::new()).collect();
        for _ in 0..runs {
            for (c, s) in commands.iter().zip(&mut samples) {
                s.push(run_once(c));
            }
        }
        rows.push((name, size, samples, texts));
    }
    // After every child has run: a child's peak RSS as wait4 reports it
    // counts what this process held when it forked, and a parsed 6 MB tree is large.
    let rows: Vec<_> = rows
        .into_iter()
        .map(|(name, size, samples, texts)| (name, size, samples, parse_alone_ms(texts, runs)))
        .collect();
    let load_after = load_average();
    if keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }

    println!();
    print!("| input | ");
    for (t, _) in &tools {
        print!("{t}: wall median / min, CPU median (ms), peak RSS | ");
    }
    println!(
        "tree-sitter parse alone, in process, one thread (ms) | {}",
        if with_ruff { "median ratio to ruff (goal <= 1) |" } else { "" }
    );
    println!("|---|{}---|{}", "---|".repeat(tools.len()), if with_ruff { "---|" } else { "" });
    let mut met = true;
    for (name, size, samples, parse_ms) in &rows {
        print!("| {name} ({size}) |");
        let mut medians = Vec::new();
        for s in samples {
            let ms: Vec<f64> = s.iter().map(|s| s.ms).collect();
            let min = ms.iter().copied().fold(f64::INFINITY, f64::min);
            let rss = s.iter().map(|s| s.peak_rss_kb).max().unwrap_or(0);
            let m = median(&ms);
            let cpu = median(&s.iter().map(|s| s.cpu_ms).collect::<Vec<_>>());
            medians.push(m);
            print!(" {m:.1} / {min:.1}, {cpu:.1}, {:.1} MB |", rss as f64 / 1024.0);
        }
        print!(" {parse_ms:.1} |");
        if let (true, Some(k), Some(r)) = (with_ruff, medians.first(), medians.last()) {
            met &= k <= r;
            print!(" {:.2} |", k / r);
        }
        println!();
    }
    println!("\nload average before: {load_before}; after: {load_after}");
    if with_ruff {
        println!("goal (kernel-lsp median <= ruff median on every input): {}", if met { "met" } else { "NOT met" });
    }
}
