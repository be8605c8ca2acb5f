//! `textDocument/hover` (reads the analysis and the semantic snapshot): a
//! rule's documentation at its diagnostic, a `tl.*` name's signature and
//! docs, a kernel's or launch's summary, a kernel's compiled resources.

use super::*;

impl Server {
    pub(super) async fn on_hover(&self, params: HoverParams) -> Result<Option<Hover>> {
        let uri = &params.text_document_position_params.text_document.uri;
        // The analysis is awaited only where the hovered line was edited since
        // the last one landed: elsewhere its findings, moved through the
        // edits, answer at once (`Document::analysis_at`).
        let edited_here = {
            let st = self.state();
            st.docs.get(uri).is_some_and(|doc| {
                let offset = doc.offset(params.text_document_position_params.position, st.encoding);
                doc.analysis_at(offset).is_none()
            })
        };
        if edited_here {
            tracing::debug!("hover on a line edited since the last analysis: waiting for the next");
            self.analyzed(uri).await;
        }
        let (semantic, offset) = {
            let st = self.state();
            match st.docs.get(uri) {
                Some(doc) => (doc.semantic(), doc.offset(params.text_document_position_params.position, st.encoding)),
                None => return Ok(None),
            }
        };
        // Read off the state lock, once per version: the outline, and the
        // whole model's facts only on a kernel's name (its launches and calls).
        let outline = semantic.outline();
        let on_jit = super::super::hover_api::dotted_at(&semantic.text, offset)
            .is_some_and(|(_, name)| outline.jit_named(name).is_some());
        let facts = if on_jit { semantic.facts() } else { outline };
        let st = self.state();
        let p = &params.text_document_position_params;
        let Some(doc) = st.docs.get(&p.text_document.uri).filter(|d| d.version == semantic.version) else {
            return Ok(None);
        };
        let api = self.api_for(&doc.settings);
        // None only where the line was edited and the analysis did not land within its wait: no findings then.
        let at = doc.analysis_at(offset).unwrap_or_default();
        let inputs =
            hover::HoverInputs { bench: st.bench.get(&p.text_document.uri), api: &api, facts: &facts, at: &at };
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
