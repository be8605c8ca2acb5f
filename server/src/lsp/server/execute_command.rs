//! `workspace/executeCommand`: dispatches to the commands (benchmark, fix-all, history, timeline, rewrite).

use super::*;

impl Server {
    pub(super) async fn on_execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let args = &params.arguments;
        match params.command.as_str() {
            "kernel-lsp.benchmark" => {
                self.benchmark(args, params.work_done_progress_params.work_done_token.clone()).await
            }
            "kernel-lsp.rewrite" => {
                self.rewrite_command(args, params.work_done_progress_params.work_done_token.clone()).await
            }
            "kernel-lsp.history" => self.history_command(args),
            "kernel-lsp.timeline" => self.timeline_command(args),
            "kernel-lsp.explain" => {
                let code = args
                    .first()
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid_params("argument 0 must be a rule code"))?;
                hover::rule_doc(code)
                    .map(|d| Some(Value::String(d)))
                    .ok_or_else(|| invalid_params(format!("unknown rule {code:?}")))
            }
            "kernel-lsp.fixAll" => self.fix_all_command(args).await,
            other => Err(invalid_params(format!("unknown command {other:?}; known: {}", COMMANDS.join(", ")))),
        }
    }
}
