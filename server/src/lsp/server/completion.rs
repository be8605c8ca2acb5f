//! `textDocument/completion` (reads the semantic snapshot): `tl.` members
//! with their docs, keyword arguments of the call around the cursor, and
//! the names a kernel body may use.

use super::*;

impl Server {
    pub(super) async fn on_completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let p = &params.text_document_position;
        let (semantic, offset, api, snippets) = {
            let st = self.state();
            let Some(doc) = st.docs.get(&p.text_document.uri) else {
                return Ok(None);
            };
            (doc.semantic(), doc.offset(p.position, st.encoding), self.api_for(&doc.settings), st.caps.snippets)
        };
        let facts = semantic.outline();
        let items = super::super::complete::complete(&semantic.text, offset, &facts, &api, snippets, &|k| {
            semantic.locals_of(k)
        });
        Ok(items.map(CompletionResponse::Array))
    }
}
