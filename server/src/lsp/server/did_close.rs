//! `textDocument/didClose` (changes state): the document and its benchmark state forgotten, its diagnostics cleared.

use super::*;

impl Server {
    pub(super) async fn on_did_close(&self, params: DidCloseTextDocumentParams) {
        let uri = params.text_document.uri;
        let pull = {
            let mut st = self.state();
            st.docs.remove(&uri);
            st.bench.remove(&uri);
            st.compile.remove(&uri);
            st.recent.retain(|u| *u != uri);
            self.compiling.forget(&uri);
            st.caps.pull_diagnostics
        };
        if !pull {
            let _ = self.publish_tx.send(Publish { uri, version: None, diagnostics: Vec::new() });
        }
    }
}
