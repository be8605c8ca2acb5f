//! `textDocument/documentSymbol` (reads the document's syntax): kernels and
//! jit helpers with their parameters, classes with their methods, top-level
//! functions and module constants, nested, in document order.

use crate::lsp::convert;
use crate::lsp::navigation::{self, Symbol};
use crate::model::FileModel;
use crate::text::LineIndex;

use super::definition::off_thread;
use super::*;

/// The LSP kind of a navigation symbol.
pub(super) fn symbol_kind(kind: navigation::SymbolKind) -> SymbolKind {
    use navigation::SymbolKind as K;
    match kind {
        K::Kernel | K::Helper | K::Function => SymbolKind::FUNCTION,
        K::Method => SymbolKind::METHOD,
        K::Class => SymbolKind::CLASS,
        K::Constant | K::ConstexprParameter => SymbolKind::CONSTANT,
        K::Parameter => SymbolKind::VARIABLE,
    }
}

fn to_lsp(text: &str, index: &LineIndex, s: Symbol, enc: Encoding) -> DocumentSymbol {
    #[allow(deprecated)]
    DocumentSymbol {
        name: s.name,
        detail: (!s.detail.is_empty()).then_some(s.detail),
        kind: symbol_kind(s.kind),
        tags: None,
        deprecated: None,
        range: convert::range(text, index, s.range, enc),
        selection_range: convert::range(text, index, s.selection, enc),
        children: (!s.children.is_empty())
            .then(|| s.children.into_iter().map(|c| to_lsp(text, index, c, enc)).collect()),
    }
}

impl Server {
    pub(super) async fn on_document_symbol(
        &self,
        params: DocumentSymbolParams,
    ) -> Result<Option<DocumentSymbolResponse>> {
        let Some((src, enc)) = self.nav_source(&params.text_document.uri) else { return Ok(None) };
        let symbols = off_thread(move || {
            let tree = src.tree();
            let m = FileModel::build(&src.text, &tree);
            let symbols = navigation::document_symbols(&m);
            Some(symbols.into_iter().map(|s| to_lsp(&src.text, &src.line_index, s, enc)).collect::<Vec<_>>())
        })
        .await;
        Ok(symbols.map(DocumentSymbolResponse::Nested))
    }
}
