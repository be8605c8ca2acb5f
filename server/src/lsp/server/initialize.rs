//! `initialize`: what the client can do, the encoding, the workspace folders and editor settings; what the server offers.

use super::*;

impl Server {
    pub(super) async fn on_initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        let caps = ClientCaps::from(&params.capabilities);
        let offered = params.capabilities.general.as_ref().and_then(|g| g.position_encodings.as_deref());
        let encoding = Encoding::negotiate(offered);
        let mut folders: Vec<_> = params.workspace_folders.iter().flatten().filter_map(|f| file_path(&f.uri)).collect();
        #[allow(deprecated)]
        if folders.is_empty() {
            folders.extend(params.root_uri.as_ref().and_then(file_path));
        }
        {
            let mut st = self.state();
            st.caps = caps;
            st.encoding = encoding;
            crate::bench::history::set_workspace_roots(folders.clone());
            st.folders = folders;
            if let Some(options) = &params.initialization_options {
                match crate::lsp::settings::editor_settings(options) {
                    Ok(v) => st.editor = v,
                    Err(e) => {
                        *self.init_error.lock().unwrap_or_else(|p| p.into_inner()) =
                            Some(format!("kernel-lsp: invalid initialization options, using defaults: {e}"))
                    }
                }
            }
        }
        info!(?encoding, pull = caps.pull_diagnostics, "initialized");
        let code_action_kinds = vec![
            CodeActionKind::QUICKFIX,
            CodeActionKind::from(EXPLAIN_KIND),
            CodeActionKind::from(SUPPRESS_KIND),
            CodeActionKind::SOURCE_FIX_ALL,
            CodeActionKind::from(FIX_ALL_KIND),
            CodeActionKind::REFACTOR_REWRITE,
        ];
        let capabilities = ServerCapabilities {
            position_encoding: Some(encoding.kind()),
            text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                will_save: None,
                will_save_wait_until: None,
                save: Some(TextDocumentSyncSaveOptions::Supported(true)),
            })),
            hover_provider: Some(HoverProviderCapability::Simple(true)),
            completion_provider: Some(CompletionOptions {
                trigger_characters: Some(vec![".".to_string()]),
                ..Default::default()
            }),
            signature_help_provider: Some(SignatureHelpOptions {
                trigger_characters: Some(vec!["(".to_string(), ",".to_string()]),
                retrigger_characters: Some(vec!["=".to_string()]),
                work_done_progress_options: Default::default(),
            }),
            code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
                code_action_kinds: Some(code_action_kinds),
                work_done_progress_options: Default::default(),
                resolve_provider: Some(true),
            })),
            code_lens_provider: Some(CodeLensOptions { resolve_provider: Some(false) }),
            inlay_hint_provider: Some(OneOf::Left(true)),
            definition_provider: Some(OneOf::Left(true)),
            references_provider: Some(OneOf::Left(true)),
            document_symbol_provider: Some(OneOf::Left(true)),
            workspace_symbol_provider: Some(OneOf::Left(true)),
            call_hierarchy_provider: Some(CallHierarchyServerCapability::Simple(true)),
            execute_command_provider: Some(ExecuteCommandOptions {
                commands: COMMANDS.iter().map(|c| c.to_string()).collect(),
                work_done_progress_options: WorkDoneProgressOptions { work_done_progress: Some(true) },
            }),
            diagnostic_provider: caps.pull_diagnostics.then(|| {
                DiagnosticServerCapabilities::Options(DiagnosticOptions {
                    identifier: Some("kernel-lsp".to_string()),
                    inter_file_dependencies: false,
                    workspace_diagnostics: false,
                    work_done_progress_options: Default::default(),
                })
            }),
            workspace: Some(WorkspaceServerCapabilities {
                workspace_folders: Some(WorkspaceFoldersServerCapabilities {
                    supported: Some(true),
                    change_notifications: Some(OneOf::Left(true)),
                }),
                file_operations: None,
            }),
            ..Default::default()
        };
        Ok(InitializeResult {
            capabilities,
            server_info: Some(ServerInfo {
                name: "kernel-lsp".to_string(),
                version: Some(env!("CARGO_PKG_VERSION").to_string()),
            }),
            offset_encoding: None,
        })
    }
}
