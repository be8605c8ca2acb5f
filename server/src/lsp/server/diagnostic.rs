//! `textDocument/diagnostic` (reads the analysis): the pull model, once the analysis of the current text has landed.

use super::*;

impl Server {
    pub(super) async fn on_diagnostic(
        &self,
        params: DocumentDiagnosticParams,
    ) -> Result<DocumentDiagnosticReportResult> {
        let uri = &params.text_document.uri;
        self.analyzed(uri).await;
        let st = self.state();
        let result_id = st.docs.get(uri).map(|d| d.version.to_string());
        let items = st.lsp_diagnostics(uri);
        Ok(DocumentDiagnosticReportResult::Report(DocumentDiagnosticReport::Full(
            RelatedFullDocumentDiagnosticReport {
                related_documents: None,
                full_document_diagnostic_report: FullDocumentDiagnosticReport { result_id, items },
            },
        )))
    }
}
