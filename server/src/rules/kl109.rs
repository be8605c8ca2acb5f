//! KL109 local-import.

use tree_sitter::Node;

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{range_of, FileModel};

use super::{Reach, Rule, Scope};
use crate::model::field;
use crate::model::NodeKind;

pub const RULE: Rule = Rule {
    code: "KL109",
    name: "local-import",
    severity: Severity::Warning,
    summary: "a `ModelNew` file imports a local module, which KernelBench's loader cannot find",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: None,
};

const DOC: &str = r#"# KL109 local-import

## What it does
In a file that defines `class ModelNew` (a KernelBench candidate), finds
imports that are neither the Python standard library nor a package of
KernelBench's environment (torch, triton, numpy, ...): relative imports
(`from . import x`, `from .kernels import k`) always, and absolute imports of
any other module, which in a candidate is almost always a file beside it
(`from gru_wavefront import gru_wavefront`).

## Why is this bad?
KernelBench evaluates a candidate from its source alone: it writes the text
to a temporary file and imports that file, with no folder of yours on
`sys.path`. An import of a module beside the candidate then fails with
`ModuleNotFoundError`, and KernelBench records a compilation failure: the
kernel scores as incorrect however fast it is, although it runs in place.
`kernel-lsp bench` loads the candidate the same way and reports
`local-import`; this rule says so before you run.

The rule does not read the disk: an import of a third-party package that
your evaluator has installed also fires. Suppress it on that line with
`# kernel-lsp: ignore[KL109]`.

## Example
```python
from gru_wavefront import gru_wavefront   # gru_wavefront.py sits beside this file


class ModelNew(nn.Module):
    def forward(self, x, h0):
        return gru_wavefront(x, h0, self.weights)
```

## Use instead
Put the kernels and helpers the candidate needs in the candidate file itself.
"#;

/// Packages a KernelBench evaluation environment has besides the standard library.
const ENVIRONMENT: &[&str] = &["torch", "triton", "numpy", "einops", "typing_extensions", "packaging"];

/// `sys.stdlib_module_names` of CPython 3.11, public names only.
#[rustfmt::skip]
const STDLIB: &[&str] = &[
    "abc", "aifc", "antigravity", "argparse", "array", "ast", "asynchat", "asyncio", "asyncore", "atexit",
    "audioop", "base64", "bdb", "binascii", "bisect", "builtins", "bz2", "cProfile", "calendar", "cgi", "cgitb",
    "chunk", "cmath", "cmd", "code", "codecs", "codeop", "collections", "colorsys", "compileall", "concurrent",
    "configparser", "contextlib", "contextvars", "copy", "copyreg", "crypt", "csv", "ctypes", "curses",
    "dataclasses", "datetime", "dbm", "decimal", "difflib", "dis", "distutils", "doctest", "email", "encodings",
    "ensurepip", "enum", "errno", "faulthandler", "fcntl", "filecmp", "fileinput", "fnmatch", "fractions", "ftplib",
    "functools", "gc", "genericpath", "getopt", "getpass", "gettext", "glob", "graphlib", "grp", "gzip", "hashlib",
    "heapq", "hmac", "html", "http", "idlelib", "imaplib", "imghdr", "imp", "importlib", "inspect", "io",
    "ipaddress", "itertools", "json", "keyword", "lib2to3", "linecache", "locale", "logging", "lzma", "mailbox",
    "mailcap", "marshal", "math", "mimetypes", "mmap", "modulefinder", "msilib", "msvcrt", "multiprocessing",
    "netrc", "nis", "nntplib", "nt", "ntpath", "nturl2path", "numbers", "opcode", "operator", "optparse", "os",
    "ossaudiodev", "pathlib", "pdb", "pickle", "pickletools", "pipes", "pkgutil", "platform", "plistlib", "poplib",
    "posix", "posixpath", "pprint", "profile", "pstats", "pty", "pwd", "py_compile", "pyclbr", "pydoc",
    "pydoc_data", "pyexpat", "queue", "quopri", "random", "re", "readline", "reprlib", "resource", "rlcompleter",
    "runpy", "sched", "secrets", "select", "selectors", "shelve", "shlex", "shutil", "signal", "site", "smtpd",
    "smtplib", "sndhdr", "socket", "socketserver", "spwd", "sqlite3", "sre_compile", "sre_constants", "sre_parse",
    "ssl", "stat", "statistics", "string", "stringprep", "struct", "subprocess", "sunau", "symtable", "sys",
    "sysconfig", "syslog", "tabnanny", "tarfile", "telnetlib", "tempfile", "termios", "textwrap", "this",
    "threading", "time", "timeit", "tkinter", "token", "tokenize", "tomllib", "trace", "traceback", "tracemalloc",
    "tty", "turtle", "turtledemo", "types", "typing", "unicodedata", "unittest", "urllib", "uu", "uuid", "venv",
    "warnings", "wave", "weakref", "webbrowser", "winreg", "winsound", "wsgiref", "xdrlib", "xml", "xmlrpc",
    "zipapp", "zipfile", "zipimport", "zlib", "zoneinfo",

];

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !model.classes.iter().any(|c| c.name == "ModelNew") {
        return;
    }
    for &node in &model.nodes().imports {
        match node.kind_name() {
            "import_statement" => {
                let mut c = node.walk();
                for name in node.children_by_field_name("name", &mut c) {
                    let dotted = if name.kind_name() == "aliased_import" { field!(name, "name") } else { Some(name) };
                    if let Some(d) = dotted {
                        report(model, d, &model.src[d.byte_range()], false, out);
                    }
                }
            }
            _ => {
                if let Some(m) = field!(node, "module_name") {
                    let relative = m.kind_name() == "relative_import";
                    report(model, m, &model.src[m.byte_range()], relative, out);
                }
            }
        }
    }
}

fn report(_model: &FileModel, node: Node, module: &str, relative: bool, out: &mut Vec<Diagnostic>) {
    let top = module.trim_start_matches('.').split('.').next().unwrap_or_default();
    if !relative && (STDLIB.contains(&top) || ENVIRONMENT.contains(&top) || top.is_empty()) {
        return;
    }
    let message = if relative {
        format!(
            "relative import `{module}` in a KernelBench candidate: KernelBench imports the candidate from a temporary file, alone, so this fails with ImportError and the candidate counts as a compilation failure. Put what it needs in this file"
        )
    } else {
        format!(
            "`{top}` is not the standard library or a package of KernelBench's environment: if it is a file beside this candidate, KernelBench's loader (the candidate's source alone, in a temporary file) cannot import it and records a compilation failure. Put what it needs in this file"
        )
    };
    out.push(RULE.diagnostic(range_of(node), message));
}

#[cfg(test)]
mod tests {
    use crate::checker::check_text;
    use crate::config::Settings;

    fn kl109(src: &str) -> Vec<String> {
        let settings = Settings { select: vec!["KL109".into()], ..Settings::default() };
        check_text(src, &settings).diagnostics.iter().map(|d| src[d.range.start..d.range.end].to_string()).collect()
    }

    #[test]
    fn a_candidate_importing_a_sibling_fires() {
        let src = r#"
import torch
from gru_wavefront import gru_wavefront
from .kernels import step


class ModelNew(torch.nn.Module):
    pass
"#;
        assert_eq!(kl109(src), vec!["gru_wavefront", ".kernels"]);
    }

    #[test]
    fn standard_library_environment_and_non_candidates_do_not_fire() {
        let candidate = r#"
import os, math
import torch.nn as nn
from triton import language as tl
import numpy as np
from collections.abc import Sequence


class ModelNew(nn.Module):
    pass
"#;
        assert!(kl109(candidate).is_empty());
        let helper = "from gru_wavefront import gru_wavefront\n\n\ndef f():\n    pass\n";
        assert!(kl109(helper).is_empty(), "a file without ModelNew is not a candidate");
    }
}
