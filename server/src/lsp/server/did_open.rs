//! `textDocument/didOpen` (changes state, runs in order): the document with its settings, analysed at once.

use super::*;

impl Server {
    pub(super) async fn on_did_open(&self, params: DidOpenTextDocumentParams) {
        let item = params.text_document;
        // Typing usually follows: background processes wait for a pause after it.
        crate::lsp::background::edits().edited();
        let evicted;
        let ask;
        let error = {
            let mut st = self.state();
            let (settings, error) = st.settings_for(&item.uri);
            let settings = with_triton_names(&self.triton_names, settings);
            ask = settings.1;
            let settings = settings.0;
            st.docs.insert(item.uri.clone(), Document::new(&item.text, item.version, settings));
            evicted = st.touch(&item.uri);
            if let Some(b) = st.bench.get_mut(&item.uri) {
                b.diagnostics.clear();
            }
            self.publish_tx.publish(&st, &item.uri);
            error
        };
        drop(evicted);
        self.compiling.schedule(&self.state, &self.publish_tx, &self.client, &item.uri, true);
        if let Some(python) = ask {
            self.ask_triton_names(python);
        }
        if let Some(e) = error {
            self.client.show_message(MessageType::ERROR, format!("kernel-lsp: {e}")).await;
        }
    }
}
