//! The public names of `triton.language`, generated from an installed Triton
//! by `server/data/gen_triton_names.py` and checked in as data.

use std::collections::HashSet;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::config::TritonNames;

const DATA: &str = include_str!("../../data/triton_language_names.txt");

fn names() -> &'static HashSet<&'static str> {
    static NAMES: OnceLock<HashSet<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| DATA.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect())
}

/// Whether `triton.language` has a public attribute `name`.
pub(crate) fn is_known(name: &str) -> bool {
    names().contains(name)
}

/// The Triton version the list was generated from.
pub(crate) fn generated_from() -> &'static str {
    DATA.lines().next().and_then(|l| l.rsplit("triton ").next()).unwrap_or("unknown")
}

pub fn all() -> impl Iterator<Item = &'static str> {
    // Top-level names only: `math.exp` is `tl.math.exp`, not a `tl.` name.
    let mut v: Vec<&'static str> = names().iter().copied().filter(|n| !n.contains('.')).collect();
    v.sort_unstable();
    v.into_iter()
}

/// The fixed script run in the configured interpreter: it imports Triton and
/// prints its version and the public names of `triton.language` and of
/// `triton.language.math` (as `math.NAME`). No user code runs.
pub const SCRIPT: &str = "import triton, triton.language as tl\nprint(triton.__version__)\nprint('\\n'.join(n for n in dir(tl) if not n.startswith('_')))\nprint('\\n'.join('math.' + n for n in dir(tl.math) if not n.startswith('_')))\n";

/// Asks `python` for its `triton.language` names (`python -c SCRIPT`),
/// killing it after `timeout`. Called at the edges only (the CLI's start, the
/// server's background task): rules read the result from the settings.
pub fn load(python: &str, timeout: Duration) -> Result<TritonNames, String> {
    let mut child = Command::new(python)
        .args(["-c", SCRIPT])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("`{python}` could not be started: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let mut stderr = child.stderr.take().ok_or("no stderr")?;
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{python}` did not answer within {} s", timeout.as_secs()));
            }
            Err(e) => return Err(format!("`{python}`: {e}")),
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    if !status.success() {
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message");
        return Err(format!("`{python}` could not import triton: {last}"));
    }
    let mut lines = out.lines().map(str::trim).filter(|l| !l.is_empty());
    let version = lines.next().ok_or_else(|| format!("`{python}` printed no Triton version"))?.to_string();
    let names: HashSet<String> = lines.map(str::to_string).collect();
    if names.is_empty() {
        return Err(format!("`{python}` listed no `triton.language` names"));
    }
    Ok(TritonNames { version, python: python.to_string(), names })
}
