//! The `kernel-lsp.rewrite` command: a spawned LLM rewrite under the shared progress-and-cancel (`with_progress`), offered as an edit only against the text it started from.

use super::*;

impl Server {
    /// `kernel-lsp.rewrite [uri, action, range?, options?]`: runs the LLM
    /// pipeline on the file as saved, as a cancellable task with progress;
    /// offers the verified winner through `workspace/applyEdit` with a change
    /// annotation that needs confirmation.
    pub(super) async fn rewrite_command(&self, args: &[Value], token: Option<ProgressToken>) -> Result<Option<Value>> {
        let uri = arg_uri(args, 0)?;
        let path = file_path(&uri).ok_or_else(|| invalid_params("rewrite needs a file: URI"))?;
        let action = rewrite::parse_action(args.get(1)).map_err(invalid_params)?;
        let options = rewrite::parse_options(args.get(3)).map_err(invalid_params)?;
        let failed = |message: String| Error { code: REQUEST_FAILED, message: message.into(), data: None };
        let on_disk =
            std::fs::read_to_string(&path).map_err(|e| failed(format!("cannot read {}: {e}", path.display())))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let (settings, version, caps, encoding) = {
            let mut st = self.state();
            let (settings, version) = match st.docs.get(&uri) {
                Some(doc) => {
                    if doc.text() != on_disk {
                        return Err(failed(format!(
                            "{name} has unsaved changes: save it first (the rewrite starts from the file on disk)"
                        )));
                    }
                    (doc.settings.clone(), Some(doc.version))
                }
                None => (st.settings_for(&uri).0, None),
            };
            if !st.rewrites.insert(uri.clone()) {
                return Err(failed("a rewrite of this file is already running".into()));
            }
            (settings, version, st.caps, st.encoding)
        };
        let mut request = crate::llm::RewriteRequest::new(path.clone(), action, (*settings).clone());
        request.text = Some(on_disk.clone());
        request.cpu = options.cpu;
        request.overrides = options.overrides;
        request.candidates = options.candidates;
        request.repairs = options.repairs;
        request.bench_timeout = options.bench_timeout;
        let (progress_tx, progress_rx) = mpsc::unbounded_channel::<String>();
        let task = tokio::spawn(crate::llm::rewrite(request, move |ev| {
            let _ = progress_tx.send(rewrite::stage_message(&ev));
        }));
        let run = Run {
            uri: &uri,
            token,
            caps,
            what: "rewrite",
            title: format!("{} with LLM", action.title()),
            message: name.clone(),
            shown_in_views: false,
            on_drop: |st, uri| {
                st.rewrites.remove(uri);
            },
        };
        let outcome =
            self.with_progress(run, task, progress_rx, |o: &crate::llm::RewriteOutcome| o.title.clone()).await;
        let outcome = match outcome {
            Err(_) => {
                return Err(Error {
                    code: ErrorCode::RequestCancelled,
                    message: "rewrite cancelled".into(),
                    data: None,
                })
            }
            Ok(Err(e)) => {
                // LlmError texts never hold the key (the client scrubs it).
                warn!("rewrite of {} failed: {e}", path.display());
                self.client.show_message(MessageType::ERROR, format!("kernel-lsp rewrite: {e}")).await;
                // `shown`: the message is on screen already; a client shows it once.
                return Err(Error { data: Some(json!({"shown": true})), ..failed(e.to_string()) });
            }
            Ok(Ok(o)) => o,
        };
        let summary = rewrite::candidates_summary(&outcome);
        let Some(new_text) = outcome.new_text.clone() else {
            let message = format!("{}\n{summary}", outcome.title);
            self.client.show_message(MessageType::WARNING, format!("kernel-lsp rewrite: {message}")).await;
            return Ok(Some(rewrite::result_value(&outcome, None, None, &message)));
        };
        // Offer the edit only against the text the run started from.
        let unchanged = {
            let st = self.state();
            match (st.docs.get(&uri), version) {
                (Some(doc), Some(v)) => doc.version == v && doc.text() == on_disk,
                (None, None) => std::fs::read_to_string(&path).is_ok_and(|t| t == on_disk),
                _ => false,
            }
        };
        if !unchanged {
            let diff = outcome.diff.clone().unwrap_or_default();
            let message = format!(
                "{}: not applied, {name} changed during the rewrite. The verified diff:\n{diff}",
                outcome.title
            );
            info!("rewrite of {} not offered, the file changed:\n{diff}", path.display());
            self.client.show_message(MessageType::WARNING, format!("kernel-lsp rewrite: {message}")).await;
            return Ok(Some(rewrite::result_value(&outcome, None, Some(false), &message)));
        }
        let edit = rewrite::confirmed_edit(&uri, version, &on_disk, &new_text, encoding, &outcome.title, &summary);
        if !caps.apply_edit {
            // The client applies what the command returns (through its own preview).
            return Ok(Some(rewrite::result_value(&outcome, Some(&edit), None, &outcome.title)));
        }
        // The user reviews the preview before the client answers: wait as long as a person may.
        let response =
            tokio::time::timeout(std::time::Duration::from_secs(30 * 60), self.client.apply_edit(edit)).await;
        let applied = match response {
            Ok(Ok(r)) => r.applied,
            Ok(Err(e)) => {
                warn!("workspace/applyEdit failed: {e}");
                false
            }
            Err(_) => false,
        };
        let message = format!("{} — {}", outcome.title, if applied { "applied" } else { "not applied" });
        // The edit went out as workspace/applyEdit already: it is not returned
        // again, or the client would preview it a second time.
        Ok(Some(rewrite::result_value(&outcome, None, Some(applied), &message)))
    }
}
