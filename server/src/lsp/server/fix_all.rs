//! The `kernel-lsp.fixAll` command (reads the analysis): every safe fix of the document as one edit.

use super::*;

impl Server {
    pub(super) async fn fix_all_command(&self, args: &[Value]) -> Result<Option<Value>> {
        let uri = arg_uri(args, 0)?;
        self.analyzed(&uri).await;
        let (edits, version, caps) = {
            let st = self.state();
            let doc = st.docs.get(&uri).ok_or_else(|| invalid_params(format!("{} is not open", uri.as_str())))?;
            (actions::fix_all(doc, st.encoding), doc.version, st.caps)
        };
        if edits.is_empty() {
            return Ok(Some(Value::Bool(false)));
        }
        if !caps.apply_edit {
            return Err(Error {
                code: REQUEST_FAILED,
                message: "the client cannot apply workspace edits; use the source.fixAll.kernel-lsp code action".into(),
                data: None,
            });
        }
        let edit = if caps.document_changes {
            WorkspaceEdit {
                document_changes: Some(DocumentChanges::Edits(vec![TextDocumentEdit {
                    text_document: OptionalVersionedTextDocumentIdentifier { uri: uri.clone(), version: Some(version) },
                    edits: edits.into_iter().map(OneOf::Left).collect(),
                }])),
                ..Default::default()
            }
        } else {
            actions::edit(&uri, edits)
        };
        let response = tokio::time::timeout(CLIENT_TIMEOUT, self.client.apply_edit(edit)).await.map_err(|_| {
            Error { code: REQUEST_FAILED, message: "the client did not answer workspace/applyEdit".into(), data: None }
        })??;
        Ok(Some(Value::Bool(response.applied)))
    }
}
