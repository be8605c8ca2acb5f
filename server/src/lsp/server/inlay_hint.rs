//! `textDocument/inlayHint` (reads the analysis): per-kernel hints.

use super::*;

impl Server {
    pub(super) async fn on_inlay_hint(&self, params: InlayHintParams) -> Result<Option<Vec<InlayHint>>> {
        self.analyzed(&params.text_document.uri).await;
        let st = self.state();
        let uri = &params.text_document.uri;
        let Some(doc) = st.docs.get(uri) else {
            return Ok(None);
        };
        let mut hints = lens::inlay_hints(doc, st.bench.get(uri), st.encoding);
        hints.extend(crate::lsp::compile::inlay_hints(&st, uri, st.encoding));
        Ok(Some(hints))
    }
}
