//! `workspace/didChangeConfiguration` (changes state): the editor settings, pulled when the client sends none.

use super::*;

impl Server {
    pub(super) async fn on_did_change_configuration(&self, params: DidChangeConfigurationParams) {
        let mut value = params.settings;
        let wants_pull = value.is_null() || value.as_object().is_some_and(|m| m.is_empty());
        if wants_pull && self.state().caps.configuration {
            let item = ConfigurationItem { scope_uri: None, section: Some("kernel-lsp".to_string()) };
            if let Ok(mut items) = self.client.configuration(vec![item]).await {
                value = items.pop().unwrap_or(Value::Null);
            }
        }
        self.apply_editor_settings(&value).await;
    }
}
