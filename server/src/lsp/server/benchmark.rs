//! The `kernel-lsp.benchmark` command: a spawned benchmark under the shared progress-and-cancel (`with_progress`), its result and error diagnostic kept per document.

use super::*;

impl Server {
    pub(super) async fn benchmark(&self, args: &[Value], token: Option<ProgressToken>) -> Result<Option<Value>> {
        let uri = arg_uri(args, 0)?;
        let path = file_path(&uri).ok_or_else(|| invalid_params("benchmark needs a file: URI"))?;
        let (settings, reference, caps) = {
            let mut st = self.state();
            let (settings, reference) = match st.docs.get(&uri) {
                Some(doc) => (doc.settings.clone(), doc.result.reference.clone()),
                None => (st.settings_for(&uri).0, None),
            };
            let caps = st.caps;
            let entry = st.bench.entry(uri.clone()).or_default();
            if entry.running {
                return Err(Error {
                    code: REQUEST_FAILED,
                    message: "a benchmark of this file is already running".into(),
                    data: None,
                });
            }
            entry.running = true;
            (settings, reference, caps)
        };
        let reference = reference.map(|r| path.parent().map(|d| d.join(&r)).unwrap_or_else(|| r.into()));
        let request = BenchRequest {
            candidate: path.clone(),
            reference,
            settings: (*settings).clone(),
            python: None,
            overrides: Vec::new(),
            cpu: args.get(1).and_then(|o| o.get("cpu")).and_then(Value::as_bool).unwrap_or(false),
            reduced: args.get(1).and_then(|o| o.get("reduced")).and_then(Value::as_bool).unwrap_or(false),
            full_size: args.get(1).and_then(|o| o.get("full_size")).and_then(Value::as_bool).unwrap_or(false),
            timeout: None,
            record_history: true,
            origin: None,
            sandbox: None,
        };
        let (progress_tx, progress_rx) = mpsc::unbounded_channel::<String>();
        let task = tokio::spawn(bench::run(request, move |m| {
            let _ = progress_tx.send(m);
        }));
        let run = Run {
            uri: &uri,
            token,
            caps,
            what: "benchmark",
            title: "Benchmark vs reference".to_string(),
            message: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            shown_in_views: true,
            on_drop: |st, uri| {
                if let Some(b) = st.bench.get_mut(uri) {
                    b.running = false;
                }
            },
        };
        let outcome = self.with_progress(run, task, progress_rx, bench_view::lens_title).await;
        let result = match outcome {
            Err(_) => {
                // The lens and hints leave "Benchmarking…" at once, not at the next edit.
                self.views_changed(caps);
                return Err(Error {
                    code: ErrorCode::RequestCancelled,
                    message: "benchmark cancelled".into(),
                    data: None,
                });
            }
            Ok(Err(e)) => {
                self.client.show_message(MessageType::ERROR, format!("kernel-lsp benchmark: {e}")).await;
                self.views_changed(caps);
                // `shown`: the message is on screen already; a client shows it once.
                return Err(Error {
                    code: REQUEST_FAILED,
                    message: e.to_string().into(),
                    data: Some(json!({"shown": true})),
                });
            }
            Ok(Ok(r)) => r,
        };
        {
            let mut st = self.state();
            let (diagnostics, version) = match (st.docs.get(&uri), &result.error) {
                (Some(doc), Some(e)) => {
                    let fallback = doc
                        .result
                        .classes
                        .iter()
                        .find(|c| c.name == "ModelNew")
                        .map(|c| c.range)
                        .unwrap_or(TextRange::new(0, doc.line_text(0).len()));
                    let d =
                        bench_view::error_diagnostic(e, &path, doc.text(), doc.line_index(), fallback, &doc.settings);
                    (vec![d], doc.version)
                }
                (Some(doc), None) => (Vec::new(), doc.version),
                (None, _) => (Vec::new(), 0),
            };
            st.bench
                .insert(uri.clone(), BenchState { running: false, result: Some(result.clone()), version, diagnostics });
        }
        self.diagnostics_changed(std::slice::from_ref(&uri)).await;
        serde_json::to_value(&result).map(Some).map_err(|e| Error::internal_error().tap_message(e.to_string()))
    }
}
