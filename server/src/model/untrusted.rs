//! What a file does that an untrusted answer must not: imports outside
//! what a kernel file needs, `exec` and its kin, file writes, `os` uses
//! beyond reading an environment variable. Facts of the model, asked by
//! KL108 in the editor and, strictly, by the rewrite gate (`llm::gate`),
//! which reads them here rather than through the rule.

use crate::model::candidate;
use crate::model::range_of;
use crate::model::{FileModel, NodeKind};
use crate::text::TextRange;

/// Modules a kernel file may import (the first dotted name).
const ALLOWED: &[&str] = &[
    "torch",
    "triton",
    "math",
    "numpy",
    "functools",
    "itertools",
    "typing",
    "typing_extensions",
    "dataclasses",
    "collections",
    "operator",
    "enum",
    "abc",
    "numbers",
    "random",
    "copy",
    "contextlib",
    "warnings",
    "__future__",
    "einops",
    "cmath",
    "statistics",
    "fractions",
    "decimal",
];

/// Modules that reach the system, the network or other code: reported in the
/// editor too. The gate refuses every module outside [`ALLOWED`].
const DENIED: &[&str] = &[
    "os",
    "sys",
    "subprocess",
    "socket",
    "shutil",
    "ctypes",
    "cffi",
    "importlib",
    "requests",
    "urllib",
    "urllib3",
    "http",
    "httpx",
    "aiohttp",
    "ftplib",
    "smtplib",
    "telnetlib",
    "ssl",
    "select",
    "selectors",
    "asyncio",
    "pickle",
    "marshal",
    "shelve",
    "dbm",
    "sqlite3",
    "pathlib",
    "tempfile",
    "glob",
    "io",
    "builtins",
    "code",
    "codeop",
    "runpy",
    "pty",
    "signal",
    "fcntl",
    "mmap",
    "resource",
    "platform",
    "getpass",
    "pwd",
    "grp",
    "webbrowser",
    "zipfile",
    "tarfile",
    "gzip",
    "bz2",
    "lzma",
    "zipimport",
    "pkgutil",
    "site",
    "inspect",
    "paramiko",
    "boto3",
    "psutil",
    "docker",
    "pip",
    "setuptools",
    "multiprocessing",
    "threading",
    "_thread",
    "concurrent",
    "atexit",
    "gc",
];

/// `torch` entry points that load code from outside the file.
const FOREIGN_CODE: &[&str] = &["torch.load", "torch.hub", "torch.utils.cpp_extension", "torch.ops.load_library"];

/// Environment variables a kernel may read (`os.environ.get("TRITON_INTERPRET")`).
fn readable_env(name: &str) -> bool {
    ["TRITON_", "CUDA_", "TORCH_", "PYTORCH_"].iter().any(|p| name.starts_with(p))
}

/// Everything the file does that an untrusted answer must not: (where, why).
/// The rewrite gate refuses an answer with any of these.
/// `strict` (the gate): every import outside [`ALLOWED`] is refused, sibling
/// modules included (KernelBench runs a candidate's source alone). Otherwise
/// (the editor) only [`DENIED`] modules and relative imports of foreign code are reported:
/// your own sibling module is yours.
pub fn findings(model: &FileModel, strict: bool) -> Vec<(TextRange, String)> {
    let imports = candidate::imports(model);
    let src = model.src;
    let mut out = module_findings(&imports, strict, |_| true);
    // In document order, as one walk of the tree meets them: findings with
    // the same range keep that order through the stable sort below.
    let nodes = model.nodes();
    let mut candidates: Vec<tree_sitter::Node> =
        nodes.builtins.iter().chain(&nodes.calls).chain(&nodes.attributes).copied().collect();
    candidates.sort_by_key(|n| (n.start_byte(), std::cmp::Reverse(n.end_byte())));
    out.extend(node_findings(src, &imports, candidates));
    out.sort_by_key(|(r, _)| (r.start, r.end));
    out.dedup();
    out
}

/// The findings on the imported modules whose import lies where `here` says.
pub(crate) fn module_findings(
    imports: &candidate::Imports,
    strict: bool,
    here: impl Fn(TextRange) -> bool,
) -> Vec<(TextRange, String)> {
    let mut out: Vec<(TextRange, String)> = Vec::new();
    for (module, range) in &imports.modules {
        let head = module.split('.').next().unwrap_or_default();
        let range = TextRange::new(range.start_byte, range.end_byte);
        if module.starts_with('.') {
            if !strict {
                continue;
            }
            out.push((range, format!("imports `{module}` from beside the file")));
        } else if is_foreign_code(module) {
            out.push((range, format!("imports `{module}`, which loads code from outside the file")));
        } else if head == "os" {
            // Checked use by use below.
        } else if !ALLOWED.contains(&head) && (strict || DENIED.contains(&head)) {
            let why = if DENIED.contains(&head) {
                "which a kernel file has no need for"
            } else {
                "outside the task's needs (torch, triton, math, numpy and pure standard modules; a candidate must be self-contained)"
            };
            out.push((range, format!("imports `{module}`, {why}")));
        }
    }
    out.retain(|(range, _)| here(*range));
    out
}

/// The findings of [`findings`] on some calls, attributes and identifiers
/// (other nodes are skipped), not sorted: each depends on its node and the
/// file's imports alone, so the incremental analysis asks it of one statement.
pub(crate) fn node_findings<'a>(
    src: &str,
    imports: &candidate::Imports,
    candidates: impl IntoIterator<Item = tree_sitter::Node<'a>>,
) -> Vec<(TextRange, String)> {
    let mut out = Vec::new();
    for n in candidates {
        match n.kind_name() {
            "identifier" if src.get(n.byte_range()) == Some("__builtins__") => {
                out.push((range_of(n), "reaches `__builtins__`".to_string()));
            }
            "call" => {
                let Some(func) = field!(n, "function") else { continue };
                let callee = imports.qualify(func, src).unwrap_or_default();
                let bare = func.kind_name() == "identifier";
                if bare
                    && matches!(callee.as_str(), "exec" | "eval" | "compile" | "__import__" | "globals" | "breakpoint")
                {
                    out.push((range_of(n), format!("calls `{callee}`")));
                } else if bare && callee == "open" && opens_for_writing(n, src) {
                    out.push((range_of(n), "opens a file for writing".to_string()));
                } else if FILE_WRITERS.contains(&callee.as_str())
                    || (func.kind_name() == "attribute"
                        && field!(func, "attribute")
                            .is_some_and(|a| matches!(&src[a.byte_range()], "write_text" | "write_bytes")))
                {
                    out.push((range_of(n), format!("writes a file (`{}`)", &src[func.byte_range()])));
                } else if is_foreign_code(&callee) {
                    out.push((range_of(n), format!("calls `{callee}`, which loads code from outside the file")));
                }
            }
            "attribute" => {
                if !imports.may_name_module(n, src, "os") {
                    continue;
                }
                let Some(q) = imports.qualify(n, src) else { continue };
                if !(q == "os" || q.starts_with("os.")) {
                    continue;
                }
                // The outermost `os.x.y` chain only (asked last: finding a parent walks down from the root).
                if n.parent().is_some_and(|p| p.kind_name() == "attribute" && field!(p, "object") == Some(n)) {
                    continue;
                }
                if let Some(why) = os_use(n, &q, src) {
                    out.push((range_of(n), why));
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether `name` is one of [`FOREIGN_CODE`] or inside one (`torch.hub.load`).
fn is_foreign_code(name: &str) -> bool {
    FOREIGN_CODE.iter().any(|f| name.strip_prefix(f).is_some_and(|rest| rest.is_empty() || rest.starts_with('.')))
}

/// Calls that write a file wherever they are given a path.
const FILE_WRITERS: &[&str] = &[
    "torch.save",
    "numpy.save",
    "numpy.savez",
    "numpy.savez_compressed",
    "numpy.savetxt",
    "shutil.copy",
    "shutil.copyfile",
    "shutil.move",
];

/// Why a use of `os` (`q` is the qualified chain at `node`) is refused, or `None` for a permitted read.
fn os_use(node: tree_sitter::Node, q: &str, src: &str) -> Option<String> {
    let parent = node.parent();
    let env_name = |n: Option<tree_sitter::Node>| {
        n.filter(|a| a.kind_name() == "string")
            .map(|a| src[a.byte_range()].trim_matches(|c| c == '"' || c == '\'').to_string())
    };
    match q {
        "os.environ.get" | "os.getenv" => {
            let call = parent.filter(|p| p.kind_name() == "call")?;
            let name = env_name(field!(call, "arguments").and_then(|a| a.named_child(0)));
            match name {
                Some(name) if readable_env(&name) => None,
                Some(name) => Some(format!("reads the environment variable `{name}`")),
                None => Some("reads the environment".to_string()),
            }
        }
        "os.environ" => {
            let p = parent?;
            if p.kind_name() == "subscript" {
                let assigned = p.parent().is_some_and(|g| {
                    matches!(g.kind_name(), "assignment" | "augmented_assignment") && field!(g, "left") == Some(p)
                }) || p.parent().is_some_and(|g| g.kind_name() == "delete_statement");
                let name = env_name(field!(p, "subscript"));
                return match name {
                    Some(name) if readable_env(&name) && !assigned => None,
                    Some(name) if assigned => Some(format!("sets the environment variable `{name}`")),
                    Some(name) => Some(format!("reads the environment variable `{name}`")),
                    None => Some("touches the environment".to_string()),
                };
            }
            Some("touches the environment (`os.environ`)".to_string())
        }
        "os.system" | "os.popen" | "os.execv" | "os.execvp" | "os.spawnv" | "os.fork" | "os.posix_spawn" => {
            Some(format!("runs a command (`{q}`)"))
        }
        _ if q.starts_with("os.environ.") || q == "os.putenv" || q == "os.unsetenv" => {
            Some(format!("touches the environment (`{q}`)"))
        }
        _ => Some(format!("uses `{q}`, which a kernel file has no need for")),
    }
}

fn opens_for_writing(call: tree_sitter::Node, src: &str) -> bool {
    let Some(args) = field!(call, "arguments") else { return false };
    let mut cursor = args.walk();
    let children: Vec<tree_sitter::Node> = args.named_children(&mut cursor).collect();
    let mode = children.iter().find_map(|c| {
        if c.kind_name() == "keyword_argument" {
            return field!(c, "name").filter(|n| &src[n.byte_range()] == "mode").and_then(|_| field!(c, "value"));
        }
        None
    });
    let mode = mode.or_else(|| children.get(1).copied().filter(|c| c.kind_name() != "keyword_argument"));
    match mode {
        Some(m) if m.kind_name() == "string" => src[m.byte_range()].chars().any(|c| matches!(c, 'w' | 'a' | 'x' | '+')),
        Some(_) => true,
        None => false,
    }
}
