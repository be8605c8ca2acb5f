//! KL108 untrusted-side-effect.

use crate::diagnostic::{Diagnostic, Severity};
use crate::model::{candidate, untrusted, NodeKind};
use crate::text::TextRange;

use super::{Reach, Rule, Scope};

pub const RULE: Rule = Rule {
    code: "KL108",
    name: "untrusted-side-effect",
    severity: Severity::Warning,
    summary: "imports outside the task's needs, `exec`/`eval`/`__import__`, writing files, or touching the environment",
    doc: DOC,
    reach: Reach::Host,
    hygiene: true,
    check,
    per_node: Some(per_node),
};

const DOC: &str = r#"# KL108 untrusted-side-effect

## What it does
In a candidate file, reports what a kernel file has no need for and an LLM
answer must not do when it is verified:

- imports of modules that reach the system, the network or other code
  (`subprocess`, `socket`, `shutil`, `ctypes`, `importlib`, `requests`,
  `pickle`, `pathlib`, `sys`, ...); `os` is allowed only for reading
  `TRITON_*`, `CUDA_*`, `TORCH_*` and `PYTORCH_*` variables. The rewrite gate
  is stricter: an answer may import only `torch`, `triton`, `math`, `numpy`
  and a few pure standard modules (`functools`, `itertools`, `typing`,
  `dataclasses`, `collections`, `operator`, `enum`, `abc`, `numbers`,
  `random`, `copy`, `contextlib`, `warnings`, `__future__`, `einops`), so a
  sibling module of yours is fine in the editor and refused in an answer;
- `exec`, `eval`, `compile`, `__import__`, `globals`, `breakpoint`,
  `__builtins__`;
- `open(...)` for writing (`"w"`, `"a"`, `"x"`, `"+"`), and calls that write
  a file given a path (`torch.save`, `np.save`, `np.savez`, `np.savetxt`,
  `shutil.copy`/`move`, `Path.write_text`/`write_bytes`);
- the environment: `os.environ` written, or read for any other name
  (an API key, for one), `os.system`, `os.putenv`;
- code from outside the file: `torch.load`, `torch.hub.*`,
  `torch.utils.cpp_extension.*`, `torch.ops.load_library`.

The rewrite gate refuses an LLM answer with any of these before it runs, and
says why in the repair prompt; this rule shows the same in the editor, as a
warning, since a file you wrote yourself is yours to run.

## Why is this bad?
Verifying a rewrite runs its code with your rights. An answer that starts
with `import os; os.system("...")` would run that command during
verification; one that reads `OPENAI_API_KEY` and raises it as an error
would send the key back to the model in the repair prompt.

## Example
```python
import os
import subprocess

os.environ["CUDA_LAUNCH_BLOCKING"] = "1"
subprocess.run(["nvidia-smi"])
```

## Use instead
Kernel files import `torch`, `triton` and pure helpers only; configuration
belongs in the harness's settings, not in the candidate.
"#;

fn check(scope: &Scope, out: &mut Vec<Diagnostic>) {
    let model = scope.model;
    if !candidate::is_candidate(model) {
        return;
    }
    for (range, why) in untrusted::findings(model, false) {
        out.push(diagnostic(range, &why));
    }
}

/// The diagnostic for a finding (`why`) at `range`.
fn diagnostic(range: TextRange, why: &str) -> Diagnostic {
    RULE.diagnostic(range, format!("{why}: verifying this file would run it with your rights"))
}

/// KL108's findings among `nodes`: each depends on its node and the file's
/// imports alone (in position order, without repeats).
fn per_node(src: &str, imports: &candidate::Imports, nodes: &[tree_sitter::Node]) -> Vec<Diagnostic> {
    // The imports among `nodes`: a module whose node is one of them (not
    // merely a range inside the statement, which `imports` of an earlier
    // text may give).
    let import_nodes: Vec<(usize, usize)> = nodes
        .iter()
        .filter(|n| matches!(n.kind_name(), "dotted_name" | "aliased_import" | "relative_import"))
        .map(|n| (n.start_byte(), n.end_byte()))
        .collect();
    let mut found = untrusted::module_findings(imports, false, |r| import_nodes.contains(&(r.start, r.end)));
    found.extend(untrusted::node_findings(src, imports, nodes.iter().copied()));
    found.sort_by_key(|(r, _)| (r.start, r.end));
    found.dedup();
    found.into_iter().map(|(r, why)| diagnostic(r, &why)).collect()
}
