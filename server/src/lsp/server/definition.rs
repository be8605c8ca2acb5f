//! `textDocument/definition` (reads the document's syntax): a kernel, jit
//! helper, host function, class, kernel parameter (also from `BLOCK=...` at a
//! launch) or module constant, defined in the same file. Also what the other
//! navigation handlers share: the document's syntax taken under the lock, and
//! the work run off the async threads.

use crate::lsp::convert;
use crate::lsp::navigation::{self, Source};
use crate::model::FileModel;

use super::*;

impl Server {
    /// An open document's syntax and the negotiated encoding, taken under the state lock.
    pub(super) fn nav_source(&self, uri: &Uri) -> Option<(Source, Encoding)> {
        let st = self.state();
        st.docs.get(uri).map(|d| (d.syntax(), st.encoding))
    }

    pub(super) async fn on_goto_definition(
        &self,
        params: GotoDefinitionParams,
    ) -> Result<Option<GotoDefinitionResponse>> {
        let p = params.text_document_position_params;
        let Some((src, enc)) = self.nav_source(&p.text_document.uri) else { return Ok(None) };
        let range = off_thread(move || {
            let tree = src.tree();
            let m = FileModel::build(&src.text, &tree);
            let node = navigation::identifier_at(&tree, nav_offset(&src, p.position, enc))?;
            let target = navigation::resolve(&m, node)?;
            Some(convert::range(&src.text, &src.line_index, navigation::definition(&m, &target), enc))
        })
        .await;
        Ok(range.map(|range| GotoDefinitionResponse::Scalar(Location { uri: p.text_document.uri, range })))
    }
}

/// The byte offset of an LSP position in `src` (clamped).
pub(super) fn nav_offset(src: &Source, position: Position, enc: Encoding) -> usize {
    src.line_index.offset(&src.text, position.line as usize, position.character as usize, enc.unit())
}

/// Runs navigation work on the blocking pool: a parse and a model of a large
/// file take milliseconds the async threads must not wait for. A panic is an
/// empty answer, never a dead server.
pub(super) async fn off_thread<T: Send + 'static>(f: impl FnOnce() -> Option<T> + Send + 'static) -> Option<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(v) => v,
        Err(e) => {
            warn!("navigation failed: {e}");
            None
        }
    }
}
