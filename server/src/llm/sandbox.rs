//! Where an LLM answer's code runs during verification. With bubblewrap
//! (`bwrap`) the harness runs with no network (`--unshare-net`), the whole
//! file system read-only (the project included), writes only to a fresh
//! temporary directory (also `HOME`, `TMPDIR` and Triton's cache), the GPU
//! device nodes (`/dev/nvidia*`) bound in, and the LLM API key variable (and
//! any variable named like a key, token, secret or password) unset.
//!
//! The hook into the harness runner is the interpreter: the sandbox writes a
//! small `sh` script that `exec`s bwrap around the real Python, and the
//! benchmark request names that script as its Python. The runner's process
//! group handling still applies (bwrap keeps the script's pid and takes its
//! child down with it: `--die-with-parent`).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use crate::config::SandboxSetting;

/// The sandbox one rewrite runs its candidates in; removes its directory when dropped.
#[derive(Debug)]
pub struct Sandbox {
    /// `bwrap` or `none`.
    pub kind: &'static str,
    /// One line for the rewrite output: which sandbox ran, and what it allows.
    pub description: String,
    dir: Option<PathBuf>,
    wrapper: Option<PathBuf>,
}

impl Sandbox {
    pub fn none(why: &str) -> Sandbox {
        Sandbox {
            kind: "none",
            description: format!("none: answers run with your rights ({why})"),
            dir: None,
            wrapper: None,
        }
    }

    /// The interpreter to run the harness with: the wrapper script (around
    /// the interpreter resolved when the sandbox was prepared), or `python` unchanged.
    pub fn interpreter(&self, python: Option<String>) -> Option<String> {
        match &self.wrapper {
            Some(w) => Some(w.display().to_string()),
            None => python,
        }
    }

    pub fn is_sandboxed(&self) -> bool {
        self.wrapper.is_some()
    }

    /// The directory the sandboxed code may write to.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if let Some(d) = &self.dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Everything read-only, a minimal `/dev` and a private `/dev/shm`, no
/// network, no shared IPC, no controlling terminal, and gone with its parent.
#[rustfmt::skip]
const ISOLATION: &[&str] = &[
    "--ro-bind", "/", "/",
    "--dev", "/dev",
    "--proc", "/proc",
    "--tmpfs", "/dev/shm",
    "--unshare-net",
    "--unshare-ipc",
    "--die-with-parent",
    "--new-session",
];

/// Whether bwrap is installed and can start a sandbox here (user namespaces permitted).
pub fn bwrap_works() -> Result<(), String> {
    static CHECK: OnceLock<Result<(), String>> = OnceLock::new();
    CHECK
        .get_or_init(|| {
            // The same namespaces and mounts as a real run, so that "works" means the runs will start.
            let mut args: Vec<String> = ISOLATION.iter().map(|s| s.to_string()).collect();
            for node in gpu_nodes() {
                args.extend(["--dev-bind".to_string(), node.clone(), node]);
            }
            let out = std::process::Command::new("bwrap")
                .args(&args)
                .args(["--", "true"])
                .output()
                .map_err(|e| format!("bwrap cannot be run: {e}"))?;
            if out.status.success() {
                Ok(())
            } else {
                Err(format!("bwrap cannot start a sandbox: {}", String::from_utf8_lossy(&out.stderr).trim()))
            }
        })
        .clone()
}

/// The sandbox `setting` asks for (`None`: bwrap when it works here).
/// `python` is the real interpreter; `unset` names environment variables the
/// answer must not see (the API key's).
pub fn prepare(setting: Option<SandboxSetting>, python: &str, unset: &[&str]) -> Result<Sandbox, String> {
    match setting {
        Some(SandboxSetting::None) => return Ok(Sandbox::none("llm.sandbox = \"none\"")),
        Some(SandboxSetting::Bwrap) => bwrap_works().map_err(|e| format!("llm.sandbox = \"bwrap\": {e}"))?,
        None => {
            if let Err(e) = bwrap_works() {
                return Ok(Sandbox::none(&format!("{e}; install bubblewrap, or set llm.sandbox = \"none\" to say so")));
            }
        }
    }
    let dir = std::env::temp_dir().join(format!("kernel-lsp-sandbox-{}-{}", std::process::id(), unique()));
    std::fs::create_dir_all(dir.join("triton")).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut args: Vec<String> = Vec::new();
    let mut push = |a: &[&str]| args.extend(a.iter().map(|s| s.to_string()));
    push(ISOLATION);
    for node in gpu_nodes() {
        push(&["--dev-bind", &node, &node]);
    }
    let d = dir.display().to_string();
    push(&["--bind", &d, &d]);
    push(&["--setenv", "HOME", &d, "--setenv", "TMPDIR", &d]);
    push(&["--setenv", "TRITON_CACHE_DIR", &format!("{d}/triton"), "--setenv", "XDG_CACHE_HOME", &d]);
    for var in unset {
        push(&["--unsetenv", var]);
    }
    let quoted: Vec<String> = args.iter().map(|a| shell_quote(a)).collect();
    // Besides the named key variable, anything that looks like a credential stays outside.
    let script = format!("#!/bin/sh\n{SCRUB}exec bwrap {} -- {} \"$@\"\n", quoted.join(" "), shell_quote(python));
    let wrapper = dir.join("python-in-bwrap.sh");
    write_executable(&wrapper, &script).map_err(|e| format!("cannot write {}: {e}", wrapper.display()))?;
    Ok(Sandbox {
        kind: "bwrap",
        description: format!("bwrap: no network, the file system read-only, writes only to {d}"),
        dir: Some(dir),
        wrapper: Some(wrapper),
    })
}

/// Unsets every environment variable whose name says it holds a credential.
const SCRUB: &str = "for v in $(env | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p' | grep -iE 'key|token|secret|passw|credential'); do unset \"$v\"; done\n";

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// `/dev/nvidia*` and `/dev/nvidia-caps/*`, where present.
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

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn write_executable(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

/// The sandbox for one rewrite, from its settings.
pub(super) fn for_request(req: &super::RewriteRequest) -> Result<Sandbox, super::LlmError> {
    let python = crate::bench::resolve_python(&crate::bench::BenchRequest {
        python: req.python.clone(),
        settings: req.settings.clone(),
        ..Default::default()
    });
    let key = req.settings.llm.api_key_env.as_deref();
    prepare(req.settings.llm.sandbox, &python, key.as_slice()).map_err(super::LlmError::Setup)
}

/// The timeline row that says which sandbox ran.
pub(super) fn record(sandbox: &Sandbox, mut row: super::timeline::StageRecord) -> super::timeline::StageRecord {
    row.score = sandbox.kind.to_string();
    row.problem = sandbox.description.clone();
    row
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
        assert_eq!(Settings::default().llm.sandbox, None, "unset: bwrap when it works here");
        let e = Settings::from_json(&serde_json::json!({ "llm": { "sandbox": "docker" } })).unwrap_err();
        assert!(e.contains("docker") && e.contains("bwrap") && e.contains("none"), "{e}");
    }

    #[test]
    fn none_says_that_answers_run_with_your_rights() {
        let sb = prepare(Some(SandboxSetting::None), "python3", &[]).unwrap();
        assert_eq!(sb.kind, "none");
        assert!(sb.description.contains("with your rights"), "{}", sb.description);
        assert_eq!(sb.interpreter(Some("py".into())).as_deref(), Some("py"));
        assert!(sb.dir().is_none());
    }

    #[test]
    fn the_wrapper_quotes_its_arguments() {
        assert_eq!(shell_quote("a b'c"), "'a b'\\''c'");
    }
}
