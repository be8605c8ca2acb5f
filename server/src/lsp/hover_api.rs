//! What hover says of the code itself (beside diagnostics): a `tl.*` name's
//! signature and documentation from the Triton API in use, a kernel's or jit
//! helper's signature with where it is launched or called, and a launch's
//! kernel, grid and number of programs.

use crate::model::triton_api::{ApiEntry, TritonApi};
use crate::text::TextRange;

use super::semantic::{Facts, JitFn, LaunchSite};

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The dotted name through the identifier under `offset` (`tl.math.exp` on
/// `math`: `tl.math`), and where it is.
pub(crate) fn dotted_at(text: &str, offset: usize) -> Option<(TextRange, &str)> {
    let bytes = text.as_bytes();
    let offset = offset.min(bytes.len());
    let mut end = offset;
    while end < bytes.len() && is_ident(bytes[end]) {
        end += 1;
    }
    let mut start = offset;
    while start > 0 && (is_ident(bytes[start - 1]) || bytes[start - 1] == b'.') {
        start -= 1;
    }
    while start < end && bytes[start] == b'.' {
        start += 1;
    }
    (start < end && !bytes[start].is_ascii_digit()).then(|| (TextRange::new(start, end), &text[start..end]))
}

/// The API name a dotted name stands for: `tl.load` -> `load`, `tl.math.exp`
/// -> `math.exp`, `triton.language.dot` -> `dot`, `libdevice.tanh` ->
/// `extra.libdevice.tanh`. `tl` counts even where the file does not import it.
pub(crate) fn api_name(facts: &Facts, dotted: &str) -> Option<String> {
    if let Some(rest) = dotted.strip_prefix("triton.language.") {
        return Some(rest.to_string());
    }
    if let Some(rest) = dotted.strip_prefix("libdevice.") {
        return Some(format!("extra.libdevice.{rest}"));
    }
    let (head, rest) = dotted.split_once('.')?;
    let alias = head == "tl" || facts.tl_aliases.iter().any(|a| a == head);
    (alias && !rest.is_empty()).then(|| rest.to_string())
}

/// Where an API's version is shown: `Triton 3.9.0 (the embedded database)`.
pub(crate) fn version_line(api: &TritonApi) -> String {
    format!("Triton {} ({})", api.version, api.source)
}

/// Markdown for a `tl.*` name the API has.
pub(crate) fn api_hover(api: &TritonApi, entry: &ApiEntry) -> String {
    let mut s = format!("```python\n{}\n```\n", entry.signature());
    if let Some(summary) = entry.summary() {
        s.push_str(&format!("\n{summary}\n"));
    }
    let link = match entry.docs_url() {
        Some(url) => format!("[`triton.language.{}`]({url})", entry.name),
        None => format!("`{}`", entry.module),
    };
    s.push_str(&format!("\n{link} · {}", version_line(api)));
    s
}

/// `def k(x_ptr, n, BLOCK: tl.constexpr = 128)` as the file writes it, constexpr marked.
pub(crate) fn jit_signature(f: &JitFn) -> String {
    let params: Vec<String> = f.params.iter().map(param_label).collect();
    format!("def {}({})", f.name, params.join(", "))
}

pub(crate) fn param_label(p: &super::semantic::FnParam) -> String {
    let ty = if p.constexpr { ": tl.constexpr" } else { "" };
    match &p.default {
        Some(d) => format!("{}{ty} = {d}", p.name),
        None => format!("{}{ty}", p.name),
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset).map_or(0, |t| t.bytes().filter(|&b| b == b'\n').count()) + 1
}

fn lines(text: &str, offsets: &[usize]) -> String {
    let mut ls: Vec<usize> = offsets.iter().map(|&o| line_of(text, o)).collect();
    ls.dedup();
    ls.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ")
}

/// Markdown for a kernel or jit helper: its signature, its constexprs, and
/// where it is launched (a kernel) or called (a helper).
pub(crate) fn jit_hover(text: &str, f: &JitFn) -> String {
    let mut s = format!("```python\n@triton.jit\n{}\n```\n", jit_signature(f));
    let constexprs: Vec<String> = f.params.iter().filter(|p| p.constexpr).map(|p| format!("`{}`", p.name)).collect();
    if !constexprs.is_empty() {
        s.push_str(&format!("\nconstexpr: {}\n", constexprs.join(", ")));
    }
    match (f.launch_sites.is_empty(), f.call_sites.is_empty()) {
        (false, _) => s.push_str(&format!("\n**Kernel**, launched at line {}\n", lines(text, &f.launch_sites))),
        (true, false) => s.push_str(&format!("\n**jit helper**, called at line {}\n", lines(text, &f.call_sites))),
        (true, true) => s.push_str("\n**jit function**, not launched or called in this file\n"),
    }
    s
}

/// Markdown for a launch `k[grid](...)` whose kernel name or grid is under `offset`.
pub(crate) fn launch_hover(text: &str, facts: &Facts, offset: usize) -> Option<String> {
    let l: &LaunchSite = facts.launches.iter().find(|l| l.header.start <= offset && offset <= l.header.end)?;
    let programs = match l.programs {
        Some(n) => format!("{n} program{}", if n == 1 { "" } else { "s" }),
        None => "a number of programs not known before it runs".to_string(),
    };
    let mut s = format!("**Launch** of `{}` on grid `{}`: {programs}\n", l.kernel, l.grid.trim());
    if let Some(k) = facts.jit_named(&l.kernel) {
        s.push_str(&format!("\n```python\n{}\n```\n", jit_signature(k)));
        s.push_str(&format!("\ndefined at line {}\n", line_of(text, k.name_range.start)));
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotted_names_under_the_cursor() {
        let t = "y = tl.math.exp(x) + libdevice.tanh(x)";
        assert_eq!(dotted_at(t, t.find("exp").unwrap() + 1).map(|d| d.1), Some("tl.math.exp"));
        assert_eq!(dotted_at(t, t.find("math").unwrap()).map(|d| d.1), Some("tl.math"));
        assert_eq!(dotted_at(t, t.find("tanh").unwrap()).map(|d| d.1), Some("libdevice.tanh"));
        let facts = Facts::default();
        assert_eq!(api_name(&facts, "tl.math.exp").as_deref(), Some("math.exp"));
        assert_eq!(api_name(&facts, "libdevice.tanh").as_deref(), Some("extra.libdevice.tanh"));
        assert_eq!(api_name(&facts, "torch.exp"), None);
    }

    #[test]
    fn a_tl_hover_has_the_signature_the_summary_the_link_and_the_version() {
        let api = TritonApi::embedded();
        let h = api_hover(&api, api.get("program_id").expect("program_id"));
        assert!(h.contains("tl.program_id(axis)"), "{h}");
        assert!(h.contains("Returns the id of the current program instance"), "{h}");
        assert!(h.contains("https://triton-lang.org/main/python-api/generated/triton.language.program_id.html"), "{h}");
        assert!(h.contains(&format!("Triton {}", api.version)), "{h}");
    }
}
