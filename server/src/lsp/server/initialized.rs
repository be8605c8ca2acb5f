//! `initialized`: shows an error from the initialization options, watches
//! the configuration files and reads the embedded Triton API in the background.

use super::*;

impl Server {
    pub(super) async fn on_initialized(&self) {
        // The embedded Triton API (parsed once, ~50 ms) is read now, off the
        // runtime, rather than by the first hover or completion.
        crate::lsp::background::BACKGROUND.submit(|| drop(crate::model::triton_api::TritonApi::embedded()));
        let error = self.init_error.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(e) = error {
            self.client.show_message(MessageType::ERROR, e).await;
        }
        let caps = self.state().caps;
        if caps.watched_files_dynamic {
            let watchers = ["**/kernel-lsp.toml", "**/pyproject.toml"]
                .iter()
                .map(|g| FileSystemWatcher { glob_pattern: GlobPattern::String(g.to_string()), kind: None })
                .collect();
            let options = serde_json::to_value(DidChangeWatchedFilesRegistrationOptions { watchers }).ok();
            let registration = Registration {
                id: "kernel-lsp/config-files".to_string(),
                method: "workspace/didChangeWatchedFiles".to_string(),
                register_options: options,
            };
            if let Err(e) = self.client.register_capability(vec![registration]).await {
                warn!("could not watch configuration files: {e}");
            }
        }
    }
}
