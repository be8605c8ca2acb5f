//! `textDocument/references` (reads the document's syntax): every place in
//! the file a kernel, helper, host function, class, kernel parameter or module
//! constant is named, the definition included when the client asks.

use crate::lsp::convert;
use crate::lsp::navigation;
use crate::model::FileModel;

use super::definition::{nav_offset, off_thread};
use super::*;

impl Server {
    pub(super) async fn on_references(&self, params: ReferenceParams) -> Result<Option<Vec<Location>>> {
        let p = params.text_document_position;
        let with_definition = params.context.include_declaration;
        let Some((src, enc)) = self.nav_source(&p.text_document.uri) else { return Ok(None) };
        let uri = p.text_document.uri;
        let found = off_thread(move || {
            let tree = src.tree();
            let m = FileModel::build(&src.text, &tree);
            let node = navigation::identifier_at(&tree, nav_offset(&src, p.position, enc))?;
            let target = navigation::resolve(&m, node)?;
            let ranges = navigation::references(&m, &target, with_definition);
            Some(ranges.into_iter().map(|r| convert::range(&src.text, &src.line_index, r, enc)).collect::<Vec<_>>())
        })
        .await;
        Ok(found.map(|ranges| ranges.into_iter().map(|range| Location { uri: uri.clone(), range }).collect()))
    }
}
