//! `textDocument/hover` (reads the analysis): a rule's documentation at its diagnostic, a kernel's summary.

use super::*;

impl Server {
    pub(super) async fn on_hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        self.analyzed(&params.text_document_position_params.text_document.uri).await;
        let st = self.state();
        let p = &params.text_document_position_params;
        let Some(doc) = st.docs.get(&p.text_document.uri) else {
            return Ok(None);
        };
        let offset = doc.offset(p.position, st.encoding);
        let markdown = hover::hover_markdown(doc, offset, st.bench.get(&p.text_document.uri));
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
