//! What the compiler is shown of a file: the `@triton.jit` functions, the
//! module-level constants and the Triton imports they read, and nothing else.
//!
//! The bundle is the file itself with every other character blanked (newlines
//! kept), so each kept piece sits at its own line and column: the worker's
//! line and column are the file's, with no table of offsets to get wrong. No
//! host code survives: a statement is kept only when it is an import of
//! `triton`/`math`, a `@triton.jit` definition (its other decorators blanked:
//! `autotune` and `heuristics` run host code, and the configurations they
//! carry are read here instead), or an assignment of a constant expression
//! (literals, names, operators, `tl.constexpr(...)`; no other call).

use std::collections::HashSet;

use tree_sitter::Node;

use crate::model::field;
use crate::model::Forest;
use crate::model::NodeKind;

/// The text the worker runs, and the names the file binds in code it does not
/// show (a compile error about one of those is a consequence of the
/// extraction, not of the kernel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bundle {
    pub source: String,
    pub hidden_names: Vec<String>,
}

/// Modules whose import the bundle keeps: the compiler's own, and `math`.
fn kept_module(module: &str) -> bool {
    let root = module.split('.').next().unwrap_or("");
    matches!(root, "triton" | "math")
}

/// The bundle of the `@triton.jit` functions named in `functions` (a kernel and the helpers it calls).
pub fn extract(src: &str, tree: &Forest, functions: &HashSet<String>) -> Bundle {
    let mut keep: Vec<(usize, usize)> = Vec::new();
    let mut hidden = Vec::new();
    for stmt in tree.named_top_level() {
        match stmt.kind_name() {
            "import_statement" | "import_from_statement" => {
                if import_is_kept(stmt, src) {
                    keep.push((stmt.start_byte(), stmt.end_byte()));
                } else {
                    hidden.extend(bound_by_import(stmt, src));
                }
            }
            "decorated_definition" => {
                let def = field!(stmt, "definition");
                let jit: Vec<Node> = decorators(stmt).into_iter().filter(|d| is_jit(*d, src)).collect();
                match def {
                    Some(def) if def.kind_name() == "function_definition" && !jit.is_empty() => {
                        let name = field!(def, "name").map(|n| &src[n.byte_range()]).unwrap_or("");
                        if !functions.contains(name) {
                            continue;
                        }
                        keep.extend(jit.iter().map(|d| (d.start_byte(), d.end_byte())));
                        keep.push((def.start_byte(), def.end_byte()));
                    }
                    Some(def) => hidden.extend(field!(def, "name").map(|n| src[n.byte_range()].to_string())),
                    None => {}
                }
            }
            "function_definition" | "class_definition" => {
                hidden.extend(field!(stmt, "name").map(|n| src[n.byte_range()].to_string()));
            }
            "expression_statement" => {
                let Some(a) = stmt.named_child(0).filter(|a| a.kind_name() == "assignment") else { continue };
                let Some(left) = field!(a, "left") else { continue };
                let constant =
                    left.kind_name() == "identifier" && field!(a, "right").is_some_and(|r| is_constant(r, src));
                if constant {
                    keep.push((stmt.start_byte(), stmt.end_byte()));
                } else {
                    let mut lc = left.walk();
                    if left.kind_name() == "identifier" {
                        hidden.push(src[left.byte_range()].to_string());
                    }
                    for n in left.named_children(&mut lc).filter(|n| n.kind_name() == "identifier") {
                        hidden.push(src[n.byte_range()].to_string());
                    }
                }
            }
            _ => {}
        }
    }
    hidden.sort();
    hidden.dedup();
    Bundle { source: blank_outside(src, &keep), hidden_names: hidden }
}

/// The decorator expressions of a decorated definition.
fn decorators(stmt: Node) -> Vec<Node> {
    let mut c = stmt.walk();
    stmt.named_children(&mut c).filter(|d| d.kind_name() == "decorator").collect()
}

/// `@triton.jit`, `@jit`, `@triton.jit(...)`, `@tl.core.jit`...: the decorator
/// (with its `@`) when its callee's last name is `jit`.
fn is_jit(decorator: Node, src: &str) -> bool {
    let Some(mut e) = decorator.named_child(0) else { return false };
    if e.kind_name() == "call" {
        match field!(e, "function") {
            Some(f) => e = f,
            None => return false,
        }
    }
    src[e.byte_range()].rsplit('.').next().map(str::trim) == Some("jit")
}

fn import_is_kept(stmt: Node, src: &str) -> bool {
    if stmt.kind_name() == "import_from_statement" {
        return field!(stmt, "module_name").is_some_and(|m| kept_module(&src[m.byte_range()]));
    }
    let mut c = stmt.walk();
    let names: Vec<Node> = stmt.named_children(&mut c).collect();
    !names.is_empty()
        && names.iter().all(|n| {
            let module = if n.kind_name() == "aliased_import" { field!(n, "name").unwrap_or(*n) } else { *n };
            kept_module(&src[module.byte_range()])
        })
}

/// The names an import binds in the module.
fn bound_by_import(stmt: Node, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut c = stmt.walk();
    for n in stmt.named_children(&mut c) {
        if stmt.kind_name() == "import_from_statement" && field!(stmt, "module_name").is_some_and(|m| m.id() == n.id())
        {
            continue;
        }
        let bound = match n.kind_name() {
            "aliased_import" => field!(n, "alias"),
            "dotted_name" => n.named_child(0),
            _ => None,
        };
        out.extend(bound.map(|b| src[b.byte_range()].to_string()));
    }
    out
}

/// Literals, names, attributes, operators, tuples and `constexpr(...)`: an
/// expression whose evaluation runs no code of the user's.
fn is_constant(node: Node, src: &str) -> bool {
    match node.kind_name() {
        "integer"
        | "float"
        | "string"
        | "true"
        | "false"
        | "none"
        | "identifier"
        | "attribute"
        | "concatenated_string" => true,
        "call" => {
            let callee = field!(node, "function").map(|f| &src[f.byte_range()]).unwrap_or("");
            callee.rsplit('.').next() == Some("constexpr")
                && field!(node, "arguments").is_some_and(|a| {
                    let mut c = a.walk();
                    let args: Vec<Node> = a.named_children(&mut c).collect();
                    args.iter().all(|x| is_constant(*x, src))
                })
        }
        "binary_operator"
        | "unary_operator"
        | "parenthesized_expression"
        | "tuple"
        | "list"
        | "comparison_operator"
        | "boolean_operator"
        | "not_operator" => {
            let mut c = node.walk();
            let children: Vec<Node> = node.named_children(&mut c).collect();
            children.iter().all(|x| is_constant(*x, src))
        }
        _ => false,
    }
}

/// `src` with every byte outside `keep` turned into a space, newlines kept.
fn blank_outside(src: &str, keep: &[(usize, usize)]) -> String {
    let mut out: Vec<u8> = src.bytes().map(|b| if b == b'\n' { b'\n' } else { b' ' }).collect();
    for &(start, end) in keep {
        out[start..end].copy_from_slice(&src.as_bytes()[start..end]);
    }
    // Multi-byte characters outside the kept ranges became spaces byte by byte;
    // inside them they were copied whole: the result is valid UTF-8.
    let text = String::from_utf8(out).unwrap_or_default();
    // Trailing spaces on every line would only make the worker's linecache larger.
    text.lines().map(str::trim_end).collect::<Vec<_>>().join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(src: &str) -> Bundle {
        extract(src, &crate::model::parse_forest(src), &HashSet::from(["k".to_string()]))
    }

    #[test]
    fn host_code_is_blanked_and_the_kernel_keeps_its_lines() {
        let src = r#"import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
open("/tmp/x", "w").write("pwned")
N = 64
HALF = tl.constexpr(N // 2)
table = load_table()

@triton.autotune(configs=[triton.Config({"B": 64})], key=["n"])
@triton.jit
def k(x_ptr, n, B: tl.constexpr):
    pass

def launch(x):
    k[(1,)](x, 1)
"#;
        let b = bundle(src);
        let lines: Vec<&str> = b.source.lines().collect();
        assert_eq!(lines.len(), src.lines().count());
        assert_eq!(lines[0], "", "torch is not imported");
        assert_eq!(lines[1], "import triton");
        assert_eq!(lines[3], "from triton.language.extra import libdevice");
        assert_eq!(lines[4], "", "the module-level write is not shown");
        assert_eq!(lines[5], "N = 64");
        assert_eq!(lines[6], "HALF = tl.constexpr(N // 2)");
        assert_eq!(lines[7], "", "a call is host code");
        assert_eq!(lines[9], "", "autotune is blanked");
        assert_eq!(lines[10], "@triton.jit");
        assert_eq!(lines[11], "def k(x_ptr, n, B: tl.constexpr):");
        assert!(!b.source.contains("launch"));
        assert_eq!(b.hidden_names, vec!["launch", "table", "torch"]);
    }
}

#[cfg(test)]
mod conditional_imports {
    use super::*;

    #[test]
    fn an_import_under_a_module_level_if_is_not_shown() {
        let src = r#"import triton
import triton.language as tl

if check():
    try:
        from triton.language.extra.libdevice import tanh
    except ModuleNotFoundError:
        from triton.language.extra.cuda.libdevice import tanh
else:
    from triton.language.math import tanh


@triton.jit
def k(x):
    return tanh(x)
"#;
        let b = extract(src, &crate::model::parse_forest(src), &HashSet::from(["k".to_string()]));
        assert!(!b.source.contains("tanh\n"), "{}", b.source);
        assert!(b.source.contains("def k(x):"));
    }
}
