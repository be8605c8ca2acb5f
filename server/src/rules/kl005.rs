//! KL005 unknown-triton-function.

use crate::analysis::field;
use crate::analysis::model::{call_arguments, range_of, FileModel};
use crate::analysis::triton_names;
use crate::config::Settings;
use crate::diagnostic::{Applicability, Diagnostic, Edit, Fix, Severity};

use super::Rule;

pub const RULE: Rule = Rule {
    code: "KL005",
    name: "unknown-triton-function",
    severity: Severity::Error,
    summary: "`tl.X` that `triton.language` does not have (`tl.tanh`)",
    doc: DOC,
    check,
};

const DOC: &str = r#"# KL005 unknown-triton-function

## What it does
Checks every `tl.X` (whatever `triton.language` is imported as) against the
public names of `triton.language`, generated from an installed Triton by
`server/data/gen_triton_names.py`.

## Why is this bad?
The kernel fails to compile: `AttributeError("module 'triton.language' has
no attribute 'tanh'")`. LLM-written kernels reach for NumPy/PyTorch names
(`tl.tanh`, `tl.relu`, `tl.pow`) that Triton does not have; in the runs this
rule comes from it cost a candidate. `tl.tanh` is still absent in Triton 3.9.

## Example
```python
y = tl.tanh(x)
```

## Use instead
```python
y = 2 * tl.sigmoid(2 * x) - 1
# or: from triton.language.extra import libdevice; y = libdevice.tanh(x)
```
The quick fix rewrites the common ones with an identity that is exact in
fp32 to within rounding: `tanh`, `relu`, `gelu` (erf form), `silu`, `softplus`,
`pow` (for positive bases), `rsqrt`-like aliases.
"#;

/// A replacement for a missing function, built from its argument texts.
fn replacement(name: &str, tl: &str, args: &[&str]) -> Option<String> {
    let x = args.first()?;
    let x =
        if x.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '.') { x.to_string() } else { format!("({x})") };
    Some(match (name, args.len()) {
        ("tanh", 1) => format!("(2 * {tl}.sigmoid(2 * {x}) - 1)"),
        ("relu", 1) => format!("{tl}.maximum({x}, 0.0)"),
        ("silu" | "swish", 1) => format!("({x} * {tl}.sigmoid({x}))"),
        ("gelu", 1) => format!("(0.5 * {x} * (1 + {tl}.erf({x} * 0.7071067811865476)))"),
        ("softplus", 1) => format!("{tl}.log(1 + {tl}.exp({x}))"),
        ("sinh", 1) => format!("(0.5 * ({tl}.exp({x}) - {tl}.exp(-{x})))"),
        ("cosh", 1) => format!("(0.5 * ({tl}.exp({x}) + {tl}.exp(-{x})))"),
        ("pow", 2) => format!("{tl}.exp2({tl}.log2({x}) * ({}))", args[1]),
        ("power", 2) => format!("{tl}.exp2({tl}.log2({x}) * ({}))", args[1]),
        ("max", 2) => format!("{tl}.maximum({x}, {})", args[1]),
        ("min", 2) => format!("{tl}.minimum({x}, {})", args[1]),
        ("mean", _) => return None,
        _ => return None,
    })
}

fn check(model: &FileModel, _settings: &Settings, out: &mut Vec<Diagnostic>) {
    for (name, attr) in &model.tl_attrs {
        if triton_names::is_known(name) {
            continue;
        }
        // `tl.insert_slice = insert_slice` defines the name (a shim for a back
        // end or another Triton version): an assignment, not a use.
        if attr.parent().is_some_and(|p| p.kind() == "assignment" && field!(p, "left") == Some(*attr)) {
            continue;
        }
        let tl = field!(attr, "object").map(|o| model.text(o)).unwrap_or("tl");
        let fix =
            attr.parent().filter(|p| p.kind() == "call" && field!(p, "function") == Some(*attr)).and_then(|call| {
                let (args, kwargs) = call_arguments(call, model.src);
                if !kwargs.is_empty() {
                    return None;
                }
                let texts: Vec<&str> = args.iter().map(|a| model.text(*a).trim()).collect();
                let new_text = replacement(name, tl, &texts)?;
                Some(Fix {
                    title: format!("Replace `{tl}.{name}(...)` with `{new_text}`"),
                    applicability: if name == "pow" || name == "power" {
                        Applicability::NeedsReview
                    } else {
                        Applicability::Safe
                    },
                    edits: vec![Edit { range: range_of(call), new_text }],
                })
            });
        let hint = match name.as_str() {
            "tanh" => " Use `2 * tl.sigmoid(2 * x) - 1` or `libdevice.tanh`.",
            "relu" => " Use `tl.maximum(x, 0.0)`.",
            "pow" | "power" => " Use `libdevice.pow` or `tl.exp2(tl.log2(x) * y)` for positive x.",
            _ => "",
        };
        let message = format!(
            "`triton.language` has no `{name}` (checked against Triton {}): the kernel fails with AttributeError.{hint}",
            triton_names::generated_from()
        );
        out.push(RULE.diagnostic(range_of(*attr), message).with_fix(fix));
    }
}
