//! `textDocument/didChange` (changes state, runs in order): the edits applied and reparsed under the state lock; the analysis runs as a task off the lock and publishes when it lands.

use super::*;

impl Server {
    pub(super) async fn on_did_change(&self, params: DidChangeTextDocumentParams) {
        let began = std::time::Instant::now();
        crate::lsp::background::edits().edited();
        let uri = params.text_document.uri;
        let mut st = self.state();
        let encoding = st.encoding;
        let Some(doc) = st.docs.get_mut(&uri) else {
            warn!("didChange for {} which is not open; ignored", uri.as_str());
            return;
        };
        if params.text_document.version <= doc.version {
            warn!(
                "didChange for {} goes from version {} to {}",
                uri.as_str(),
                doc.version,
                params.text_document.version
            );
        }
        for w in doc.apply_changes(params.text_document.version, &params.content_changes, encoding) {
            warn!("{}: {w}", uri.as_str());
        }
        let job = doc.analysis_job();
        let reparse = if doc.reparsed_incrementally() { "incremental" } else { "fresh" };
        let edited = began.elapsed();
        let evicted = st.touch(&uri);
        if let Some(b) = st.bench.get_mut(&uri) {
            b.diagnostics.clear();
        }
        st.compile.remove(&uri);
        drop(st);
        self.compiling.schedule(&self.state, &self.publish_tx, &self.client, &uri, false);
        // The analysis runs off the state lock and off the runtime, on the
        // analysis thread, so hovers, code actions and the next edit never
        // wait for it; one whose version a newer edit replaced before its turn
        // is skipped, and a result for an outdated version is dropped.
        let state = self.state.clone();
        let publish_tx = self.publish_tx.clone();
        crate::lsp::background::ANALYSIS.submit(move || {
            let started = began.elapsed();
            let current = lock(&state).docs.get(&uri).is_some_and(|doc| doc.version == job.version);
            if !current {
                tracing::debug!("version {}: replaced before its analysis began; skipped", job.version);
                return;
            }
            let result = job.run();
            let analysed = began.elapsed();
            let replaced = {
                let st = &mut *lock(&state);
                let replaced = st.docs.get_mut(&uri).and_then(|doc| doc.install_replacing(job.version, result));
                if replaced.is_some() && !st.caps.pull_diagnostics {
                    publish_tx.publish(st, &uri);
                }
                replaced
            };
            tracing::debug!(
                "version {}: edit and {reparse} reparse {edited:?}, analysis {:?} (started after {started:?}), ready to publish after {:?}",
                job.version,
                analysed - started,
                began.elapsed()
            );
            // What the analysis replaced, and the trees this edit evicted, are
            // freed off the lock, after the publication.
            drop(replaced);
            drop(evicted);
        });
    }
}
