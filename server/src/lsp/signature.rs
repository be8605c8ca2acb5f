//! Signature help inside `tl.*` calls, jit-helper calls and launches
//! `kernel[grid](...)`: the signature, its parameters, and the one being
//! written (by comma count, or by its `name=`), constexpr parameters marked.

use tower_lsp_server::ls_types::{
    Documentation, MarkupContent, MarkupKind, ParameterInformation, ParameterLabel, SignatureHelp, SignatureInformation,
};

use crate::model::triton_api::{param_labels, TritonApi};

use super::hover_api::{api_name, jit_signature, param_label, version_line};
use super::semantic::{call_context, CallContext, Facts, JitFn};

/// The signature help at byte `offset` of `text`, if it is inside a call we know.
pub(crate) fn signature_help(text: &str, offset: usize, facts: &Facts, api: &TritonApi) -> Option<SignatureHelp> {
    let ctx = call_context(text, offset)?;
    if ctx.launch {
        return facts.jit_named(&ctx.callee).map(|k| jit_help(k, &ctx, true));
    }
    if let Some(f) = facts.jit_named(&ctx.callee) {
        return Some(jit_help(f, &ctx, false));
    }
    let name = api_name(facts, &ctx.callee)?;
    let entry = api.get(&name).filter(|e| e.kind != "value")?;
    let params = entry.params.as_deref()?;
    let labels = param_labels(params);
    let label = format!("tl.{}({})", entry.name, labels.join(", "));
    let shown: Vec<(String, Option<String>)> = labels
        .iter()
        .filter(|l| *l != "*" && *l != "/")
        .zip(params)
        .map(|(l, p)| (l.clone(), entry.param_doc(&p.name)))
        .collect();
    let names: Vec<(&str, bool)> = params.iter().map(|p| (p.name.as_str(), positional(&p.kind))).collect();
    let active = active_param(&ctx, &names, params.iter().position(|p| p.kind == "var_positional"));
    let mut doc = entry.summary().unwrap_or_default();
    doc.push_str(&format!("\n\n{}", version_line(api)));
    Some(help(label, &shown, active, doc))
}

fn positional(kind: &str) -> bool {
    kind == "positional_only" || kind == "positional_or_keyword" || kind == "var_positional"
}

/// The parameter the cursor is on: the keyword's, else the `index`-th
/// positional one (a `*args` takes the rest); None past the end.
fn active_param(ctx: &CallContext, names: &[(&str, bool)], var_positional: Option<usize>) -> Option<u32> {
    if let Some(k) = &ctx.keyword {
        return names.iter().position(|(n, _)| n == k).map(|i| i as u32);
    }
    if !ctx.keywords.is_empty() {
        // Positional after keywords is a syntax error; point at the first keyword not yet given.
        return names.iter().position(|(n, _)| !ctx.keywords.iter().any(|k| k == n)).map(|i| i as u32);
    }
    let positional: Vec<usize> = names.iter().enumerate().filter(|(_, (_, p))| *p).map(|(i, _)| i).collect();
    match positional.get(ctx.index) {
        Some(&i) => Some(i as u32),
        None => var_positional.map(|i| i as u32),
    }
}

fn jit_help(f: &JitFn, ctx: &CallContext, launch: bool) -> SignatureHelp {
    let head = if launch { format!("{}[grid]", f.name) } else { f.name.clone() };
    let labels: Vec<String> = f.params.iter().map(param_label).collect();
    let label = format!("{head}({})", labels.join(", "));
    let shown: Vec<(String, Option<String>)> = labels
        .iter()
        .zip(&f.params)
        .map(|(l, p)| (l.clone(), p.constexpr.then(|| "constexpr: a compile-time constant".to_string())))
        .collect();
    let names: Vec<(&str, bool)> = f.params.iter().map(|p| (p.name.as_str(), true)).collect();
    let active = active_param(ctx, &names, None);
    let what = if launch { "Launch of the kernel" } else { "Call of the jit helper" };
    let doc = format!("{what} `{}`\n\n```python\n{}\n```", f.name, jit_signature(f));
    help(label, &shown, active, doc)
}

/// A signature whose parameters are given by their offsets in the label
/// (UTF-16, as LSP counts them): a name such as `x` also occurs in `exp`.
fn help(label: String, params: &[(String, Option<String>)], active: Option<u32>, doc: String) -> SignatureHelp {
    let mut from = label.find('(').map_or(0, |i| i + 1);
    let utf16 = |i: usize| label[..i].encode_utf16().count() as u32;
    let mut parameters = Vec::new();
    for (p, pdoc) in params {
        let Some(at) = label[from..].find(p.as_str()).map(|i| i + from) else { continue };
        parameters.push(ParameterInformation {
            label: ParameterLabel::LabelOffsets([utf16(at), utf16(at + p.len())]),
            documentation: pdoc.clone().map(|d| Documentation::MarkupContent(markdown(d))),
        });
        from = at + p.len();
    }
    let signature = SignatureInformation {
        label,
        documentation: Some(Documentation::MarkupContent(markdown(doc))),
        parameters: Some(parameters),
        active_parameter: active,
    };
    SignatureHelp { signatures: vec![signature], active_signature: Some(0), active_parameter: active }
}

fn markdown(value: String) -> MarkupContent {
    MarkupContent { kind: MarkupKind::Markdown, value }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lsp::semantic::Semantic;
    use std::sync::Arc;

    fn at(src: &str) -> (String, usize) {
        let i = src.find('|').expect("cursor");
        (src.replacen('|', "", 1), i)
    }

    fn facts(text: &str) -> Arc<Facts> {
        Semantic::new(1, Arc::from(text), None).facts()
    }

    fn active_label(h: &SignatureHelp) -> String {
        let s = &h.signatures[0];
        let Some(i) = h.active_parameter else { return "none".into() };
        match &s.parameters.as_ref().expect("params")[i as usize].label {
            ParameterLabel::LabelOffsets([a, b]) => s.label[*a as usize..*b as usize].to_string(),
            ParameterLabel::Simple(l) => l.clone(),
        }
    }

    #[test]
    fn tl_calls_by_position_and_by_keyword() {
        let api = TritonApi::embedded();
        let (t, o) = at("import triton.language as tl\nx = tl.load(p, |");
        let h = signature_help(&t, o, &facts(&t), &api).expect("help in tl.load");
        assert!(h.signatures[0].label.starts_with("tl.load(pointer, mask=None"), "{}", h.signatures[0].label);
        assert_eq!(active_label(&h), "mask=None");
        let (t, o) = at("x = tl.load(p, eviction_policy=|");
        assert_eq!(active_label(&signature_help(&t, o, &facts(&t), &api).expect("help")), "eviction_policy=''");
        let (t, o) = at("y = tl.exp(|");
        assert_eq!(active_label(&signature_help(&t, o, &facts(&t), &api).expect("help")), "x");
    }

    #[test]
    fn launches_and_helpers_mark_constexpr_parameters() {
        let api = TritonApi::embedded();
        let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef add(a, b):\n    return a + b\n\n@triton.jit\ndef k(x_ptr, n, BLOCK: tl.constexpr):\n    y = add(1, |)\n\ndef run(x):\n    k[(1,)](x, 8, BLOCK=|\n";
        let first = src.find('|').expect("cursor");
        let text = src.replace('|', "");
        let second = src.rfind('|').expect("cursor") - 1;
        let f = facts(&text);
        let h = signature_help(&text, first, &f, &api).expect("helper call");
        assert_eq!((h.signatures[0].label.as_str(), active_label(&h).as_str()), ("add(a, b)", "b"));
        let h = signature_help(&text, second, &f, &api).expect("launch");
        assert_eq!(h.signatures[0].label, "k[grid](x_ptr, n, BLOCK: tl.constexpr)");
        assert_eq!(active_label(&h), "BLOCK: tl.constexpr");
        let doc = &h.signatures[0].parameters.as_ref().expect("p")[2].documentation;
        assert!(format!("{doc:?}").contains("constexpr"), "{doc:?}");
    }
}
