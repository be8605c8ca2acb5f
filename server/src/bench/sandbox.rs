//! The one way code kernel-lsp did not write itself, an LLM's answer, is run:
//! inside a bubblewrap (`bwrap`) sandbox that holds when the server runs as
//! root and when it runs as a user. Every stage that imports an answer (its
//! benchmark, the ranking, repair verification) goes through
//! [`Sandbox::command`], reached only through a [`super::BenchRequest`] whose
//! `sandbox` is set; the rewrite pipeline builds every request it runs from
//! one function that sets it.
//!
//! What the sandboxed process gets (see docs/security.md for the threat model):
//!
//! - a new user namespace with no capabilities, no nested user namespaces;
//!   new PID (with its own `/proc`: the server and its processes are
//!   invisible), network (only a loopback with nothing on it), IPC, UTS and
//!   cgroup namespaces; its own session; killed with the server;
//! - a root of read-only binds of only what the interpreter needs: the system
//!   directories (`/usr`, `/lib*`, `/bin`, `/sbin`), a few files of `/etc`,
//!   the interpreter's prefixes and its `sys.path`, the harness and the
//!   reference file, `/sys` read-only, the GPU device nodes;
//! - one writable directory, private to this sandbox (also `HOME`, `TMPDIR`,
//!   Triton's cache), and a private `/dev/shm`; the rest is read-only, the
//!   root bwrap builds included. The directory is removed on every exit
//!   path (drop, cancel, Ctrl-C and SIGTERM through [`remove_all_live`]);
//! - an environment built from an allow list, never inherited: bwrap itself
//!   starts with that environment, so no process in the sandbox ever held the
//!   API key;
//! - limits: no core files, a file-size cap, a data-segment cap (memory), and
//!   the benchmark's timeout, which kills the whole PID namespace.
//!
//! With `llm.sandbox = "none"` (said explicitly) answers run as the user, but
//! still in a private temp directory and with the allow-listed environment.
//! Without a working bwrap and without that setting, nothing LLM-written runs.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

pub use crate::config::SandboxSetting;

/// Seconds the interpreter may take to say where it lives.
const PROBE_SECS: u64 = 60;

/// A sandbox for one rewrite: its private directory (removed when dropped)
/// and how it starts processes.
#[derive(Debug)]
pub struct Sandbox {
    /// `bwrap` or `none`.
    pub kind: &'static str,
    /// One line for the rewrite output: which sandbox ran, and what it allows.
    pub description: String,
    dir: PathBuf,
    /// The interpreter as the sandbox runs it (absolute).
    python: String,
    /// bwrap's arguments before the command (`None`: no bwrap).
    bwrap: Option<Vec<String>>,
    /// The whole environment of the started process.
    env: Vec<(String, String)>,
    limits: Limits,
    /// Values never to repeat (the API key), redacted from what the sandbox printed.
    secrets: Vec<String>,
}

/// Resource limits of a sandboxed process.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest file it may write, in bytes.
    pub file_bytes: u64,
    /// Largest data segment (heap and private writable mappings), in bytes.
    pub data_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { file_bytes: 1 << 30, data_bytes: 32 << 30 }
    }
}

impl Sandbox {
    /// The directory the sandboxed code may write to; candidates are written here.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    #[cfg(test)]
    pub(crate) fn is_sandboxed(&self) -> bool {
        self.bwrap.is_some()
    }

    /// Values (the API key) that no text out of this sandbox may carry.
    pub(crate) fn keep_secret(&mut self, secret: String) {
        if !secret.is_empty() {
            self.secrets.push(secret);
        }
    }

    /// `text` (printed by sandboxed code) with the secrets and anything key-shaped redacted.
    pub(crate) fn redact(&self, text: &str) -> String {
        redact(text, &self.secrets)
    }

    /// A fresh folder for one run, the only place that run may write.
    fn new_run_dir(&self) -> PathBuf {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let run = self.dir.join("runs").join(N.fetch_add(1, Ordering::Relaxed).to_string());
        for sub in ["triton", "cache", "inductor"] {
            let _ = std::fs::create_dir_all(run.join(sub));
        }
        run
    }

    /// Writes a file the sandboxed code will read into the sandbox's directory.
    pub fn write(&self, name: &str, text: &str) -> std::io::Result<PathBuf> {
        let path = self.dir.join("work").join(name);
        std::fs::create_dir_all(path.parent().unwrap_or(&self.dir))?;
        std::fs::write(&path, text)?;
        Ok(path)
    }

    /// The command that runs `python args...` in this sandbox, where
    /// `reads` (the harness, the reference) are bound read-only at their paths.
    /// The caller adds stdio and spawns it.
    pub fn command(&self, args: &[String], reads: &[PathBuf]) -> tokio::process::Command {
        let mut cmd;
        let mut run: Option<PathBuf> = None;
        match &self.bwrap {
            Some(prefix) => {
                cmd = tokio::process::Command::new(bwrap_path());
                cmd.args(prefix);
                // Each run writes only to a fresh folder of its own: what one
                // answer leaves behind (a usercustomize.py, a poisoned cache, an
                // edited candidate) cannot reach a later run of the rewrite.
                run = Some(self.new_run_dir());
                if let Some(r) = run.as_ref().map(|r| r.display().to_string()) {
                    cmd.args(["--bind", &r, &r, "--chdir", &r]);
                }
                for r in reads {
                    if let Ok(abs) = std::path::absolute(r) {
                        let s = abs.display().to_string();
                        cmd.args(["--ro-bind-try", &s, &s]);
                    }
                }
                // The root bwrap built is read-only once everything is bound:
                // the folders it made for the binds hold nothing to write to.
                cmd.args(["--remount-ro", "/", "--"]).arg(&self.python).args(args);
            }
            None => {
                cmd = tokio::process::Command::new(&self.python);
                cmd.args(args).current_dir(&self.dir);
            }
        }
        cmd.env_clear().envs(self.env.iter().map(|(k, v)| (k, v)));
        if let Some(run) = &run {
            cmd.envs(own_folders(run));
        }
        let limits = self.limits;
        // SAFETY: the closure runs in the forked child before exec and calls
        // only async-signal-safe functions (setrlimit, prctl, getppid, _exit).
        unsafe {
            cmd.pre_exec(move || {
                let set = |what, bytes: u64| {
                    let lim = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
                    libc::setrlimit(what, &lim)
                };
                set(libc::RLIMIT_CORE, 0);
                set(libc::RLIMIT_FSIZE, limits.file_bytes);
                set(libc::RLIMIT_DATA, limits.data_bytes);
                // Gone with the server, even when it is killed outright.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        cmd
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        forget_live(&self.dir);
    }
}

/// Starts `cmd`'s process below the editor's priority: with `idle`, only on
/// a core nothing else wants (`SCHED_IDLE`: any ordinary thread that wakes
/// takes the core at once); otherwise, or where that is refused, at `nice`.
pub(crate) fn below_the_editor(cmd: &mut tokio::process::Command, idle: bool, nice: i32) {
    // SAFETY: `nice` and `sched_setscheduler` are async-signal-safe system
    // calls; the closure runs in the child before exec.
    unsafe {
        cmd.pre_exec(move || {
            let param = libc::sched_param { sched_priority: 0 };
            if !idle || libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
                libc::nice(nice);
            }
            Ok(())
        });
    }
}

/// The data limit for `setting_mb`, never above three quarters of this
/// machine's memory: an answer that allocates without end meets its limit
/// before the machine's OOM killer picks a victim (the server, say).
pub(crate) fn memory_limit(setting_mb: u64) -> u64 {
    let asked = setting_mb.saturating_mul(1 << 20);
    // SAFETY: sysinfo fills the struct it is given and has no other effect.
    let total = unsafe {
        let mut info: libc::sysinfo = std::mem::zeroed();
        match libc::sysinfo(&mut info) {
            0 => (info.totalram as u64).saturating_mul(info.mem_unit as u64),
            _ => 0,
        }
    };
    match total {
        0 => asked,
        t => asked.min(t / 4 * 3),
    }
}

// ---------------------------------------------------------------- live directories

fn live() -> &'static Mutex<Vec<PathBuf>> {
    static LIVE: OnceLock<Mutex<Vec<PathBuf>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

fn forget_live(dir: &Path) {
    if let Ok(mut l) = live().lock() {
        l.retain(|d| d != dir);
    }
}

/// Removes every sandbox directory still alive: the signal handlers call this
/// before the process exits, where no destructor will run.
pub(crate) fn remove_all_live() {
    let dirs = match live().lock() {
        Ok(mut l) => std::mem::take(&mut *l),
        Err(_) => return,
    };
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Installs the SIGINT/SIGTERM/SIGHUP handling of a process that may run
/// sandboxes: live sandbox directories are removed, then the process exits
/// with 128 + the signal (children die with it: `PR_SET_PDEATHSIG`). Call
/// inside a tokio runtime.
pub(crate) fn exit_cleanly_on_signals() {
    use tokio::signal::unix::{signal, SignalKind};
    for (kind, code) in [(SignalKind::interrupt(), 130), (SignalKind::terminate(), 143), (SignalKind::hangup(), 129)] {
        let Ok(mut s) = signal(kind) else { continue };
        tokio::spawn(async move {
            if s.recv().await.is_some() {
                remove_all_live();
                std::process::exit(code);
            }
        });
    }
}

// ---------------------------------------------------------------- preparing

/// The allow list of variables passed through to sandboxed code, when set
/// (nothing else of the server's environment reaches it).
const PASS_THROUGH: &[&str] = &[
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "CUDA_HOME",
    "CUDA_PATH",
    "NVIDIA_VISIBLE_DEVICES",
    "NVIDIA_DRIVER_CAPABILITIES",
    "LD_LIBRARY_PATH",
    "TRITON_PTXAS_PATH",
    "TRITON_CUOBJDUMP_PATH",
    "TRITON_NVDISASM_PATH",
    "TRITON_LIBCUDA_PATH",
    "TRITON_LIBDEVICE_PATH",
    "TORCH_CUDA_ARCH_LIST",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "PYTHONPATH",
    "PYTHONHASHSEED",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
];

/// System directories bound read-only (a symlink stays a symlink).
const SYSTEM_DIRS: &[&str] = &["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"];

/// Files of `/etc` that the dynamic linker, the C compiler Triton calls and
/// Python's `getpass`/`locale` read; nothing with credentials.
const ETC_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/alternatives",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/os-release",
];

/// Namespaces, capabilities, the session and the parent: the part of every
/// bwrap command that does not depend on what is bound.
#[rustfmt::skip]
const ISOLATION: &[&str] = &[
    "--unshare-user",
    "--disable-userns",
    "--unshare-pid",
    "--unshare-net",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--cap-drop", "ALL",
    "--die-with-parent",
    "--new-session",
    "--hostname", "sandbox",
    "--proc", "/proc",
    "--dev", "/dev",
    "--tmpfs", "/dev/shm",
    "--ro-bind-try", "/sys", "/sys",
];

/// The part of the root that every sandbox has: the system directories and
/// `/etc` files that exist here, and the GPU device nodes.
fn system_binds() -> Vec<String> {
    let mut args = Vec::new();
    for d in SYSTEM_DIRS.iter().chain(ETC_FILES) {
        let p = Path::new(d);
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(p) {
                    args.extend(["--symlink".to_string(), target.display().to_string(), d.to_string()]);
                }
            }
            Ok(_) => args.extend(["--ro-bind".to_string(), d.to_string(), d.to_string()]),
            Err(_) => {}
        }
    }
    for node in gpu_nodes() {
        args.extend(["--dev-bind".to_string(), node.clone(), node]);
    }
    args
}

/// bwrap as found on the server's `PATH` (the sandbox's own environment has
/// no say in which program builds it).
fn bwrap_path() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| on_path("bwrap")).clone()
}

/// A program name as the server's `PATH` resolves it (a path is kept as it is):
/// the sandbox's environment is an allow list with a `PATH` of its own.
fn on_path(program: &str) -> PathBuf {
    if program.contains('/') {
        return PathBuf::from(program);
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(program))
}

/// Whether bwrap is installed and can start this sandbox here (user
/// namespaces permitted); the same namespaces and root as a real run.
pub fn bwrap_works() -> Result<(), String> {
    static CHECK: OnceLock<Result<(), String>> = OnceLock::new();
    CHECK
        .get_or_init(|| {
            let out = std::process::Command::new(bwrap_path())
                .args(ISOLATION)
                .args(system_binds())
                .args(["--remount-ro", "/", "--", "true"])
                .env_clear()
                .output()
                .map_err(|e| format!("bwrap cannot be run ({e})"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!(
                    "bwrap cannot start a sandbox here: {}. It needs unprivileged user namespaces \
                     (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0)",
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
        })
        .clone()
}

/// Where an interpreter lives: what the sandbox must bind for it to run.
#[derive(Debug, Clone)]
struct PythonHome {
    executable: String,
    paths: Vec<PathBuf>,
}

/// Asks `python` (the user's own interpreter, not LLM code) where it lives, once per interpreter.
fn python_home(python: &str, env: &[(String, String)]) -> Result<PythonHome, String> {
    static CACHE: OnceLock<Mutex<std::collections::HashMap<String, PythonHome>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(h) = cache.lock().ok().and_then(|c| c.get(python).cloned()) {
        return Ok(h);
    }
    const PROBE: &str = "import json, os, sys, sysconfig\n\
        paths = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,\n\
                 os.path.dirname(os.path.realpath(sys.executable))] + [p for p in sys.path if p]\n\
        paths += [v for v in sysconfig.get_paths().values() if v]\n\
        print(json.dumps({'executable': sys.executable, 'paths': paths}))\n";
    let mut child = std::process::Command::new(python)
        .args(["-c", PROBE])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run the Python {python}: {e}"))?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(PROBE_SECS);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                return Err(format!("the Python {python} did not say where it lives within {PROBE_SECS} s"));
            }
        }
    }
    let out = child.wait_with_output().map_err(|e| format!("the Python {python}: {e}"))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|_| format!("the Python {python} did not run: {}", String::from_utf8_lossy(&out.stderr).trim()))?;
    let executable = v["executable"].as_str().unwrap_or(python).to_string();
    let mut paths: Vec<PathBuf> = v["paths"]
        .as_array()
        .map(|a| a.iter().filter_map(|p| p.as_str()).map(PathBuf::from).collect())
        .unwrap_or_default();
    if let Some(dir) = Path::new(&executable).parent() {
        paths.push(dir.to_path_buf());
    }
    let home = PythonHome { executable, paths: outermost(paths) };
    if let Ok(mut c) = cache.lock() {
        c.insert(python.to_string(), home.clone());
    }
    Ok(home)
}

/// The existing absolute paths outside the system directories, without
/// those inside another of them.
fn outermost(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let system = |p: &Path| SYSTEM_DIRS.iter().any(|d| p.starts_with(d)) || p == Path::new("/");
    let mut kept: Vec<PathBuf> =
        paths.into_iter().filter(|p| p.is_absolute() && p.exists() && !system(p) && !p.starts_with("/proc")).collect();
    kept.sort();
    kept.dedup();
    let all = kept.clone();
    kept.retain(|p| !all.iter().any(|q| q != p && p.starts_with(q)));
    kept
}

/// The environment sandboxed code starts with: the allow list, the sandbox's
/// own directories, a `PATH` of the interpreter's folder and the system's.
fn environment(dir: &Path, python_dir: Option<&Path>) -> Vec<(String, String)> {
    let mut path = String::new();
    if let Some(p) = python_dir {
        path.push_str(&p.display().to_string());
        path.push(':');
    }
    path.push_str("/usr/local/bin:/usr/bin:/bin");
    let mut env = vec![
        ("PATH".to_string(), path),
        ("PYTHONUNBUFFERED".to_string(), "1".to_string()),
        ("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string()),
        // No user site-packages: nothing a run wrote under HOME is imported at start-up.
        ("PYTHONNOUSERSITE".to_string(), "1".to_string()),
        ("USER".to_string(), "sandbox".to_string()),
    ];
    env.extend(own_folders(dir));
    for var in PASS_THROUGH {
        if let Ok(v) = std::env::var(var) {
            env.push((var.to_string(), v));
        }
    }
    env
}

/// `HOME`, `TMPDIR` and the caches, all in `dir`.
fn own_folders(dir: &Path) -> Vec<(String, String)> {
    let d = dir.display().to_string();
    vec![
        ("HOME".to_string(), d.clone()),
        ("TMPDIR".to_string(), d.clone()),
        ("XDG_CACHE_HOME".to_string(), format!("{d}/cache")),
        ("TRITON_CACHE_DIR".to_string(), format!("{d}/triton")),
        ("TRITON_HOME".to_string(), d.clone()),
        ("TORCHINDUCTOR_CACHE_DIR".to_string(), format!("{d}/inductor")),
    ]
}

/// The sandbox `setting` asks for, around the interpreter `python`.
/// `None` (unset): bwrap, and an error that says how to proceed when it cannot start.
pub fn prepare(setting: Option<SandboxSetting>, python: &str, limits: Limits) -> Result<Sandbox, String> {
    let python = &on_path(python).display().to_string();
    if setting != Some(SandboxSetting::None) {
        if let Err(e) = bwrap_works() {
            return Err(format!(
                "LLM answers are run only inside the sandbox, and {e}. Install bubblewrap and allow user \
                 namespaces, or set llm.sandbox = \"none\" to run answers with your own rights"
            ));
        }
    }
    let dir = private_dir()?;
    // From here on the directory belongs to a guard that removes it on any error.
    let mut sandbox = Sandbox {
        kind: "none",
        description: "none: answers run with your rights (llm.sandbox = \"none\")".to_string(),
        python: python.to_string(),
        env: Vec::new(),
        dir,
        bwrap: None,
        limits,
        secrets: Vec::new(),
    };
    let pydir = |exe: &str| Path::new(exe).parent().map(Path::to_path_buf);
    if setting == Some(SandboxSetting::None) {
        let home = python_home(python, &environment(&sandbox.dir, None));
        sandbox.python = home.map(|h| h.executable).unwrap_or_else(|_| python.to_string());
        sandbox.env = environment(&sandbox.dir, pydir(&sandbox.python).as_deref());
        return Ok(sandbox);
    }
    let home = python_home(python, &environment(&sandbox.dir, None))?;
    for sub in ["work", "runs"] {
        std::fs::create_dir_all(sandbox.dir.join(sub))
            .map_err(|e| format!("cannot create {}: {e}", sandbox.dir.display()))?;
    }
    let mut args: Vec<String> = ISOLATION.iter().map(|s| s.to_string()).collect();
    args.extend(system_binds());
    for p in &home.paths {
        let s = p.display().to_string();
        args.extend(["--ro-bind".to_string(), s.clone(), s]);
    }
    // The sandbox's folder (the candidates) is read-only; each run binds its own folder writable.
    let d = sandbox.dir.display().to_string();
    args.extend(["--ro-bind".to_string(), d.clone(), d.clone()]);
    sandbox.kind = "bwrap";
    sandbox.description = format!(
        "bwrap: own user, PID and network namespaces, no capabilities, a read-only root of the system and \
         the interpreter, each run writes only to a fresh folder under {d}"
    );
    sandbox.env = environment(&sandbox.dir, pydir(&home.executable).as_deref());
    sandbox.python = home.executable;
    sandbox.bwrap = Some(args);
    Ok(sandbox)
}

/// A fresh directory only this user can enter, registered for removal on signals.
fn private_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    for _ in 0..16 {
        let dir = base.join(format!("kernel-lsp-sandbox-{}-{:016x}", std::process::id(), random_u64()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => {
                if let Ok(mut l) = live().lock() {
                    l.push(dir.clone());
                }
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create a sandbox directory in {}: {e}", base.display())),
        }
    }
    Err(format!("cannot create a sandbox directory in {}", base.display()))
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    h.finish()
}

/// `/dev/nvidia*`, `/dev/nvidia-caps` and `/dev/dri`, where present.
fn gpu_nodes() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/dev") {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with("nvidia") || name == "dri" {
                out.push(format!("/dev/{name}"));
            }
        }
    }
    out.sort();
    out
}

// ---------------------------------------------------------------- redaction

/// Replaces every occurrence of the `secrets` and anything shaped like a
/// credential (`sk-…`, `ghp_…`, `hf_…`, `AKIA…`, `Bearer …`, `NAME_KEY=…`,
/// long mixed letter-and-digit tokens) with `[redacted]`. Applied to all text
/// that came out of sandboxed code before it reaches a prompt, the timeline or
/// the history: the sandbox keeps the key out, this keeps a leak from travelling.
pub(crate) fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(s.as_str(), "[redacted]");
    }
    let bytes = out.as_bytes();
    let is_tok = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let mut result = String::with_capacity(out.len());
    let mut i = 0;
    let mut redact_next = false;
    while i < bytes.len() {
        if !is_tok(bytes[i]) {
            result.push(out[i..].chars().next().unwrap_or(' '));
            i += out[i..].chars().next().map(char::len_utf8).unwrap_or(1);
            continue;
        }
        let start = i;
        while i < bytes.len() && is_tok(bytes[i]) {
            i += 1;
        }
        let tok = &out[start..i];
        let follows_assign = bytes.get(i) == Some(&b'=') || bytes.get(i) == Some(&b':');
        if redact_next || key_shaped(tok) {
            result.push_str("[redacted]");
            redact_next = false;
        } else {
            result.push_str(tok);
            let upper = tok.to_ascii_uppercase();
            let named_secret = ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD"].iter().any(|k| upper.ends_with(k));
            redact_next = (follows_assign && named_secret && tok.chars().any(|c| c.is_ascii_uppercase()))
                || tok.eq_ignore_ascii_case("bearer");
            if follows_assign && redact_next {
                // Keep the `=`/`:` and the spaces; the value that follows is redacted.
                result.push(bytes[i] as char);
                i += 1;
                while i < bytes.len() && (bytes[i] == b' ' || bytes[i] == b'"' || bytes[i] == b'\'') {
                    result.push(bytes[i] as char);
                    i += 1;
                }
                redact_next = i < bytes.len() && is_tok(bytes[i]);
            }
        }
    }
    result
}

fn key_shaped(tok: &str) -> bool {
    const PREFIXES: &[&str] =
        &["sk-", "sk_", "ghp_", "gho_", "ghs_", "github_pat_", "hf_", "xoxb-", "xoxp-", "AKIA", "AIza"];
    if PREFIXES.iter().any(|p| tok.starts_with(p) && tok.len() >= p.len() + 12) {
        return true;
    }
    // A long random run of letters and digits (a key without a known prefix);
    // names joined by `-` or `_` (a temp folder, an identifier) are read part by part.
    tok.split(['-', '_']).any(|part| {
        let letters = part.chars().filter(|c| c.is_ascii_alphabetic()).count();
        let digits = part.chars().filter(|c| c.is_ascii_digit()).count();
        part.len() >= 24 && letters >= 6 && digits >= 4
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Settings;

    #[test]
    fn the_setting_takes_bwrap_or_none_and_names_them_when_wrong() {
        let s = Settings::from_json(&serde_json::json!({ "llm": { "sandbox": "none" } })).unwrap();
        assert_eq!(s.llm.sandbox, Some(SandboxSetting::None));
        let s = Settings::from_json(&serde_json::json!({ "llm": { "sandbox": "bwrap" } })).unwrap();
        assert_eq!(s.llm.sandbox, Some(SandboxSetting::Bwrap));
        assert_eq!(Settings::default().llm.sandbox, None, "unset: bwrap, or no rewrite");
        let e = Settings::from_json(&serde_json::json!({ "llm": { "sandbox": "docker" } })).unwrap_err();
        assert!(e.contains("docker") && e.contains("bwrap") && e.contains("none"), "{e}");
    }

    #[test]
    fn none_says_that_answers_run_with_your_rights_and_still_gets_a_private_directory() {
        let sb = prepare(Some(SandboxSetting::None), "python3", Limits::default()).unwrap();
        assert_eq!(sb.kind, "none");
        assert!(sb.description.contains("with your rights"), "{}", sb.description);
        assert!(!sb.is_sandboxed());
        let dir = sb.dir().to_path_buf();
        assert!(dir.is_dir());
        assert!(live().lock().unwrap().contains(&dir));
        drop(sb);
        assert!(!dir.exists(), "removed with the sandbox");
        assert!(!live().lock().unwrap().contains(&dir));
    }

    #[test]
    fn the_memory_limit_stays_under_the_machines_memory() {
        let huge = memory_limit(u64::MAX / (1 << 20));
        assert!(huge > 0 && huge < u64::MAX / 2, "{huge}");
        assert_eq!(memory_limit(64), 64 << 20, "a small setting is kept");
    }

    #[test]
    fn the_environment_is_an_allow_list() {
        std::env::set_var("KLSP_UNIT_SECRET_TOKEN", "sk-abcdefghijklmnop1234");
        let env = environment(Path::new("/tmp/x"), Some(Path::new("/py/bin")));
        assert!(env.iter().all(|(k, _)| k != "KLSP_UNIT_SECRET_TOKEN"));
        let path = &env.iter().find(|(k, _)| k == "PATH").unwrap().1;
        assert!(path.starts_with("/py/bin:"), "{path}");
        assert_eq!(env.iter().find(|(k, _)| k == "HOME").unwrap().1, "/tmp/x");
    }

    #[test]
    fn outermost_keeps_existing_paths_outside_the_system_without_nesting() {
        let t = std::env::temp_dir().join(format!("klsp-outer-{}", std::process::id()));
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        let kept = outermost(vec![
            t.join("a/b"),
            t.join("a"),
            t.join("missing"),
            PathBuf::from("/usr/lib/python3"),
            PathBuf::from("relative"),
        ]);
        assert_eq!(kept, vec![t.join("a")]);
        let _ = std::fs::remove_dir_all(&t);
    }

    #[test]
    fn redact_removes_the_key_and_key_shaped_text_and_keeps_the_rest() {
        let key = "s3cr3t-value-of-the-key".to_string();
        let text = "OPENAI_API_KEY=s3cr3t-value-of-the-key\nline 3: sk-proj-AbCdEf0123456789xyz leaked\n\
                    Authorization: Bearer abc.def\nMY_TOKEN: 'zzz'\nhf_abcdefghijklmnopqrstu\n\
                    RuntimeError at line 12 in candidate.py: shape mismatch (4, 16)";
        let r = redact(text, std::slice::from_ref(&key));
        for leaked in ["s3cr3t", "sk-proj", "abc.def", "zzz", "hf_abcdef"] {
            assert!(!r.contains(leaked), "{leaked} survived: {r}");
        }
        assert!(r.contains("RuntimeError at line 12 in candidate.py: shape mismatch (4, 16)"), "{r}");
        assert!(r.contains("OPENAI_API_KEY=[redacted]"), "{r}");
        let folder = "/tmp/kernel-lsp-sandbox-11319-1c5c0ea2558c7fca/work/candidate_c1a0.py";
        assert_eq!(redact(folder, &[]), folder, "a temp folder is not a key");
        assert!(redact("token 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c", &[]).contains("[redacted]"));
    }
}
