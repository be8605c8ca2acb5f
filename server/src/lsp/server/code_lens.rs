//! `textDocument/codeLens` (reads the analysis): per-kernel lenses.

use super::*;

impl Server {
    pub(super) async fn on_code_lens(&self, params: CodeLensParams) -> Result<Option<Vec<CodeLens>>> {
        self.analyzed(&params.text_document.uri).await;
        let st = self.state();
        let uri = &params.text_document.uri;
        let Some(doc) = st.docs.get(uri) else {
            return Ok(None);
        };
        Ok(Some(lens::code_lenses(uri, doc, st.bench.get(uri), st.encoding)))
    }
}
