//! `textDocument/signatureHelp` (reads the semantic snapshot): the `tl.*`,
//! jit-helper or launch call around the cursor and its active parameter.

use super::*;

impl Server {
    pub(super) async fn on_signature_help(&self, params: SignatureHelpParams) -> Result<Option<SignatureHelp>> {
        let p = &params.text_document_position_params;
        let (semantic, offset, api) = {
            let st = self.state();
            let Some(doc) = st.docs.get(&p.text_document.uri) else {
                return Ok(None);
            };
            (doc.semantic(), doc.offset(p.position, st.encoding), self.api_for(&doc.settings))
        };
        let facts = semantic.outline();
        Ok(super::super::signature::signature_help(&semantic.text, offset, &facts, &api))
    }
}
