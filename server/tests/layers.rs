//! The layers of ARCHITECTURE.md, checked on the source: every `crate::NAME`
//! path outside test code names the module itself or a layer below it. The
//! model knows nothing of rules, fixes or the checker; fixes read the model
//! but not the rules; rules read the model and build fixes, never run the
//! checker. Comments, string literals and `#[cfg(test)]` items are not edges
//! (a test may check a fix with the whole checker). The checker names no
//! rule module at all, tests included: it reaches rules through the registry.

use std::path::{Path, PathBuf};

/// Each layer and the modules it may use besides itself, bottom to top.
const LAYERS: &[(&str, &[&str])] = &[
    ("fork", &[]),
    ("text", &["fork"]),
    ("diagnostic", &["fork", "text"]),
    ("config", &["fork", "text", "diagnostic"]),
    ("model", &["fork", "text", "diagnostic", "config"]),
    ("fix", &["fork", "model", "text", "diagnostic", "config"]),
    ("rules", &["fork", "fix", "model", "text", "diagnostic", "config"]),
    ("checker", &["fork", "rules", "fix", "model", "text", "diagnostic", "config"]),
];

/// The source with comments removed and the contents of string and char
/// literals blanked; newlines are kept, so byte offsets keep their lines.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if (c == b'r' || c == b'b') && (i == 0 || !is_ident(b[i - 1])) && raw_string_start(&b[i..]).is_some() {
            // r"..", r#".."#, br#".."#: no escapes, ends at the quote and as many `#`.
            let (prefix, hashes) = raw_string_start(&b[i..]).unwrap_or_default();
            out.extend(std::iter::repeat_n(b' ', prefix));
            i += prefix;
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            while i < b.len() && !b[i..].starts_with(&close) {
                out.push(blank(b[i]));
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len().min(b.len() - i)));
            i += close.len();
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                let step = if b[i] == b'\\' { 2 } else { 1 };
                for k in 0..step.min(b.len() - i) {
                    out.push(blank(b[i + k]));
                }
                i += step;
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{7f}'), or a lifetime ('a), which is code.
            let len = if b.get(i + 1) == Some(&b'\\') {
                b.get(i + 3..).and_then(|r| r.iter().position(|&x| x == b'\'')).map(|p| p + 4)
            } else {
                let width = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + width) == Some(&b'\'')).then_some(width + 2)
            };
            match len {
                Some(n) => {
                    out.extend(std::iter::repeat_n(b' ', n));
                    i += n;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out.truncate(b.len());
    String::from_utf8_lossy(&out).into_owned()
}

/// At `r"`, `r#"`, `br"`...: (the length of the opening, the number of `#`).
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = usize::from(b.first() == Some(&b'b'));
    if b.get(i) != Some(&b'r') {
        return None;
    }
    i += 1;
    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
    (b.get(i + hashes) == Some(&b'"')).then_some((i + hashes + 1, hashes))
}

/// The byte ranges of the items under `#[cfg(test)]` in `code` (to the
/// item's `;`, or to the brace that closes its first `{`).
fn test_items(code: &str) -> Vec<(usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|p| p + from) {
        let end = (item_end(b, at) + 1).min(b.len());
        out.push((at, end));
        from = end;
    }
    out
}

/// The `;` that ends the item starting at `at`, or the brace that closes its first `{`.
fn item_end(b: &[u8], at: usize) -> usize {
    let mut depth = 0usize;
    let mut i = at;
    while i < b.len() {
        match b[i] {
            b';' if depth == 0 => break,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// `code` with every item under `#[cfg(test)]` blanked ([`test_items`]).
fn without_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    for (at, end) in test_items(code) {
        for c in &mut out[at..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Where `word` starts in `code` with no identifier byte before it.
fn word_starts<'c>(code: &'c str, word: &'c str) -> impl Iterator<Item = usize> + 'c {
    code.match_indices(word).map(|(at, _)| at).filter(|&at| at == 0 || !is_ident(code.as_bytes()[at - 1]))
}

/// The line (from 1) that holds byte `at`.
fn line_of(code: &str, at: usize) -> usize {
    code[..at].matches('\n').count() + 1
}

/// The crate modules a file's code names, with the line of each mention:
/// `crate::NAME` and each top-level name of `crate::{A, B::c, ...}`.
fn crate_modules(code: &str) -> Vec<(String, usize)> {
    let line = |at: usize| line_of(code, at);
    let mut out = Vec::new();
    for at in word_starts(code, "crate") {
        let rest = code[at + "crate".len()..].trim_start();
        let Some(rest) = rest.strip_prefix("::") else { continue };
        let rest = rest.trim_start();
        let name_at = |s: &str| s.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if let Some(group) = rest.strip_prefix('{') {
            // Top-level names of the group: the first name after `{` and after each `,` at depth 1.
            let mut depth = 1;
            let mut names = vec![name_at(group)];
            for (k, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => names.push(name_at(&group[k + 1..])),
                    _ => {}
                }
            }
            out.extend(names.into_iter().filter(|n: &String| !n.is_empty() && n != "self").map(|n| (n, line(at))));
        } else {
            let name: String = name_at(rest);
            if !name.is_empty() {
                out.push((name, line(at)));
            }
        }
    }
    out
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files of module `name`: `src/NAME.rs` or everything under `src/NAME/`.
fn files_of(name: &str) -> Vec<PathBuf> {
    let file = src_dir().join(format!("{name}.rs"));
    if file.is_file() {
        return vec![file];
    }
    rs_files_under(&src_dir().join(name))
}

/// Every `.rs` file under `dir`, sorted.
fn rs_files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn dependencies_point_down_the_layers() {
    let mut broken = Vec::new();
    let mut edges: Vec<(String, String)> = Vec::new();
    for (layer, allowed) in LAYERS {
        let files = files_of(layer);
        assert!(!files.is_empty(), "no source for `{layer}`");
        // A `tests.rs` is a `#[cfg(test)] mod tests;`: test code, like a `#[cfg(test)]` item.
        for path in files.into_iter().filter(|p| !p.ends_with("tests.rs")) {
            let src = std::fs::read_to_string(&path).expect("a source file");
            let code = without_tests(&code_only(&src));
            let shown = path.strip_prefix(src_dir()).unwrap_or(&path).display().to_string();
            if let Some(at) = code.find("super::super") {
                let line = line_of(code.as_str(), at);
                broken.push(format!("{shown}:{line}: `super::super` (name the module: `crate::...`)"));
            }
            for (module, line) in crate_modules(&code) {
                edges.push((layer.to_string(), module.clone()));
                if module != *layer && !allowed.contains(&module.as_str()) {
                    broken.push(format!("{shown}:{line}: `{layer}` uses `crate::{module}`; it may use {allowed:?}"));
                }
            }
        }
    }
    assert!(broken.is_empty(), "dependencies that point up (see ARCHITECTURE.md):\n{}", broken.join("\n"));
    // The edges the layering is about exist, so the scan reads what it should.
    for (from, to) in [("rules", "model"), ("rules", "fix"), ("fix", "model"), ("checker", "rules"), ("model", "text")]
    {
        assert!(edges.iter().any(|(f, t)| f == from && t == to), "no `{from}` -> `{to}` edge found: {edges:?}");
    }
}

#[test]
fn the_scan_sees_paths_in_code_only() {
    let modules = |src: &str| -> Vec<String> {
        crate_modules(&without_tests(&code_only(src))).into_iter().map(|(m, _)| m).collect()
    };
    assert_eq!(modules("use crate::{text::TextRange, rules::{self, Reach}};"), ["text", "rules"]);
    assert_eq!(modules("use crate :: {\n    model,\n    fix::shrink,\n};"), ["model", "fix"]);
    assert_eq!(modules("ID.get_or_init(|| $crate::model::field_id($name))"), ["model"]);
    assert_eq!(modules("let c = '{'; let n = '\\''; let u = '\\u{7b}'; let x = '×'; crate::fix::x()"), ["fix"]);
    assert_eq!(modules("fn f<'a>(x: &'a str) { crate::lsp::y(x) }"), ["lsp"]);
    assert!(modules("// crate::rules\n/// [`crate::checker`]\n/* crate::fix /* nested */ crate::lsp */").is_empty());
    assert!(modules(r##"let s = "crate::rules \" crate::fix"; let r = r#"crate::checker"#;"##).is_empty());
    assert!(modules("fn kcrate::rules() {}").is_empty());
    let with_tests =
        "#[cfg(test)]\nuse crate::checker::check_text;\n#[cfg(test)]\nmod tests {\n    use crate::checker;\n    \
                      fn f() { let d = \"}\"; if x { crate::rules::a() } }\n}\nfn g() {\n    crate::rules::b();\n}\n";
    let found = crate_modules(&without_tests(&code_only(with_tests)));
    assert_eq!(found, [("rules".to_string(), 9)]);
}

/// The identifiers of the form `klNNN` (a rule's module) in `code`, with their lines.
fn rule_modules(code: &str) -> Vec<(String, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for at in word_starts(code, "kl") {
        let end = (at + 2..b.len()).find(|&i| !is_ident(b[i])).unwrap_or(b.len());
        let digits = &code[at + 2..end];
        if digits.len() == 3 && digits.bytes().all(|c| c.is_ascii_digit()) {
            out.push((code[at..end].to_string(), line_of(code, at)));
        }
    }
    out
}

/// The checker, the rewrite gate and everything else outside `rules/` reach
/// rules only through the registry (`rules::RULES`: a rule's reach, its
/// per-node answer; `rules::Scope`: what it is given), never by naming a
/// rule's module; what they share with a rule is a fact of the model
/// (`model::task`, `model::untrusted`). A new rule is one registry line.
/// In the checker, test code counts too.
#[test]
fn nothing_outside_the_rules_names_a_rule_module() {
    let mut named = Vec::new();
    for path in rs_files_under(&src_dir()).into_iter().filter(|p| !p.starts_with(src_dir().join("rules"))) {
        let src = std::fs::read_to_string(&path).expect("a source file");
        let shown = path.strip_prefix(src_dir()).unwrap_or(&path).display().to_string();
        let code = code_only(&src);
        let code = if path.starts_with(src_dir().join("checker")) { code } else { without_tests(&code) };
        for (module, line) in rule_modules(&code) {
            named.push(format!("{shown}:{line}: `{module}` (reach rules through `rules::RULES`)"));
        }
    }
    assert!(named.is_empty(), "rule modules named outside the rules:\n{}", named.join("\n"));
    let found = |src: &str| rule_modules(&code_only(src)).into_iter().map(|(m, _)| m).collect::<Vec<_>>();
    assert_eq!(
        found("use crate::rules::{self, kl107};\n#[cfg(test)]\nuse crate::rules::kl108::x;"),
        ["kl107", "kl108"]
    );
    assert!(found("// kl001\nlet s = \"kl002\"; let kl0010 = 1; fn skl003() {}").is_empty());
}

/// The model holds facts of the file and memos of them (`OnceLock`), not
/// state its callers set or read back: the kernels a rule reports on and the
/// host stubs a question read arrive as arguments (`rules::Scope`,
/// `model::StubReads`), so the contract is in the signatures (#33). Checked
/// on `FileModel`'s fields: nothing a caller could write through `&self`
/// (a lock, a cell, an atomic) but the work counter the scaling tests bound.
#[test]
fn the_model_keeps_no_state_for_its_callers() {
    let interior = |fields: &str| -> Vec<String> {
        fields
            .lines()
            .map(str::trim)
            .filter(|l| ["Mutex", "RwLock", "Cell<", "Atomic"].iter().any(|t| l.contains(t)))
            .filter(|l| !l.starts_with("steps:"))
            .map(String::from)
            .collect()
    };
    let src = std::fs::read_to_string(src_dir().join("model/file.rs")).expect("model/file.rs");
    let code = code_only(&src);
    let start = code.find("pub struct FileModel<'a> {").expect("FileModel is defined in model/file.rs");
    let end = item_end(code.as_bytes(), start);
    let found = interior(&code[start..end]);
    assert!(found.is_empty(), "FileModel keeps state for its callers:\n{}", found.join("\n"));
    assert_eq!(
        interior("    focus: [AtomicUsize; 2],\n    steps: AtomicUsize,\n    read: std::sync::Mutex<Vec<usize>>,\n"),
        ["focus: [AtomicUsize; 2],", "read: std::sync::Mutex<Vec<usize>>,"]
    );
}

/// The longest a function may be, and a file outside its tests (#33).
const FUNCTION_LINES: usize = 150;
const FILE_LINES: usize = 800;

/// Each function defined with a body in `code` (comments and literals
/// blanked): its name, the line of its `fn` and how many lines it spans,
/// to the brace that closes its body. `fn(..)` types and bodiless
/// declarations are not functions here.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let line = |at: usize| line_of(code, at);
    let mut out = Vec::new();
    for at in word_starts(code, "fn") {
        if b.get(at + 2).is_some_and(|&c| is_ident(c)) {
            continue;
        }
        let rest = code[at + 2..].trim_start();
        let name: String = rest.chars().take_while(|&c| c.is_alphanumeric() || c == '_').collect();
        if name.is_empty() {
            continue;
        }
        let Some(open) = code[at..].find(['{', ';']).map(|p| p + at) else { continue };
        if b[open] == b';' {
            continue;
        }
        let close = item_end(b, open);
        out.push((name, line(at), line(close) - line(at) + 1));
    }
    out
}

/// #33's bounds on what a reader must hold at once: no source file over
/// 800 lines outside its tests (test modules and `tests.rs`, `*_tests.rs`
/// files are not counted), no function over 150 lines.
#[test]
fn no_file_or_function_is_too_long() {
    let mut long = Vec::new();
    let mut seen = 0;
    for path in rs_files_under(&src_dir()) {
        let file = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        if file == "tests.rs" || file.ends_with("_tests.rs") {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("a source file");
        let code = code_only(&src);
        let shown = path.strip_prefix(src_dir()).unwrap_or(&path).display().to_string();
        let test_lines: usize =
            test_items(&code).iter().map(|&(at, end)| code[at..end].matches('\n').count() + 1).sum();
        let lines = src.lines().count().saturating_sub(test_lines);
        if lines > FILE_LINES {
            long.push(format!("{shown}: {lines} lines outside its tests (at most {FILE_LINES})"));
        }
        for (name, line, span) in functions(&without_tests(&code)) {
            seen += 1;
            if span > FUNCTION_LINES {
                long.push(format!("{shown}:{line}: `fn {name}` spans {span} lines (at most {FUNCTION_LINES})"));
            }
        }
    }
    assert!(seen > 1000, "only {seen} functions found: the scan reads less than it should");
    assert!(long.is_empty(), "too long to read at once (split by what each part does):\n{}", long.join("\n"));
}

#[test]
fn the_function_scan_measures_bodies_only() {
    let code = code_only(
        "fn a() {\n    let s = \"}\";\n    let c = '{';\n}\n\
         trait T {\n    fn declared(&self);\n}\n\
         fn b(f: fn(u8) -> u8) -> impl Fn() {\n    move || {\n        f(1);\n    }\n}\n",
    );
    assert_eq!(functions(&code), [("a".to_string(), 1, 4), ("b".to_string(), 8, 5)]);
    let tests = code_only("fn kept() {}\n#[cfg(test)]\nmod tests {\n    fn hidden() {\n    }\n}\n");
    assert_eq!(test_items(&tests).len(), 1);
    assert_eq!(functions(&without_tests(&tests)), [("kept".to_string(), 1, 1)]);
}
