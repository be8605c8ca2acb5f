//! Completion: the members of `tl.` (and `tl.math.`, `libdevice.`) with
//! their documentation and a snippet of their required parameters; the
//! keyword arguments of the `tl.*` or jit call the cursor is in; and inside a
//! kernel only what Triton accepts there (its parameters and locals, the jit
//! functions and `tl.constexpr` globals of the file, `tl`/`triton`, and the
//! Python builtins Triton's code generator knows).

use tower_lsp_server::ls_types::{
    CompletionItem, CompletionItemKind, Documentation, InsertTextFormat, MarkupContent, MarkupKind,
};

use crate::model::triton_api::{ApiEntry, TritonApi};

use super::hover_api::{api_hover, api_name, jit_signature};
use super::semantic::{call_context, Facts, JitFn};

/// The builtins a `@triton.jit` body may call (`CodeGenerator.builtin_namespace`).
const KERNEL_BUILTINS: &[&str] =
    &["range", "min", "max", "print", "len", "list", "float", "int", "isinstance", "getattr", "hasattr"];

/// The completion items at byte `offset` of `text`; None where we have nothing to offer.
pub(crate) fn complete(
    text: &str,
    offset: usize,
    facts: &Facts,
    api: &TritonApi,
    snippets: bool,
    locals: &dyn Fn(&JitFn) -> Vec<String>,
) -> Option<Vec<CompletionItem>> {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let word_start = before.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_').len();
    let kernel = kernel_at(text, facts, offset);
    if let Some(qualifier) = before[..word_start].strip_suffix('.') {
        return members(qualifier, facts, api, kernel.is_some(), snippets);
    }
    let mut items = keyword_items(text, offset, facts, api);
    if let Some(k) = kernel {
        items.extend(kernel_names(k, facts, &locals(k)));
    }
    (!items.is_empty()).then_some(items)
}

/// The jit function the cursor is in: inside its `def`, or on an indented
/// line after its last statement with nothing but blank space between (a
/// line being started at the end of a kernel).
fn kernel_at<'f>(text: &str, facts: &'f Facts, offset: usize) -> Option<&'f JitFn> {
    let f = facts.jit.iter().filter(|f| f.range.start < offset).max_by_key(|f| f.range.start)?;
    if offset <= f.range.end {
        return Some(f);
    }
    let gap = text.get(f.range.end..offset)?;
    let line = &text[text[..offset].rfind('\n').map_or(0, |i| i + 1)..offset];
    let indented = line.starts_with(' ') || line.starts_with('\t');
    (indented
        && gap.trim_start_matches(|c: char| c.is_whitespace() || c.is_ascii_alphanumeric() || c == '_').is_empty())
    .then_some(f)
}

/// `tl.`, `tl.math.`, `libdevice.`: the API's members; in host code only
/// its types and values (`tl.float16`, `tl.constexpr`): its functions work
/// only inside a `@triton.jit` function.
fn members(
    qualifier: &str,
    facts: &Facts,
    api: &TritonApi,
    in_kernel: bool,
    snippets: bool,
) -> Option<Vec<CompletionItem>> {
    let dotted = qualifier.rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.')).next()?;
    let mut prefix = api_name(facts, &format!("{dotted}.x"))?.strip_suffix('x')?.to_string();
    if let Some(rest) = prefix.strip_prefix("extra.cuda.") {
        prefix = format!("extra.{rest}");
    }
    let entries = api.members(&prefix);
    if entries.is_empty() {
        return None;
    }
    let items = entries
        .into_iter()
        .filter(|e| in_kernel || e.kind != "function")
        .map(|e| member_item(e, &prefix, api, snippets))
        .collect();
    Some(items)
}

fn member_item(e: &ApiEntry, prefix: &str, api: &TritonApi, snippets: bool) -> CompletionItem {
    let label = e.name.strip_prefix(prefix).unwrap_or(&e.name).to_string();
    let kind = match e.kind.as_str() {
        "function" => CompletionItemKind::FUNCTION,
        "class" => CompletionItemKind::CLASS,
        _ => CompletionItemKind::CONSTANT,
    };
    let required: Vec<&str> = e
        .params()
        .iter()
        .filter(|p| p.default.is_none() && (p.kind == "positional_only" || p.kind == "positional_or_keyword"))
        .map(|p| p.name.as_str())
        .collect();
    let snippet = (snippets && e.kind == "function").then(|| {
        let args: Vec<String> = required.iter().enumerate().map(|(i, p)| format!("${{{}:{p}}}", i + 1)).collect();
        format!("{label}({})$0", args.join(", "))
    });
    CompletionItem {
        label: label.clone(),
        kind: Some(kind),
        detail: Some(format!("{} · Triton {}", e.signature(), api.version)),
        documentation: Some(markdown(api_hover(api, e))),
        insert_text_format: snippet.as_ref().map(|_| InsertTextFormat::SNIPPET),
        insert_text: snippet,
        ..Default::default()
    }
}

/// `name=` for each keyword parameter of the call the cursor is in that the call does not give yet.
fn keyword_items(text: &str, offset: usize, facts: &Facts, api: &TritonApi) -> Vec<CompletionItem> {
    let Some(ctx) = call_context(text, offset) else { return Vec::new() };
    if ctx.keyword.is_some() {
        return Vec::new();
    }
    let params: Vec<(String, String)> = if let Some(f) = facts.jit_named(&ctx.callee) {
        f.params
            .iter()
            .map(|p| (p.name.clone(), if p.constexpr { "constexpr".into() } else { String::new() }))
            .collect()
    } else {
        let Some(entry) = api_name(facts, &ctx.callee).and_then(|n| api.get(&n)) else { return Vec::new() };
        entry
            .params()
            .iter()
            .filter(|p| p.kind == "positional_or_keyword" || p.kind == "keyword_only")
            .map(|p| (p.name.clone(), p.default.as_ref().map(|d| format!("default {d}")).unwrap_or_default()))
            .collect()
    };
    params
        .into_iter()
        .filter(|(n, _)| !ctx.keywords.contains(n))
        .map(|(name, detail)| CompletionItem {
            label: format!("{name}="),
            kind: Some(CompletionItemKind::PROPERTY),
            detail: (!detail.is_empty()).then_some(detail),
            sort_text: Some(format!("0{name}")),
            ..Default::default()
        })
        .collect()
}

/// The names a kernel body may use.
fn kernel_names(k: &JitFn, facts: &Facts, locals: &[String]) -> Vec<CompletionItem> {
    let item = |label: &str, kind: CompletionItemKind, detail: String| CompletionItem {
        label: label.to_string(),
        kind: Some(kind),
        detail: Some(detail),
        ..Default::default()
    };
    let mut items: Vec<CompletionItem> = Vec::new();
    for p in &k.params {
        let what = if p.constexpr { "constexpr parameter" } else { "parameter" };
        items.push(item(&p.name, CompletionItemKind::VARIABLE, format!("{what} of {}", k.name)));
    }
    for l in locals.iter().filter(|l| !k.params.iter().any(|p| &p.name == *l)) {
        items.push(item(l, CompletionItemKind::VARIABLE, format!("local of {}", k.name)));
    }
    for f in &facts.jit {
        items.push(item(&f.name, CompletionItemKind::FUNCTION, jit_signature(f)));
    }
    for g in &facts.constexpr_globals {
        items.push(item(g, CompletionItemKind::CONSTANT, "tl.constexpr global".into()));
    }
    let modules = facts.tl_aliases.iter().chain(&facts.triton_aliases);
    for m in modules {
        items.push(item(m, CompletionItemKind::MODULE, "module".into()));
    }
    for b in KERNEL_BUILTINS {
        items.push(item(b, CompletionItemKind::FUNCTION, "builtin Triton accepts in a kernel".into()));
    }
    items
}

fn markdown(value: String) -> Documentation {
    Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::semantic::Semantic;
    use std::sync::Arc;

    const SRC: &str = "import torch\nimport triton\nimport triton.language as tl\n\nSCALE = tl.constexpr(2)\nLIMIT = 7\n\n@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs, mask=offs < n, )\n    y = tl.\n    \n\ndef host():\n    d = tl.\n";

    fn items_at(needle: &str, delta: usize) -> Vec<CompletionItem> {
        let text: Arc<str> = Arc::from(SRC);
        let semantic = Semantic::new(1, text.clone(), None);
        let facts = semantic.facts();
        let at = SRC.find(needle).expect("needle") + delta;
        complete(&text, at, &facts, &TritonApi::embedded(), true, &|k| semantic.locals_of(k)).unwrap_or_default()
    }

    fn labels(items: &[CompletionItem]) -> Vec<&str> {
        items.iter().map(|i| i.label.as_str()).collect()
    }

    #[test]
    fn tl_members_carry_docs_and_snippets_inside_a_kernel() {
        let items = items_at("    y = tl.", 11);
        let load = items.iter().find(|i| i.label == "load").expect("tl.load offered");
        assert_eq!(load.insert_text.as_deref(), Some("load(${1:pointer})$0"));
        assert!(format!("{:?}", load.documentation).contains("triton.language.load.html"));
        assert!(labels(&items).contains(&"float16"));
        assert!(!labels(&items).contains(&"tanh"));
    }

    #[test]
    fn host_code_gets_only_tl_types_and_values() {
        let items = items_at("    d = tl.", 11);
        assert!(labels(&items).contains(&"float16") && labels(&items).contains(&"constexpr"));
        assert!(!labels(&items).contains(&"load"), "{:?}", labels(&items));
    }

    #[test]
    fn keyword_arguments_of_tl_load_not_yet_given() {
        let items = items_at("offs < n, )", 10);
        let l = labels(&items);
        assert!(l.contains(&"other=") && l.contains(&"eviction_policy="), "{l:?}");
        assert!(!l.contains(&"mask="), "mask is given: {l:?}");
    }

    #[test]
    fn a_kernel_body_offers_only_what_triton_accepts() {
        let items = items_at("    \n\ndef host", 4);
        let l = labels(&items);
        for want in ["x_ptr", "BLOCK", "offs", "k", "SCALE", "tl", "triton", "range", "min"] {
            assert!(l.contains(&want), "{want} missing: {l:?}");
        }
        for not in ["torch", "host", "LIMIT", "abs"] {
            assert!(!l.contains(&not), "{not} offered: {l:?}");
        }
    }
}
