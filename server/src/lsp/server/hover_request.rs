//! `textDocument/hover` (reads the analysis and the semantic snapshot): a
//! rule's documentation at its diagnostic, a `tl.*` name's signature and
//! docs, a kernel's or launch's summary, a kernel's compiled resources.

use super::*;

impl Server {
    pub(super) async fn on_hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let uri = &params.text_document_position_params.text_document.uri;
        self.analyzed(uri).await;
        let semantic = match self.state().docs.get(uri) {
            Some(doc) => doc.semantic(),
            None => return Ok(None),
        };
        // Built off the state lock, once per version.
        let facts = semantic.facts();
        let st = self.state();
        let p = &params.text_document_position_params;
        let Some(doc) = st.docs.get(&p.text_document.uri) else {
            return Ok(None);
        };
        let offset = doc.offset(p.position, st.encoding);
        let api = self.api_for(&doc.settings);
        let facts = if doc.version == semantic.version { facts } else { doc.semantic().facts() };
        let inputs = hover::HoverInputs { bench: st.bench.get(&p.text_document.uri), api: &api, facts: &facts };
        let markdown = hover::hover_markdown(doc, offset, &inputs);
        let compiled = crate::lsp::compile::hover(&st, &p.text_document.uri, offset);
        let markdown = match (markdown, compiled) {
            (Some(a), Some(b)) => Some(format!("{a}\n\n---\n\n{b}")),
            (a, b) => a.or(b),
        };
        Ok(markdown.map(|value| Hover {
            contents: HoverContents::Markup(MarkupContent { kind: MarkupKind::Markdown, value }),
            range: None,
        }))
    }
}
