//! `textDocument/completion` (reads the settings): `tl.*` names.

use super::*;

impl Server {
    pub(super) async fn on_completion(&self, params: CompletionParams) -> Result<Option<CompletionResponse>> {
        let st = self.state();
        let p = &params.text_document_position;
        let Some(doc) = st.docs.get(&p.text_document.uri) else {
            return Ok(None);
        };
        let offset = doc.offset(p.position, st.encoding);
        let before = &doc.text()[..offset];
        let partial = before.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        if !partial.ends_with("tl.") {
            return Ok(None);
        }
        let items = crate::model::triton_names::all()
            .map(|name| CompletionItem {
                label: name.to_string(),
                kind: Some(CompletionItemKind::FUNCTION),
                detail: Some(format!("triton.language.{name}")),
                ..Default::default()
            })
            .collect();
        Ok(Some(CompletionResponse::Array(items)))
    }
}
