//! The compiler in the loop: every kernel of a file compiled by the user's own
//! Triton for the target GPU, with no GPU needed (the wheel ships ptxas).
//!
//! An edge layer beside `lsp`, `bench` and `llm`: it starts processes. What
//! lives here: [`bundle`] (what the compiler is shown of a file: the jit
//! functions and the constants and Triton imports they read, never host code),
//! [`signature`] (the types and constexprs each kernel is compiled with, read
//! from its launch sites; what is assumed is named), [`worker`] (the Python
//! process, in the sandbox untrusted code runs in, restarted when it dies),
//! and here the pool of workers with its cache (in memory and under
//! `.kernel-lsp/compile-cache/`, keyed by the bundle, signature, constexprs,
//! target and Triton version) and the diagnostics a result becomes (KL901 at
//! Triton's line and column; a Warning, never an Error, where the error may
//! come from an assumption).

pub mod bundle;
pub mod signature;
pub mod worker;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::config::Settings;
use crate::diagnostic::{Diagnostic, Severity};
use crate::model::FileModel;
use crate::model::Forest;
use crate::text::{ColumnUnit, LineIndex, TextRange};
pub use signature::{KernelPlan, Variant};
pub use worker::{Hello, Worker};

/// Bumped when what a cached result means changes.
const CACHE_SCHEMA: u32 = 1;

/// One compilation: a kernel of a file under one variant, and the request the worker gets.
#[derive(Debug, Clone)]
pub struct Job {
    pub kernel: String,
    pub name_range: TextRange,
    pub variant: Variant,
    /// Names the file binds in code the compiler is not shown.
    pub hidden_names: Vec<String>,
    /// The request without its target (filled in once the worker says which GPU it has).
    pub request: Value,
    /// The on-disk cache of the file's project; `None`: memory only.
    pub cache_dir: Option<PathBuf>,
    /// How many configurations of this kernel the bound left out (on its first job).
    pub omitted: usize,
}

/// The jobs of one file: each planned kernel, each of its variants.
pub fn jobs(path: &Path, src: &str, tree: &Forest, settings: &Settings) -> Vec<Job> {
    let model = FileModel::build(src, tree);
    let filename = path.display().to_string();
    let cache_dir = Some(crate::bench::history::project_root(path).join(".kernel-lsp").join("compile-cache"));
    let mut out = Vec::new();
    for plan in signature::plan(&model, settings, settings.compile.max_configs as usize) {
        let b = bundle::extract(src, tree, &plan.functions);
        for (i, v) in plan.variants.iter().enumerate() {
            let request = json!({
                "type": "compile",
                "source": b.source,
                "filename": filename,
                "kernel": plan.kernel,
                "signature": v.signature,
                "constexprs": v.constexprs,
                "divisible": v.divisible,
                "options": {"num_warps": v.num_warps, "num_stages": v.num_stages},
            });
            out.push(Job {
                kernel: plan.kernel.clone(),
                name_range: plan.name_range,
                variant: v.clone(),
                hidden_names: b.hidden_names.clone(),
                request,
                cache_dir: cache_dir.clone(),
                omitted: if i == 0 { plan.omitted } else { 0 },
            });
        }
    }
    out
}

/// The architecture compiled for, and where it came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Target {
    pub arch: u32,
    /// `"this machine's GPU"` or `"compile.target"`.
    pub from: &'static str,
}

impl Target {
    pub fn name(&self) -> String {
        format!("sm_{}", self.arch)
    }
}

/// A job and what came of it.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub job: Job,
    pub target: Target,
    pub triton: String,
    /// The worker's reply, or why there is none (the worker died twice, timed out).
    pub reply: Result<Value, String>,
    pub cached: bool,
    /// A compile error of a variant with assumptions that the compiler gave again, at the same
    /// place with the same message, with every assumption made otherwise: it is not theirs.
    pub not_from_assumptions: bool,
}

/// A pool of workers in one interpreter, and their cache.
pub struct Compiler {
    workers: Vec<tokio::sync::Mutex<Worker>>,
    memory: Mutex<HashMap<String, Value>>,
    timeout: Duration,
    target_setting: u32,
}

impl Compiler {
    /// `n` workers (at least one) around `python`, in the sandbox `setting` asks for.
    pub fn new(python: &str, settings: &Settings, n: usize) -> Result<Compiler, String> {
        let workers = (0..n.max(1))
            .map(|_| {
                Worker::new(python, settings.llm.sandbox, settings.llm.sandbox_memory_mb).map(tokio::sync::Mutex::new)
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Compiler {
            workers,
            memory: Mutex::new(HashMap::new()),
            timeout: Duration::from_secs_f64(settings.compile.timeout.max(1.0)),
            target_setting: crate::config::parse_target(&settings.compile.target).unwrap_or(90),
        })
    }

    /// The same for the editor: its workers compile at idle priority, on
    /// cores the editor's own threads do not want.
    pub(crate) fn in_background(python: &str, settings: &Settings, n: usize) -> Result<Compiler, String> {
        let mut c = Compiler::new(python, settings, n)?;
        for w in &mut c.workers {
            w.get_mut().background = true;
        }
        Ok(c)
    }

    /// Starts the first worker (if needed) and returns what it said: the Triton version and the GPU.
    pub async fn hello(&self) -> Result<Hello, String> {
        self.workers[0].lock().await.start().await
    }

    /// The GPU of this machine when there is one, else `compile.target`.
    pub fn target(&self, hello: &Hello) -> Target {
        match hello.capability {
            Some((major, minor)) => Target { arch: major * 10 + minor, from: "this machine's GPU" },
            None => Target { arch: self.target_setting, from: "compile.target" },
        }
    }

    /// Whether CPython's own parser accepts `source` (KL900 is tree-sitter's word).
    pub async fn python_parses(&self, source: &str) -> Result<bool, String> {
        let reply =
            self.workers[0].lock().await.request(json!({"type": "parse", "source": source}), self.timeout).await?;
        reply["valid"].as_bool().ok_or_else(|| format!("the worker did not parse: {reply}"))
    }

    /// Process ids of the running workers (for tests that kill one).
    pub async fn pids(&self) -> Vec<u32> {
        let mut out = Vec::new();
        for w in &self.workers {
            out.extend(w.lock().await.pid());
        }
        out
    }

    /// How many worker processes were started in all.
    pub async fn starts(&self) -> u32 {
        let mut n = 0;
        for w in &self.workers {
            n += w.lock().await.starts;
        }
        n
    }

    /// Compiles `jobs` over the workers, each result from the cache where it is there.
    pub async fn run(self: &Arc<Self>, jobs: Vec<Job>) -> Result<Vec<Outcome>, String> {
        let mut outcomes = self.run_once(jobs).await?;
        // A compile error under assumed types or values: compiled again with them made otherwise.
        let again: Vec<(usize, Job)> = outcomes
            .iter()
            .enumerate()
            .filter(|(_, o)| o.reply.as_ref().is_ok_and(|r| r["status"] == "error"))
            .flat_map(|(i, o)| {
                o.job.variant.other_assumptions().into_iter().map(move |v| {
                    let mut job = o.job.clone();
                    job.request["signature"] = json!(v.signature);
                    job.request["constexprs"] = json!(v.constexprs);
                    job.variant = v;
                    (i, job)
                })
            })
            .collect();
        if again.is_empty() {
            return Ok(outcomes);
        }
        let (index, jobs): (Vec<usize>, Vec<Job>) = again.into_iter().unzip();
        let others = self.run_once(jobs).await?;
        let place = |r: &Result<Value, String>| {
            r.as_ref().ok().filter(|r| r["status"] == "error").map(|r| {
                let e = &r["error"];
                (e["line"].clone(), e["column"].clone(), e["message"].clone())
            })
        };
        for i in index.iter().copied().collect::<std::collections::BTreeSet<usize>>() {
            let first = place(&outcomes[i].reply);
            outcomes[i].not_from_assumptions =
                index.iter().zip(&others).filter(|(j, _)| **j == i).all(|(_, o)| place(&o.reply) == first);
        }
        Ok(outcomes)
    }

    async fn run_once(self: &Arc<Self>, jobs: Vec<Job>) -> Result<Vec<Outcome>, String> {
        let hello = self.hello().await?;
        let target = self.target(&hello);
        let mut outcomes: Vec<Option<Outcome>> = vec![None; jobs.len()];
        let mut todo = Vec::new();
        for (i, job) in jobs.into_iter().enumerate() {
            let mut request = job.request.clone();
            request["target"] = json!({"backend": "cuda", "arch": target.arch, "warp_size": 32});
            let key = cache_key(&request, &hello.triton, worker::SCRIPT);
            match self.cached(&key, job.cache_dir.as_deref()) {
                Some(reply) => {
                    outcomes[i] = Some(Outcome {
                        job,
                        target,
                        triton: hello.triton.clone(),
                        reply: Ok(reply),
                        cached: true,
                        not_from_assumptions: false,
                    })
                }
                None => todo.push((i, job, request, key)),
            }
        }
        let queue = Arc::new(Mutex::new(todo));
        let mut set = tokio::task::JoinSet::new();
        for w in 0..self.workers.len() {
            let (me, queue, triton) = (Arc::clone(self), Arc::clone(&queue), hello.triton.clone());
            set.spawn(async move {
                let mut done = Vec::new();
                loop {
                    let next = queue.lock().ok().and_then(|mut q| if q.is_empty() { None } else { Some(q.remove(0)) });
                    let Some((i, job, request, key)) = next else { break };
                    let reply = me.workers[w].lock().await.request(request, me.timeout).await;
                    if let Ok(r) = &reply {
                        me.store(&key, r, job.cache_dir.as_deref());
                    }
                    done.push((
                        i,
                        Outcome {
                            job,
                            target,
                            triton: triton.clone(),
                            reply,
                            cached: false,
                            not_from_assumptions: false,
                        },
                    ));
                }
                done
            });
        }
        while let Some(done) = set.join_next().await {
            for (i, o) in done.map_err(|e| format!("a compile task failed: {e}"))? {
                outcomes[i] = Some(o);
            }
        }
        Ok(outcomes.into_iter().flatten().collect())
    }

    fn cached(&self, key: &str, dir: Option<&Path>) -> Option<Value> {
        if let Some(v) = self.memory.lock().ok().and_then(|m| m.get(key).cloned()) {
            return Some(v);
        }
        let text = std::fs::read_to_string(dir?.join(format!("{key}.json"))).ok()?;
        let v: Value = serde_json::from_str(&text).ok()?;
        if let Ok(mut m) = self.memory.lock() {
            m.insert(key.to_string(), v.clone());
        }
        Some(v)
    }

    /// Keeps a reply that the same input always gives (compiled, or a compile
    /// error); a refusal or a failure of the worker is asked again next time.
    fn store(&self, key: &str, reply: &Value, dir: Option<&Path>) {
        let deterministic = reply["ok"] == true && matches!(reply["status"].as_str(), Some("compiled" | "error"));
        if !deterministic {
            return;
        }
        if let Ok(mut m) = self.memory.lock() {
            m.insert(key.to_string(), reply.clone());
        }
        if let Some(dir) = dir {
            if std::fs::create_dir_all(dir).is_ok() {
                let tmp = dir.join(format!(".{key}.{}.tmp", std::process::id()));
                if std::fs::write(&tmp, reply.to_string()).is_ok() {
                    let _ = std::fs::rename(&tmp, dir.join(format!("{key}.json")));
                }
            }
        }
    }
}

fn cache_key(request: &Value, triton: &str, worker_script: &str) -> String {
    let mut r = request.clone();
    if let Some(o) = r.as_object_mut() {
        o.remove("id");
        // The file's path names where the bundle came from, not what it compiles.
        o.remove("filename");
    }
    // The worker's own text too: a kernel-lsp that places errors differently must not read the old answers.
    let worker = crate::bench::sha256::hex(worker_script.as_bytes());
    let text = json!({"schema": CACHE_SCHEMA, "triton": triton, "worker": worker, "request": r}).to_string();
    crate::bench::sha256::hex(text.as_bytes())
}

/// Resources of one compiled variant, as `check --compile` reports them.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Resources {
    pub kernel: String,
    pub config: String,
    pub target: String,
    pub triton: String,
    pub n_regs: Option<u64>,
    pub n_spills: Option<u64>,
    pub shared: Option<u64>,
    pub shared_limit: Option<u64>,
    pub local: Option<u64>,
    pub stack: Option<u64>,
    pub num_warps: Option<u64>,
    pub num_stages: Option<u64>,
    pub signature: std::collections::BTreeMap<String, String>,
    pub constexprs: std::collections::BTreeMap<String, Value>,
    pub assumed: Vec<String>,
    pub cached: bool,
    #[serde(skip)]
    pub name_range: TextRange,
}

impl Resources {
    /// "32 registers, 0 spills, 0 / 232448 B shared, 0 B local".
    pub fn summary(&self) -> String {
        let n = |v: Option<u64>| v.map_or("?".to_string(), |v| v.to_string());
        let limit = self.shared_limit.map(|l| format!(" / {l}")).unwrap_or_default();
        let spills = match (self.n_spills, self.stack) {
            (None, Some(frame)) if frame > 0 => format!("? spills (a {frame} B stack frame)"),
            (spills, _) => format!("{} spills", n(spills)),
        };
        format!("{} registers, {spills}, {}{limit} B shared, {} B local", n(self.n_regs), n(self.shared), n(self.local))
    }
}

/// The shared memory a block may use on `arch` (opt-in maximum), from the GPU table.
pub fn shared_limit(arch: u32) -> Option<u64> {
    crate::config::GPUS.iter().find(|g| g.sm == arch).map(|g| g.smem_per_block)
}

/// The diagnostics and resources of a file's outcomes.
pub fn report(src: &str, outcomes: &[Outcome]) -> (Vec<Diagnostic>, Vec<Resources>) {
    let index = LineIndex::new(src);
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    let mut resources = Vec::new();
    for o in outcomes {
        let where_ = format!("Triton {}, {} ({})", o.triton, o.target.name(), o.target.from);
        let v = &o.job.variant;
        let reply = match &o.reply {
            Ok(r) => r,
            Err(why) => {
                push(&mut diagnostics, note(o, format!("`{}` was not compiled: {why}", o.job.kernel), Severity::Info));
                continue;
            }
        };
        if reply["ok"] != true {
            let why = reply["message"].as_str().unwrap_or("the compile worker refused the request");
            push(&mut diagnostics, note(o, format!("`{}` was not compiled: {why}", o.job.kernel), Severity::Info));
            continue;
        }
        match reply["status"].as_str() {
            Some("compiled") => {
                let r = &reply["resources"];
                let shared = r["shared"].as_u64();
                let limit = shared_limit(o.target.arch);
                resources.push(Resources {
                    kernel: o.job.kernel.clone(),
                    config: v.label.clone(),
                    target: o.target.name(),
                    triton: o.triton.clone(),
                    n_regs: r["n_regs"].as_u64(),
                    n_spills: r["n_spills"].as_u64(),
                    shared,
                    shared_limit: limit,
                    local: r["local"].as_u64(),
                    stack: r["stack"].as_u64(),
                    num_warps: r["num_warps"].as_u64(),
                    num_stages: r["num_stages"].as_u64(),
                    signature: v.signature.clone(),
                    constexprs: v.constexprs.clone(),
                    assumed: v.assumed.clone(),
                    cached: o.cached,
                    name_range: o.job.name_range,
                });
                if let (Some(s), Some(l)) = (shared, limit) {
                    if s > l {
                        let mut d = note(
                            o,
                            format!(
                                "`{}` needs {s} B of shared memory ({}), over the {l} B a block may use on {}: \
                                 smaller blocks or fewer stages ({where_}){}",
                                o.job.kernel,
                                v.label,
                                o.target.name(),
                                assumptions(v)
                            ),
                            if v.assumed.is_empty() { Severity::Error } else { Severity::Warning },
                        );
                        d.code = "KL006".into();
                        d.name = "shared-memory-over-limit".into();
                        push(&mut diagnostics, d);
                    }
                }
            }
            Some(status @ ("error" | "failure" | "bundle-error")) => {
                let e = &reply["error"];
                let message = e["message"].as_str().unwrap_or("compile error").trim().to_string();
                let undefined = undefined_name(&message).filter(|n| bound_in_file(src, n)).map(str::to_string);
                let hidden = o
                    .job
                    .hidden_names
                    .iter()
                    .find(|n| message.contains(&format!("{n} is not defined")) || message.contains(&format!("'{n}'")))
                    .or(undefined.as_ref());
                let line = e["line"].as_u64().map(|l| l.saturating_sub(1) as usize);
                let column = e["column"].as_u64().map(|c| c.saturating_sub(1) as usize).unwrap_or(0);
                let start = match line {
                    Some(l) if l < index.line_count() => index.offset(src, l, column, ColumnUnit::Utf8),
                    _ => o.job.name_range.start,
                };
                let end = src[start..].find('\n').map_or(src.len(), |e| start + e);
                let end = start + src[start..end].trim_end().len();
                let (severity, text) = match (status, hidden) {
                    ("error", Some(n)) => (
                        Severity::Warning,
                        format!(
                            "{message} ({where_}): `{n}` is bound by code the compiler is not shown (only jit \
                             functions, constants and triton/math imports are)"
                        ),
                    ),
                    ("error", None) if v.assumed.is_empty() => {
                        (Severity::Error, format!("{message} ({where_}, {})", v.label))
                    }
                    ("error", None) if o.not_from_assumptions => (
                        Severity::Error,
                        format!("{message} ({where_}, {}; the same with other types and values assumed)", v.label),
                    ),
                    ("error", None) => {
                        (Severity::Warning, format!("{message} ({where_}, {}){}", v.label, assumptions(v)))
                    }
                    ("bundle-error", _) => (
                        Severity::Info,
                        format!("the module-level constants the kernel reads do not run on their own: {message}"),
                    ),
                    _ => (
                        if v.assumed.is_empty() { Severity::Warning } else { Severity::Info },
                        format!(
                            "`{}` could not be compiled ({where_}, {}): {message}{}",
                            o.job.kernel,
                            v.label,
                            assumptions(v)
                        ),
                    ),
                };
                push(
                    &mut diagnostics,
                    Diagnostic {
                        code: "KL901".into(),
                        name: "compile-error".into(),
                        severity,
                        range: TextRange::new(start, end.max(start)),
                        message: text.into(),
                        related: Vec::new(),
                        fix: None,
                    },
                );
            }
            _ => {}
        }
    }
    diagnostics.sort();
    (diagnostics, resources)
}

/// The compile errors of a file the compiler is sure of (KL901 at error severity: none that
/// may come from an assumed type), from its outcomes: what refuses an LLM answer or a batch
/// candidate before anything runs it.
pub(crate) fn sure_errors(src: &str, outcomes: &[Outcome]) -> Vec<Diagnostic> {
    let (diagnostics, _) = report(src, outcomes);
    diagnostics.into_iter().filter(|d| d.code == "KL901" && d.severity == Severity::Error).collect()
}

/// `X` of a "X is not defined" compile error.
fn undefined_name(message: &str) -> Option<&str> {
    let end = message.find(" is not defined")?;
    let start = message[..end].rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
    Some(&message[start..end]).filter(|n| !n.is_empty())
}

/// Whether the file binds `name` itself (an assignment, a `def`, an import): then a "not
/// defined" says only that the compiler was not shown that code, not that the name is missing.
fn bound_in_file(src: &str, name: &str) -> bool {
    src.lines().map(str::trim_start).any(|l| {
        let word = |w: &str| w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_')) == name;
        l.strip_prefix(name)
            .is_some_and(|rest| rest.trim_start().starts_with('=') && !rest.trim_start().starts_with("=="))
            || l.strip_prefix("def ").is_some_and(|rest| rest.starts_with(name) && rest[name.len()..].starts_with('('))
            || ((l.starts_with("import ") || l.starts_with("from ")) && l.split_whitespace().any(word))
    })
}

/// The static findings the compiler settles, from a file's outcomes: in a
/// kernel that compiled in every variant, with the file's own constexpr
/// values, the arange bounds were accepted (KL004 is dropped there) and the
/// shared memory is the compiler's figure (KL006's estimate for it is
/// dropped; `report` gives the compiler's KL006 where it is over the limit).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settled {
    /// Name ranges of the kernels that compiled in every variant.
    pub compiled: Vec<TextRange>,
    /// Whole `def` ranges of those of them whose constexprs were all read from the file.
    pub bounds_accepted: Vec<TextRange>,
    /// CPython's own parser accepts the file: KL900 (tree-sitter's) is dropped.
    pub python_parses: bool,
    /// Where the compiler reported a compile error (KL901, whatever its severity): a KL011 on the same line is confirmed.
    pub errors: Vec<TextRange>,
}

pub fn settled(outcomes: &[Outcome], model_defs: &[(TextRange, TextRange)]) -> Settled {
    let mut s = Settled::default();
    let mut by_kernel: HashMap<TextRange, Vec<&Outcome>> = HashMap::new();
    for o in outcomes {
        by_kernel.entry(o.job.name_range).or_default().push(o);
    }
    for (name_range, os) in by_kernel {
        let all_compiled = os.iter().all(|o| o.reply.as_ref().is_ok_and(|r| r["status"] == "compiled"));
        if !all_compiled {
            continue;
        }
        s.compiled.push(name_range);
        if os.iter().all(|o| !o.job.variant.constexprs_assumed) {
            if let Some((_, def)) = model_defs.iter().find(|(n, _)| *n == name_range) {
                s.bounds_accepted.push(*def);
            }
        }
    }
    s
}

impl Settled {
    /// Whether a static diagnostic still stands.
    pub fn keeps(&self, d: &Diagnostic) -> bool {
        match d.code.as_ref() {
            "KL900" => !self.python_parses,
            "KL004" => !self.bounds_accepted.iter().any(|def| def.contains_range(d.range)),
            // The estimate names its kernel in a related note; the compiler's own KL006 has none.
            "KL006" => !d.related.iter().any(|r| self.compiled.contains(&r.range)),
            // A block shape the compiler accepted for the constexprs the file gives is no mistake.
            "KL011" => !self.bounds_accepted.iter().any(|def| def.contains_range(d.range)),
            _ => true,
        }
    }

    /// A static diagnostic as it stands once the compiler had its say: None
    /// when withdrawn ([`Self::keeps`]); a KL011 on a line where the compiler
    /// reported an error says it is confirmed.
    pub fn settle(&self, text: &str, d: &Diagnostic) -> Option<Diagnostic> {
        if !self.keeps(d) {
            return None;
        }
        let line_of = |at: usize| text.get(..at.min(text.len())).map_or(0, |t| t.matches('\n').count());
        let mut d = d.clone();
        if d.code == "KL011" && self.errors.iter().any(|e| line_of(e.start) == line_of(d.range.start)) {
            d.message = format!("{}; the compiler reports an error on this line too", d.message).into();
        }
        Some(d)
    }
}

/// The (name range, `def` range) of each kernel of a file, for [`settled`].
pub fn kernel_ranges(src: &str, tree: &Forest) -> Vec<(TextRange, TextRange)> {
    let model = FileModel::build(src, tree);
    model.kernels.iter().map(|k| (k.name_range, TextRange::new(k.node.start_byte(), k.node.end_byte()))).collect()
}

/// " — it may come from what was assumed: `x_ptr`: a pointer to fp32, assumed".
fn assumptions(v: &Variant) -> String {
    if v.assumed.is_empty() {
        String::new()
    } else {
        format!("; it may come from what was assumed: {}", v.assumed.join("; "))
    }
}

fn note(o: &Outcome, message: String, severity: Severity) -> Diagnostic {
    Diagnostic {
        code: "KL901".into(),
        name: "compile-error".into(),
        severity,
        range: o.job.name_range,
        message: message.into(),
        related: Vec::new(),
        fix: None,
    }
}

/// Adds `d` unless the same finding is there (several variants hit the same
/// line); the more severe one, from a variant without assumptions, is kept.
fn push(out: &mut Vec<Diagnostic>, d: Diagnostic) {
    let first_sentence = |m: &str| m.split(" (Triton").next().unwrap_or(m).to_string();
    match out
        .iter_mut()
        .find(|x| x.code == d.code && x.range == d.range && first_sentence(&x.message) == first_sentence(&d.message))
    {
        Some(x) if d.severity < x.severity => *x = d,
        Some(_) => {}
        None => out.push(d),
    }
}

/// The interpreter the compile worker runs in: the `python` setting, else the
/// active virtualenv, else the project's `.venv`/`venv`, else `python3` (as `bench`).
pub fn resolve_python(file: &Path, settings: &Settings) -> String {
    if let Some(p) = &settings.python {
        return p.clone();
    }
    if let Some(venv) = std::env::var_os("VIRTUAL_ENV") {
        let p = Path::new(&venv).join("bin").join("python");
        if p.is_file() {
            return p.display().to_string();
        }
    }
    if let Ok(file) = std::path::absolute(file) {
        let root = crate::bench::history::project_root(&file);
        let mut dir = file.parent();
        while let Some(d) = dir {
            for venv in [".venv", "venv"] {
                let p = d.join(venv).join("bin").join("python");
                if p.is_file() {
                    return p.display().to_string();
                }
            }
            if d == root {
                break;
            }
            dir = d.parent();
        }
    }
    "python3".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnostic::Related;

    fn diag(code: &'static str, range: TextRange, related: Option<TextRange>) -> Diagnostic {
        Diagnostic {
            code: code.into(),
            name: "x".into(),
            severity: Severity::Error,
            range,
            message: "".into(),
            related: related.map(|r| Related { range: r, message: "".into() }).into_iter().collect(),
            fix: None,
        }
    }

    #[test]
    fn a_name_the_file_binds_elsewhere_is_hidden_not_missing() {
        let src = "from mylib import ext, helper as h2\nif FAST:\n    pick = fast\ndef local(x):\n    pass\n";
        assert_eq!(undefined_name("NameError('pick is not defined')"), Some("pick"));
        assert_eq!(undefined_name("name 'x' is not found"), None);
        for bound in ["ext", "h2", "pick", "local"] {
            assert!(bound_in_file(src, bound), "{bound}");
        }
        for free in ["nothing", "loc", "FAS"] {
            assert!(!bound_in_file(src, free), "{free}");
        }
    }

    #[test]
    fn the_cache_key_changes_with_the_worker_and_not_with_the_file_s_path() {
        let req = json!({"type": "compile", "id": 1, "filename": "/a.py", "source": "x", "kernel": "k"});
        let moved = json!({"type": "compile", "id": 2, "filename": "/b.py", "source": "x", "kernel": "k"});
        assert_eq!(cache_key(&req, "3.9.0", "worker v1"), cache_key(&moved, "3.9.0", "worker v1"));
        assert_ne!(cache_key(&req, "3.9.0", "worker v1"), cache_key(&req, "3.9.0", "worker v2"));
        assert_ne!(cache_key(&req, "3.9.0", "worker v1"), cache_key(&req, "3.6.0", "worker v1"));
    }

    #[test]
    fn the_compiler_settles_kl004_in_a_kernel_it_accepted_and_kl006_of_a_kernel_it_measured() {
        let (name, def, other) = (TextRange::new(10, 20), TextRange::new(0, 100), TextRange::new(200, 300));
        let s = Settled { compiled: vec![name], bounds_accepted: vec![def], ..Default::default() };
        assert!(!s.keeps(&diag("KL004", TextRange::new(50, 60), None)), "inside the accepted kernel");
        assert!(s.keeps(&diag("KL004", TextRange::new(250, 260), None)), "another kernel");
        assert!(!s.keeps(&diag("KL006", TextRange::new(400, 410), Some(name))), "the estimate of a compiled kernel");
        assert!(s.keeps(&diag("KL006", TextRange::new(400, 410), Some(other))));
        assert!(s.keeps(&diag("KL006", TextRange::new(400, 410), None)), "the compiler's own figure");
        assert!(s.keeps(&diag("KL900", TextRange::new(0, 1), None)));
        assert!(!Settled { python_parses: true, ..s.clone() }.keeps(&diag("KL900", TextRange::new(0, 1), None)));
        assert!(s.keeps(&diag("KL001", TextRange::new(50, 60), None)));
    }

    #[test]
    fn the_compiler_withdraws_kl011_in_a_kernel_it_accepted_and_confirms_it_at_its_error() {
        let text = "def k():\n    a\n    b\n\ndef j():\n    c\n";
        let (k, j) = (TextRange::new(0, 23), TextRange::new(24, text.len()));
        let on_c = TextRange::new(text.find('c').unwrap(), text.find('c').unwrap() + 1);
        let s = Settled { bounds_accepted: vec![k], errors: vec![on_c], ..Default::default() };
        let in_k = diag("KL011", TextRange::new(13, 14), None);
        assert_eq!(s.settle(text, &in_k), None, "the kernel compiled for the file's constexprs");
        let in_j = diag("KL011", on_c, None);
        let kept = s.settle(text, &in_j).expect("j did not compile");
        assert!(kept.message.ends_with("the compiler reports an error on this line too"), "{}", kept.message);
        assert!(j.contains_range(kept.range));
        let elsewhere = Settled { errors: vec![TextRange::new(13, 14)], ..Default::default() };
        assert_eq!(elsewhere.settle(text, &in_j).map(|d| d.message), Some("".into()), "another line confirms nothing");
    }
}
