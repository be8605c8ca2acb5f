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
        let took = doc.analysis_took;
        let incremental = doc.reparsed_incrementally();
        let reparse = if incremental { "incremental" } else { "fresh" };
        let edited = began.elapsed();
        let evicted = st.touch(&uri);
        if let Some(b) = st.bench.get_mut(&uri) {
            b.diagnostics.clear();
        }
        st.compile.remove(&uri);
        drop(st);
        self.compiling.schedule(&self.state, &self.publish_tx, &self.client, &uri, false);
        // The analysis runs off the state lock. Where the last one of this
        // document was quick and no other is under way, it runs here and now:
        // a keystroke then wakes no other thread on its way to the client (on
        // a virtual machine a thread woken on another core can be late by
        // more than the analysis takes), and a request waits for about as
        // long (more, once, for an edit the incremental analysis refuses and
        // analyses afresh, such as a `*` import typed; the next edit's
        // analysis then goes to the analysis thread). Otherwise it runs on the analysis thread, so that hovers and
        // the next edit never wait for it; there one whose version a newer
        // edit replaced before its turn is skipped. A result for an outdated
        // version is dropped either way.
        let lane = &crate::lsp::background::ANALYSIS;
        let here = runs_here(took, incremental, lane.is_idle());
        let state = self.state.clone();
        let publish_tx = self.publish_tx.clone();
        let analyse = move || {
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
                let replaced = st.docs.get_mut(&uri).and_then(|doc| {
                    let replaced = doc.install_replacing(job.version, result)?;
                    doc.analysis_took = Some(analysed - started);
                    Some(replaced)
                });
                if replaced.is_some() {
                    publish_tx.publish(st, &uri);
                }
                replaced
            };
            tracing::debug!(
                "version {}: edit and {reparse} reparse {edited:?}, analysis {:?} {} (started after {started:?}), ready to publish after {:?}",
                job.version,
                analysed - started,
                if here { "here" } else { "on its thread" },
                began.elapsed()
            );
            // What the analysis replaced, and the trees this edit evicted, are
            // freed off the lock, after the publication.
            drop(replaced);
            drop(evicted);
        };
        if here {
            // As on the analysis thread, a panic takes neither the thread nor what follows.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(analyse)).is_err() {
                tracing::error!("an analysis on the serving thread panicked");
            }
        } else {
            lane.submit(analyse);
        }
    }
}

/// An analysis that took at most this long the last time runs on the thread
/// that serves the protocol: 3 ms, about what a keystroke's analysis takes in
/// a 5,000-line file (docs/performance.md) and well under what a request may
/// wait (#36: p99 20 ms); `KERNEL_LSP_ANALYSE_HERE_MS` sets another (0: every
/// analysis on the analysis thread).
fn here_below() -> std::time::Duration {
    static BELOW: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    *BELOW.get_or_init(|| {
        let ms = std::env::var("KERNEL_LSP_ANALYSE_HERE_MS").ok().and_then(|v| v.trim().parse::<f64>().ok());
        std::time::Duration::from_secs_f64(ms.filter(|m| m.is_finite() && *m >= 0.0).unwrap_or(3.0) / 1000.0)
    })
}

/// Whether an edit's analysis runs on the serving thread: where the last one
/// of its document (`took`) was quick, the edit was reparsed incrementally
/// (a paste or a rewrite of the file parses afresh and may change much), and
/// the analysis thread is idle (an analysis running there is of an older
/// version, and would compete).
fn runs_here(took: Option<std::time::Duration>, incremental: bool, lane_idle: bool) -> bool {
    lane_idle && incremental && took.is_some_and(|t| t < here_below())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_a_quick_analysis_with_the_thread_idle_runs_here() {
        assert!(runs_here(Some(Duration::from_micros(900)), true, true));
        assert!(!runs_here(Some(Duration::from_micros(900)), true, false), "another analysis is under way");
        assert!(!runs_here(Some(Duration::from_micros(900)), false, true), "parsed afresh");
        assert!(!runs_here(Some(Duration::from_millis(40)), true, true), "the last one took long");
        assert!(!runs_here(None, true, true), "never analysed since it was opened");
    }
}
