//! `textDocument/codeAction` (reads the analysis): quick fixes, suppressions, explanations, fix-all and the rewrites.

use super::*;

impl Server {
    pub(super) async fn on_code_action(&self, params: CodeActionParams) -> Result<Option<CodeActionResponse>> {
        self.analyzed(&params.text_document.uri).await;
        let st = self.state();
        let uri = &params.text_document.uri;
        let Some(doc) = st.docs.get(uri) else {
            return Ok(None);
        };
        let bench = st.bench.get(uri).map(|b| b.diagnostics.as_slice()).unwrap_or(&[]);
        Ok(Some(actions::code_actions(uri, doc, bench, &params, st.encoding, st.caps.code_action_resolve)))
    }
}
